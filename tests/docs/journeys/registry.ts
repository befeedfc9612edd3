/**
 * The journeys: for each name the docs' markers use, where it runs, what its placeholders stand for,
 * what the situation is before it (a troubleshooting case's cause), and what each command must do
 * beyond what the page shows (its exit code, above all). The order here is the order they run in:
 * later journeys read what earlier ones left (the loop's PRs, history and traces).
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalForge } from '../../../src/forge/forges/local.js';
import { memoryLogger } from '../../../src/util/log.js';
import { PIN_FLAGS } from '../../init/scratch.js';
import { gitIn } from '../../loop/toy-repo.js';
import type { LineSkip } from './plan.js';
import { findFiles } from './runner.js';

/** What the journeys share: the scratch repositories and the programs on PATH. */
export interface JourneyContext {
  /** The toy loop target (tests/loop/toy-repo.ts): the loop, its records, the harness, troubleshooting. */
  loopRepo: string;
  /** The same target with three candidates for iteration 1 (slot files). */
  searchRepo: string;
  /** A repository that is not hillclimb (tests/init/scratch.ts), before init. */
  adoptRepo: string;
  /** PATH with `hillclimb` (this checkout) first, and neither codex nor claude on it. */
  path: string;
  /** A folder with a stand-in `codex` program, for the checks that come before it runs. */
  fakeAgentBin: string;
  /** A model API that refuses every key (401), and a URL where nothing listens. */
  refusingApi: string;
  deadApi: string;
  /** A command agent that reports its model API down (exit 75, the infrastructure code). */
  downAgent: string;
  /** The number of the person's PR the harness journey opens on the local forge. */
  personalPr?: number;
  /** The interpreter the toy targets run on (stdlib only). */
  python: string;
}

export interface CommandRule {
  /** Which of the journey's commands (as the page shows them); must match at least one. */
  command: RegExp;
  /** The exit code; 0 unless given. */
  code?: number;
  /** Text the command prints (stdout and stderr) beyond the page's own output blocks. */
  prints?: Array<string | RegExp>;
  /** Ctrl-C once the output matches this. */
  interruptWhen?: RegExp;
  /** Checks of what the command left behind. */
  after?: (c: JourneyContext) => void;
}

export interface Journey {
  name: string;
  cwd: (c: JourneyContext) => string;
  /** The value of each `<placeholder>` the journey's commands use; any other fails the step. */
  placeholders?: Record<string, (c: JourneyContext) => string>;
  env?: (c: JourneyContext) => Record<string, string>;
  /** The situation before the first command. */
  before?: (c: JourneyContext) => void | Promise<void>;
  skip?: LineSkip[];
  /** Flags added to a command, and why (stated in the step's title). */
  append?: { command: RegExp; args: string; why: string };
  rules?: CommandRule[];
}

/** Journeys whose markers another test file runs, by the file that runs them. */
export const RUN_ELSEWHERE: Record<string, string> = {
  'first-verdict': 'tests/init/adoption.int.test.ts',
  // A target on hillclimb-bench and JAX: that file's repositories, on this checkout's venv.
  'kernel-at-top': 'tests/init/target-mistakes.int.test.ts',
  'no-source-roots': 'tests/init/target-mistakes.int.test.ts',
};

const toyEnv = (c: JourneyContext) => ({ PATH: c.path, HILLCLIMB_PYTHON: c.python });

/** The change a person makes by hand: the toy kernel waits less per call. */
function personalBranch(repo: string, branch: string): void {
  gitIn(repo, 'switch', '--quiet', '-c', branch, 'main');
  const kernel = join(repo, 'toy', 'kernel.py');
  writeFileSync(kernel, readFileSync(kernel, 'utf8').replace('DELAY_S = 0.02', 'DELAY_S = 0.008'));
  gitIn(repo, 'commit', '--quiet', '-am', 'a faster kernel, by hand');
}

/** The profiler trace of the loop run's iteration `i` (its candidate's). */
function loopTrace(c: JourneyContext, i: string): string {
  const trace = findFiles(join(c.loopRepo, '.hillclimb', 'runs'), '.trace.json.gz').find((f) =>
    f.includes(`/${i}/profile/candidate-trace/`),
  );
  if (!trace) throw new Error(`no candidate trace of ${i} under ${c.loopRepo}/.hillclimb/runs`);
  return trace;
}

