import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listLocalPulls, showLocalPull } from '../../src/forge/local-reader.js';
import { type LoopResult, runLoop } from '../../src/loop/drivers/run.js';
import { readHistory } from '../../src/loop/state/history.js';
import { Journal, runProgress } from '../../src/loop/state/journal.js';
import { evidenceLoader } from '../../src/report/log-evidence.js';
import { lintLog } from '../../src/report/log-lint.js';
import { memoryLogger } from '../../src/util/log.js';
import { tempDir } from '../helpers/paths.js';
import { gitIn, makeToyRepo, STANDARD_PATCHES, systemPython } from './toy-repo.js';

const noSleep = async () => undefined;

describe('hillclimb loop on a toy target (replay agent, local compute, forge and store)', () => {
  const t = tempDir('hc-loop-');
  const repo = join(t.dir, 'repo');
  let base: string;
  let result: LoopResult;
  const lines: string[] = [];

  beforeAll(async () => {
    process.env.HILLCLIMB_PYTHON = systemPython();
    base = makeToyRepo(repo);
    result = await runLoop({
      configFile: join(repo, 'hillclimb.yml'),
      logger: memoryLogger(),
      progress: (l) => lines.push(l),
      sleep: noSleep,
    });
  }, 240_000);
  afterAll(t.cleanup);

  it('reaches the verdict each replayed patch deserves', () => {
    expect(result.endReason).toBe('completed');
    expect(result.iterations.map((i) => i.verdict)).toEqual(['improved', 'invalid', 'no-change', 'invalid']);
    const [, wrongMath, , protectedEdit] = result.iterations;
    expect(wrongMath!.reason).toContain('CPU correctness failed');
    expect(wrongMath!.evidence.stoppedAt).toBe('cpu-gate');
    // The suite and the verifier run side by side, and the first to fail the candidate stops the other
    // (gates.ts): which one speaks depends on the machine's load; either way one of them must have.
    const cpu = wrongMath!.evidence.gates.cpu!;
    const suiteFailed = cpu.junit?.tests === 3 && cpu.junit.failed === 2 && cpu.junit.passed === 1;
    const verifierFailed =
      cpu.verifier?.passed === false &&
      wrongMath!.evidence.verdictReasons.some((r) =>
        r.startsWith('the test suite was stopped once the verifier'),
      );
    const what = JSON.stringify({ junit: cpu.junit, reasons: wrongMath!.evidence.verdictReasons });
    expect(suiteFailed || verifierFailed, what).toBe(true);
    expect(protectedEdit!.reason).toContain('harness/check.py');
    expect(protectedEdit!.evidence.stoppedAt).toBe('guard');
    expect(protectedEdit!.evidence.gates.cpu).toBeUndefined();
  });

  it('promotes the champion only on improved, and later iterations start from it', () => {
    const [first, second, third] = result.iterations;
    expect(first!.evidence.base.commit).toBe(base);
    const champion = first!.evidence.candidate!.logCommit!;
    expect(result.champion).toEqual({ commit: champion, iteration: 1 });
    expect(second!.evidence.base.commit).toBe(champion);
    expect(third!.evidence.base.commit).toBe(champion);
    expect(third!.evidence.base.branch).toBe(first!.evidence.candidate!.branch);
  });

  it('measures both arms in paired rounds and records the comparison', () => {
    const m = result.iterations[0]!.evidence.measurement!;
    expect(m.runs.length).toBeGreaterThanOrEqual(10);
    const arms = m.runs.map((r) => r.arm);
    expect(arms.slice(0, 2).sort()).toEqual(['A', 'B']);
    expect(m.comparison?.verdict).toBe('improved');
    expect(m.comparison!.ratio!).toBeGreaterThan(1.5);
  });

  it('profiles the candidate and diffs it against the cached champion profile', () => {
    const p = result.iterations[0]!.evidence.profile!;
    expect(p.status).toBe('done');
    expect(p.summary?.customCalls.map((c) => c.name)).toContain('toy_kernel');
    expect(p.diff?.customCalls[0]?.name).toBe('toy_kernel');
    expect(p.diff!.customCalls[0]!.delta).toBeLessThan(0);
    expect(result.iterations[2]!.evidence.profile?.championCached).toBe(true);
  });

  it('leaves a PR record with a sticky comment per iteration that committed, labelled by verdict', () => {
    const pulls = listLocalPulls(result.stateDir);
    // Iteration 4 touched a protected path: the guard refused it, so it was never pushed.
    expect(pulls).toHaveLength(3);
    const refused = result.iterations[3]!.evidence;
    expect(refused.verdict).toBe('invalid');
    expect(refused.publish?.branch).toBeUndefined();
    expect(refused.publish?.warnings.join('\n')).toMatch(/the guard refused the change: not pushed/);
    const byBranch = new Map(pulls.map((p) => [p.branch, p]));
    for (const it of result.iterations.slice(0, 3)) {
      const pr = byBranch.get(it.evidence.candidate!.branch)!;
      expect(pr.labels).toContain(`hillclimb:${it.verdict}`);
      expect(pr.draft).toBe(true);
      const view = showLocalPull(result.stateDir, pr.number)!;
      expect(view.comments).toHaveLength(1);
      expect(it.evidence.publish?.prNumber).toBe(pr.number);
    }
    const first = byBranch.get(result.iterations[0]!.evidence.candidate!.branch)!;
    expect(first.base).toBe('main');
    const second = byBranch.get(result.iterations[1]!.evidence.candidate!.branch)!;
    expect(second.base).toBe(result.iterations[0]!.evidence.candidate!.branch);
  });

  it('appends one history row per iteration and commits a harness-written log entry on each branch', () => {
    const rows = readHistory(result.stateDir, 'toy');
    expect(rows.map((r) => r.verdict)).toEqual(['improved', 'invalid', 'no-change', 'invalid']);
    expect(rows[0]!.championAfter).toBe(result.champion.commit);
    expect(rows[1]!.championAfter).toBe(result.champion.commit);
    const branch = result.iterations[0]!.evidence.candidate!.branch;
    const log = gitIn(repo, 'show', `${branch}:docs/hillclimb-log.md`);
    expect(log).toContain('### Iteration 1');
    const runLog = readFileSync(join(result.runDir, 'hillclimb-log.md'), 'utf8');
    expect(runLog.match(/### Iteration /g)).toHaveLength(4);
    // Each entry was linted against its evidence when it was recorded.
    for (const it of result.iterations) {
      expect(it.evidence.publish?.warnings.filter((w) => w.startsWith('log lint'))).toEqual([]);
    }
    const lint = lintLog(runLog, {
      scope: 'all',
      loadEvidence: evidenceLoader([result.stateDir]),
      requireEvidence: true,
    });
    expect(lint).toEqual([]);
  });

  it('keeps every artifact in the bundle and cleans up its worktrees', () => {
    const bundle = result.iterations[0]!.bundleDir;
    for (const f of [
      'evidence.json',
      'agent/prompt.md',
      'candidate/candidate.bundle',
      'candidate/candidate.patch',
      'gates/cpu.junit.xml',
      'measure/A-01.json',
      'report/comment.md',
    ]) {
      expect(existsSync(join(bundle, f)), f).toBe(true);
    }
    expect(gitIn(repo, 'worktree', 'list').trim().split('\n')).toHaveLength(1);
    expect(gitIn(repo, 'status', '--porcelain').trim()).toBe('');
  });

  it('journals the run and prints a progress line per step', () => {
    const progress = runProgress(new Journal(result.runDir).entries(), 'journal');
    expect(progress.finished.size).toBe(4);
    expect(progress.ended?.reason).toBe('completed');
    expect(lines.some((l) => l.includes('[i001 toy] measure'))).toBe(true);
  });
});

// Issue 25's novelty check: a change an earlier iteration already made (here re-indented, with a blank
// line more) is refused by the guard before it costs a gate or a measurement.
describe('the novelty check', () => {
  const t = tempDir('hc-novelty-');
  afterAll(t.cleanup);

  it('refuses a change an earlier iteration made, naming it and its outcome, before any gate; the prompt shows the ledger', async () => {
    process.env.HILLCLIMB_PYTHON = systemPython();
    const sameSpeed = STANDARD_PATCHES[2]!;
    const again = {
      name: '0002-same-speed-again',
      edit: {
        'toy/kernel.py': (text: string) =>
          `${text.replace('def compute(xs):', 'def compute(xs):\n    """Double  every element."""\n')}\nUNROLL  =  2\n`,
      },
      json: { hypothesis: 'Unrolling, once more.', summary: 'Unrolled by two.', next_idea: 'None.' },
    };
    const repo = join(t.dir, 'repo');
    makeToyRepo(repo, [{ ...sameSpeed, name: '0001-same-speed' }, again]);
    const result = await runLoop({
      configFile: join(repo, 'hillclimb.yml'),
      overrides: { 'loop.iterations': 2 },
      logger: memoryLogger(),
      sleep: noSleep,
    });
    expect(result.iterations.map((i) => i.verdict)).toEqual(['no-change', 'invalid']);
    const repeat = result.iterations[1]!;
    expect(repeat.reason).toMatch(
      /^novelty check: a repeat of iteration 1 of run \S+ \(no-change, ratio \d\.\d{3} \[/,
    );
    expect(repeat.evidence.stoppedAt).toBe('guard');
    expect(repeat.evidence.gates.cpu).toBeUndefined();
    expect(repeat.evidence.measurement).toBeUndefined();
    // A refused repeat is never pushed: no branch, no PR (the no-change it repeats has its own).
    expect(repeat.evidence.guard?.allowed).toBe(false);
    expect(repeat.evidence.guard?.repeatOf).toMatch(/^iteration 1 of run \S+$/);
    expect(repeat.evidence.publish?.prNumber).toBeUndefined();
    expect(repeat.evidence.publish?.branch).toBeUndefined();
    expect(result.iterations[0]!.evidence.publish?.prNumber).toBeDefined();
    // The ledger in the second prompt: iteration 1's outcome and hypothesis, from the history.
    const prompt = readFileSync(join(repeat.bundleDir, 'agent', 'prompt.md'), 'utf8');
    expect(prompt).toContain("Already tried (the harness's ledger: 1 earlier iteration(s) of this target");
    expect(prompt).toMatch(
      /\| \S+ \/ 1 \| no-change \| \d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\] \| Unrolling the loop helps\. \|/,
    );
    const rows = readHistory(result.stateDir);
    expect(rows[0]!.hypothesis).toBe('Unrolling the loop helps.');
    expect(rows[0]!.change).toMatch(/^sha256:/);
    expect(rows[1]!.change).toBe(rows[0]!.change);
  }, 240_000);
});
