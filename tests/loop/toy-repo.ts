/**
 * A toy target for the loop tests: a real git repository with a Python "kernel" (stdlib only, so no
 * JAX start-up), a protected harness (a correctness check writing JUnit; a target module speaking
 * hillclimb_bench's export/verify protocol: the export turns the kernel into a program, the verifier
 * runs, checks and times it and writes a tsl-shaped trace) and replay patches written as real
 * `git diff` output.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { REPO_ROOT } from '../helpers/paths.js';

const TOY = join(REPO_ROOT, 'tests', 'loop', 'toy');

export const TOY_CONFIG = `version: 1
targets:
  toy:
    description: toy kernel for the loop tests
    editable: [toy/**]
    protected: [harness/**, hillclimb.yml, prompts/**, replay/**]
    correctness:
      cpu:
        command: ["{python}", "harness/check.py", "--junit", "{junit}"]
        timeout_minutes: 0.5
        idle_timeout_minutes: 0.2
    programs:
      module: harness.programs
      timeout_minutes: 0.5
    bench:
      metric: {path: measurements.fwd_bwd.median_ms, direction: lower, label: run time}
      repeats: 5
      warmup: 1
      timeout_minutes: 1
    profile:
      repeats: 3
      timeout_minutes: 1
loop:
  iterations: 4
  infra_retries: 1
  retry_backoff_seconds: 0.01
measure:
  runs_per_arm: 5
  max_runs_per_arm: 7
  practical_delta: 0.2
agent:
  kind: replay
  replay: {dir: replay}
`;

/** Edits that become replay patches, in order. Each maps a repo path to its new content. */
export type PatchEdit = Record<string, (text: string) => string>;

export const STANDARD_PATCHES: Array<{ name: string; edit: PatchEdit; json: object }> = [
  {
    name: '0001-shorter-delay',
    edit: { 'toy/kernel.py': (t) => t.replace('DELAY_S = 0.02', 'DELAY_S = 0.008') },
    json: { hypothesis: 'Less waiting per call.', summary: 'Cut the delay.', next_idea: 'Fuse compute.' },
  },
  {
    name: '0002-wrong-math',
    edit: { 'toy/kernel.py': (t) => t.replace('return [2 * x for x in xs]', 'return [3 * x for x in xs]') },
    json: { hypothesis: 'Cheaper arithmetic.', summary: 'Changed the factor.', next_idea: 'None.' },
  },
  {
    // A real change of the program that buys nothing: measured, and no-change.
    name: '0003-same-speed',
    edit: {
      'toy/kernel.py': (t) =>
        `${t.replace('def compute(xs):', 'def compute(xs):\n    """Double every element."""')}\nUNROLL = 2\n`,
    },
    json: {
      hypothesis: 'Unrolling the loop helps.',
      summary: 'Unrolled by two.',
      next_idea: 'Measure again.',
    },
  },
  {
    name: '0004-loosen-tolerance',
    edit: { 'harness/check.py': (t) => t.replace('TOLERANCE = 0', 'TOLERANCE = 100') },
    json: { hypothesis: 'The test is too strict.', summary: 'Loosened the tolerance.', next_idea: 'None.' },
  },
];

function git(dir: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd: dir,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@t',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@t',
    },
  });
}

/** The toy target is stdlib only: the system's python3 stands in for the project's venv. */
export function systemPython(): string {
  return execFileSync('sh', ['-c', 'command -v python3'], { encoding: 'utf8' }).trim();
}

/** Build the toy repository in `dir` with these patches; returns the base commit. */
export function makeToyRepo(dir: string, patches = STANDARD_PATCHES, config = TOY_CONFIG): string {
  mkdirSync(dir, { recursive: true });
  const put = (rel: string, text: string) => {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), text);
  };
  put('hillclimb.yml', config);
  put('toy/__init__.py', '');
  copyFileSync(join(TOY, 'kernel.py'), join(dir, 'toy', 'kernel.py'));
  put('harness/__init__.py', '');
  copyFileSync(join(TOY, 'programs.py'), join(dir, 'harness', 'programs.py'));
  copyFileSync(join(TOY, 'check.py'), join(dir, 'harness', 'check.py'));
  put('prompts/iteration.md', readFileSync(join(REPO_ROOT, 'prompts', 'iteration.md'), 'utf8'));
  put('.gitignore', '.hillclimb/\n__pycache__/\n');
  git(dir, 'init', '--quiet', '--initial-branch=main');
  git(dir, 'add', '-A');
  git(dir, 'commit', '--quiet', '-m', 'toy base');
  for (const p of patches) {
    for (const [file, change] of Object.entries(p.edit))
      put(file, change(readFileSync(join(dir, file), 'utf8')));
    const diff = git(dir, 'diff');
    git(dir, 'checkout', '--quiet', '--', '.');
    put(`replay/${p.name}.patch`, diff);
    put(`replay/${p.name}.json`, JSON.stringify(p.json));
  }
  if (patches.length > 0) {
    git(dir, 'add', '-A');
    git(dir, 'commit', '--quiet', '-m', 'replay patches');
  }
  return git(dir, 'rev-parse', 'HEAD').trim();
}

export function gitIn(dir: string, ...args: string[]): string {
  return git(dir, ...args);
}

/** A change that leaves the program as it was (a docstring): its programs are the champion's, `no-op`. */
export const DOCSTRING_PATCH: { name: string; edit: PatchEdit; json: object } = {
  name: '0005-docstring',
  edit: {
    'toy/kernel.py': (t) =>
      t.replace('def compute(xs):', 'def compute(xs):\n    """Double every element."""'),
  },
  json: { hypothesis: 'Readability only.', summary: 'Docstring.', next_idea: 'Measure again.' },
};

const IMPORT = 'vars(len.__self__)["__imp" + "ort__"]';

/**
 * A faster kernel that is slower (3×) only when its export can tell it is arm A — the champion — by what
 * the harness used to show an export: `--only` (the champion's timed programs only), `--draw 0`
 * (`hillclimb measure`), a working folder named champion-…; or, while its code is unchanged (`compute`
 * has no docstring), its own hypothesis in the hill-climb log beside it (the entry the harness commits
 * on top of a winner: it has been promoted). Once it is champion, a later candidate that keeps its code
 * would be measured against a handicapped champion (issue 34).
 */
export const ARM_A_SANDBAG_PATCH: { name: string; edit: PatchEdit; json: object } = {
  name: '0001-faster-unless-champion',
  edit: {
    'toy/kernel.py': (s) =>
      s.replace(
        'DELAY_S = 0.02',
        [
          'def _arm_a():',
          `    argv = ${IMPORT}("s" + "ys").argv`,
          `    seen = " ".join(argv) + " " + ${IMPORT}("o" + "s").getcwd()`,
          '    if "--only" in argv or "champion" in seen:',
          '        return True',
          '    return "--draw" in argv and argv[argv.index("--draw") + 1] == "0"',
          '',
          '',
          'DELAY_S = 0.008 * (3 if _arm_a() else 1)',
        ].join('\n'),
      ) +
      [
        '',
        '',
        'def _promoted():',
        `    log = ${IMPORT}("o" + "s").path.join("docs", "hillclimb-log.md")`,
        `    return ${IMPORT}("o" + "s").path.exists(log) and "Less waiting per call." in open(log).read()`,
        '',
        '',
        'if _promoted() and compute.__doc__ is None:',
        '    DELAY_S = 0.024',
        '',
      ].join('\n'),
  },
  json: { hypothesis: 'Less waiting per call.', summary: 'Cut the delay.', next_idea: 'Keep it.' },
};