export const JOURNEYS: Journey[] = [
  {
    name: 'adoption',
    cwd: (c) => c.adoptRepo,
    env: toyEnv,
    skip: [
      {
        command: /^git clone |^git checkout <release commit>/,
        why: 'installs hillclimb from GitHub: the journey’s `hillclimb` is this checkout’s CLI, as npm link makes it',
      },
      { command: /^cd ~\/my-repo$/, why: 'the journey runs in its scratch repository' },
    ],
    append: {
      command: /^hillclimb init --/,
      args: PIN_FLAGS.join(' '),
      why: 'the pin a release checkout takes from its HEAD and origin, which a test checkout may lack',
    },
    rules: [
      // Without a terminal: it asks nothing, and names the flags it needs.
      {
        command: /^hillclimb init$/,
        code: 2,
        prints: ['has no terminal to ask on', 'pass --yes with --target'],
      },
      { command: /^hillclimb init --yes/, prints: ['created  hillclimb.yml'] },
      {
        command: /^hillclimb init --add-target/,
        prints: ['added target my-other-op beside my-op'],
        after: (c) => {
          const filters = readFileSync(join(c.adoptRepo, '.github', 'workflows', 'pr-evidence.yml'), 'utf8');
          for (const glob of ['src/mypkg/ops/**', 'src/mypkg/other/**'])
            assert.ok(filters.includes(glob), `pr-evidence.yml filters ${glob}`);
        },
      },
      // Neither target module is written yet: doctor names what each target lacks, and exits 1.
      {
        command: /^hillclimb doctor$/,
        code: 1,
        prints: [/my-other-op: lacks target module, editable paths/],
      },
    ],
  },
  {
    name: 'loop',
    cwd: (c) => c.loopRepo,
    env: toyEnv,
    rules: [
      // Ctrl-C mid-measurement: the step stops cleanly and says how to go on.
      {
        command: /^hillclimb loop$/,
        interruptWhen: /\[i001 toy\] measure: verifier session 1/,
        code: 130,
        prints: ['hint: continue where it stopped with: hillclimb loop --resume'],
      },
      // No codex on this PATH: the loop refuses to start (docs/troubleshooting.md).
      { command: /--agent codex/, code: 1, prints: ['"codex" is not installed (not found on PATH)'] },
      {
        command: /^hillclimb loop --resume$/,
        prints: [
          /resuming run \S+/,
          /i001 +✓ improved/,
          /i002 +! invalid/,
          /i003 +~ no-change/,
          '4 iterations, 1 improved',
        ],
      },
      { command: /^hillclimb loop --dry-run$/, prints: ['dry run: no history row'] },
    ],
  },
  {
    name: 'records',
    cwd: (c) => c.loopRepo,
    env: toyEnv,
    placeholders: { clone: (c) => c.loopRepo, n: () => '1' },
    rules: [
      {
        command: /pr list/,
        prints: [/#1 +draft .*\[hillclimb:improved\]/, /#2 +draft .*\[hillclimb:invalid\]/],
      },
      { command: /pr show/, prints: ['labels: hillclimb:improved', '## ✓ improved'] },
      { command: /history/, prints: [/i1 +✓ improved/, /i2 +! invalid/, /i3 +~ no-change/, /i4 +! invalid/] },
    ],
  },
  { name: 'chart', cwd: (c) => c.loopRepo, env: toyEnv },
  {
    name: 'harness',
    cwd: (c) => c.loopRepo,
    env: toyEnv,
    // A change of one's own on a branch, and a person's PR for it on the local forge.
    before: async (c) => {
      personalBranch(c.loopRepo, 'faster');
      const forge = new LocalForge({
        repoDir: c.loopRepo,
        stateDir: join(c.loopRepo, '.hillclimb'),
        logger: memoryLogger(),
      });
      const { pr } = await forge.upsertPullRequest({
        branch: 'faster',
        base: 'main',
        title: 'a faster kernel',
        body: 'by hand',
        draft: false,
        labels: [],
      });
      c.personalPr = pr.number;
    },
    placeholders: {
      n: (c) => String(c.personalPr),
      trace: (c) => loopTrace(c, 'i001'),
      before: (c) => loopTrace(c, 'i001'),
      after: (c) => loopTrace(c, 'i003'),
    },
    skip: [
      {
        command: /^hillclimb tpu allocate\|status/,
        why: 'a synopsis of four verbs, not one command; they need gcloud and a project (tests/compute/tpu-lifecycle.int.test.ts)',
      },
    ],
    rules: [
      { command: /^hillclimb check$/, prints: [/✓ verify +1 program\(s\) agree with the reference/] },
      { command: /^hillclimb test$/, prints: ['3 passed, 0 failed'] },
      { command: /^hillclimb measure --base main$/, prints: ['improved'] },
      { command: /--pr <n>$/, prints: ['improved', /PR #\d+: sticky comment created/] },
      { command: /^hillclimb profile/, prints: ['toy_kernel'] },
      { command: /^hillclimb trace summary/, prints: ['toy_kernel'] },
      { command: /^hillclimb trace diff/, prints: ['toy_kernel'] },
      { command: /^hillclimb log lint/, prints: ['log lint passed'] },
      { command: /^hillclimb history$/, prints: [/i1 +✓ improved/] },
      // The toy target runs on the system Python, without hillclimb-bench: doctor says so.
      {
        command: /^hillclimb doctor$/,
        code: 1,
        prints: [/ok +hillclimb\.yml +valid: target toy/, /MISSING hillclimb-bench/],
      },
    ],
  },
  {
    name: 'search',
    cwd: (c) => c.searchRepo,
    env: toyEnv,
    rules: [
      // One iteration's worth of candidates: the search, then no-ops until the loop calls itself stuck (exit 1).
      {
        command: /-k 3$/,
        code: 1,
        prints: [/i001-c1 +! invalid/, /i001-c2 +· screened-out/, /i001-c3 +✓ improved/, 'stuck'],
      },
    ],
  },
  {
    name: 'agent-down',
    cwd: (c) => c.loopRepo,
    env: toyEnv,
    // A command agent whose model API is down: it says so on stderr and exits 75, every attempt.
    before: (c) => {
      gitIn(c.loopRepo, 'switch', '--quiet', '-c', 'agent-down', 'main');
      const config = join(c.loopRepo, 'hillclimb.yml');
      writeFileSync(
        config,
        `${readFileSync(config, 'utf8')}  command:\n    command: ["sh", "${c.downAgent}"]\n`,
      );
      gitIn(c.loopRepo, 'commit', '--quiet', '-am', 'a command agent whose API is down');
    },
    rules: [{ command: /--agent command/, code: 3, prints: [/^i002 +E error/m] }],
  },
  {
    name: 'module-typo',
    cwd: (c) => c.loopRepo,
    env: toyEnv,
    before: (c) => {
      gitIn(c.loopRepo, 'switch', '--quiet', '-c', 'typo', 'main');
      const config = join(c.loopRepo, 'hillclimb.yml');
      writeFileSync(
        config,
        readFileSync(config, 'utf8').replace('module: harness.programs', 'module: harness.program'),
      );
      gitIn(c.loopRepo, 'commit', '--quiet', '-am', 'programs.module with a typo');
    },
    rules: [{ command: /^hillclimb check$/, code: 2, prints: ['✗ requests'] }],
  },
  {
    name: 'agent-missing',
    cwd: (c) => c.loopRepo,
    env: toyEnv,
    before: (c) => {
      gitIn(c.loopRepo, 'switch', '--quiet', 'main');
    },
    rules: [{ command: /--agent codex/, code: 1 }],
  },
  {
    name: 'key-refused',
    cwd: (c) => c.loopRepo,
    env: (c) => ({
      ...toyEnv(c),
      PATH: `${c.fakeAgentBin}:${c.path}`,
      OPENAI_API_KEY: 'sk-journey-refused',
      OPENAI_BASE_URL: `${c.refusingApi}/v1`,
    }),
    rules: [
      {
        command: /--agent codex/,
        code: 2,
        prints: [
          'OPENAI_API_KEY (passed to codex as CODEX_API_KEY, the only key codex exec reads) was refused by',
        ],
      },
    ],
  },
  {
    name: 'api-unreachable',
    cwd: (c) => c.loopRepo,
    env: (c) => ({
      ...toyEnv(c),
      PATH: `${c.fakeAgentBin}:${c.path}`,
      OPENAI_API_KEY: 'sk-journey-unreachable',
      OPENAI_BASE_URL: `${c.deadApi}/v1`,
    }),
    rules: [{ command: /--agent codex/, code: 1 }],
  },
];
