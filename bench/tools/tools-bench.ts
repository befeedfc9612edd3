/**
 * The tools benchmark (issue 38): how many iterations, and how much time, until the first `improved`,
 * for one scripted sequence of ideas tried with and without the harness's tools (check, screen). Real
 * parts throughout: the toy target's repository, the loop, the sandbox, the MCP endpoint, the verifier;
 * only the agent is a script (bench/tools/idea-agent.mjs), so the two arms differ in the tools alone.
 *
 * Without the tools the agent commits idea N at iteration N; with them it checks and screens the ideas
 * on its tree and commits the first that screens faster. The ideas, in the order an agent might
 * reach them: a faster kernel with the wrong factor (invalid), a slower one (regressed), a comment
 * (no-op), a change that is not faster (no-change), then the real gain (improved).
 *
 * Run: npm run bench:tools [-- --repeat 2]. Prints a table; the README quotes it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runLoop } from '../../src/loop/drivers/run.js';
import { memoryLogger } from '../../src/util/log.js';
import { REPO_ROOT } from '../../tests/helpers/paths.js';
import { makeToyRepo, TOY_CONFIG } from '../../tests/loop/toy-repo.js';

const IDEAS = [
  {
    name: 'fused multiply (wrong factor)',
    edits: [
      { from: 'DELAY_S = 0.02', to: 'DELAY_S = 0.008' },
      { from: 'return [2 * x for x in xs]', to: 'return [3 * x for x in xs]' },
    ],
  },
  { name: 'longer tiles (slower)', edits: [{ from: 'DELAY_S = 0.02', to: 'DELAY_S = 0.03' }] },
  {
    name: 'a clearer docstring',
    edits: [{ from: 'def compute(xs):', to: 'def compute(xs):\n    """Doubles."""' }],
  },
  { name: 'reordered loop (same speed)', edits: [{ from: 'DELAY_S = 0.02', to: 'DELAY_S = 0.0199' }] },
  { name: 'shorter wait (faster)', edits: [{ from: 'DELAY_S = 0.02', to: 'DELAY_S = 0.008' }] },
];

interface ArmResult {
  arm: 'without tools' | 'with tools';
  verdicts: string[];
  firstImproved: number | null;
  minutesToFirst: number | null;
  /** Draft PRs opened up to the first improved, that one included. */
  prs: number;
  toolCalls: number;
  toolSeconds: number;
}

function repeatArg(): number {
  const i = process.argv.indexOf('--repeat');
  const n = i >= 0 ? Number(process.argv[i + 1]) : 1;
  if (!Number.isInteger(n) || n < 1) throw new Error('--repeat takes a positive integer');
  return n;
}

async function runArm(dir: string, mode: 'blind' | 'tools'): Promise<ArmResult> {
  const repo = join(dir, mode);
  const ideas = join(dir, 'ideas.json');
  writeFileSync(ideas, JSON.stringify(IDEAS));
  const agent = [
    'agent:',
    '  kind: command',
    '  timeout_minutes: 5',
    `  tools: {enabled: ${mode === 'tools'}}`,
    '  command:',
    `    command: ["${process.execPath}", "${join(REPO_ROOT, 'bench', 'tools', 'idea-agent.mjs')}", "${ideas}", "${mode}"]`,
    '',
  ].join('\n');
  makeToyRepo(repo, [], TOY_CONFIG.replace('agent:\n  kind: replay\n  replay: {dir: replay}\n', agent));
  const started = Date.now();
  const r = await runLoop({
    configFile: join(repo, 'hillclimb.yml'),
    logger: memoryLogger(),
    overrides: { 'loop.iterations': IDEAS.length },
  });
  const verdicts = r.iterations.map((it) => it.verdict ?? 'none');
  const first = verdicts.indexOf('improved');
  const upTo = first < 0 ? r.iterations : r.iterations.slice(0, first + 1);
  const finished = upTo.at(-1)?.evidence.finishedAt;
  const calls = upTo.flatMap((it) => it.evidence.tools?.calls ?? []);
  return {
    arm: mode === 'tools' ? 'with tools' : 'without tools',
    verdicts,
    firstImproved: first < 0 ? null : first + 1,
    minutesToFirst: first < 0 || !finished ? null : (Date.parse(finished) - started) / 60_000,
    prs: upTo.filter((it) => it.evidence.publish?.prNumber !== undefined).length,
    toolCalls: calls.length,
    toolSeconds: calls.reduce((s, c) => s + c.costMs, 0) / 1000,
  };
}

const python = execFileSync('sh', ['-c', 'command -v python3'], { encoding: 'utf8' }).trim();
process.env.HILLCLIMB_PYTHON ??= python;
const rows: ArmResult[] = [];
for (let rep = 0; rep < repeatArg(); rep++) {
  for (const mode of ['blind', 'tools'] as const) {
    const dir = mkdtempSync(join(tmpdir(), 'hc-bench-tools-'));
    try {
      rows.push(await runArm(dir, mode));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
console.log(`ideas, in order: ${IDEAS.map((i, n) => `${n + 1}. ${i.name}`).join('; ')}\n`);
console.log(
  '| arm | verdicts by iteration | first improved | minutes to it | PRs to it | tool calls | tool machine-s |',
);
console.log('|---|---|---|---|---|---|---|');
for (const r of rows) {
  console.log(
    `| ${r.arm} | ${r.verdicts.join(', ')} | ${r.firstImproved ?? 'none'} | ${r.minutesToFirst?.toFixed(2) ?? '—'} | ${r.prs} | ${r.toolCalls} | ${r.toolSeconds.toFixed(1)} |`,
  );
}
