/**
 * Runs this repository's real workflow files in nektos/act (built by scripts/build-act.mjs), jobs on
 * the host (`-P ubuntu-24.04=-self-hosted`, no Docker), offline:
 *
 * - the pinned third-party actions come from `../shared/fixtures/actions/` (the real actions at their
 *   pinned commits) or, where that folder is absent, from the stand-ins in tests/workflows/act/stand-ins
 *   (see its README for what only the real actions show); actions that need the network or the cloud
 *   map to a stand-in that fails loudly if a run ever reaches it;
 * - the GitHub API is the contract server: GITHUB_API_URL points at it, and a `gh` stand-in
 *   (act-gh.mjs) on PATH sends the workflows' own `gh api` / `gh workflow run` calls there;
 * - git URLs of the repository (github.com's and the API host's) are rewritten to a local bare
 *   repository by a git config of the test's own (GIT_CONFIG_GLOBAL), so checkout copies, fetches and
 *   pushes reach the "remote";
 * - the environment is built from scratch (no variable of the test process leaks into a job).
 *
 * act logs as JSON (`--json -v`); the run is parsed into jobs (result, duration), step outputs
 * (`::set-output::` lines), the values expressions evaluated to per job (how a job's outputs are seen
 * to reach the next) and each job's raw output.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { REPO_ROOT } from './paths.js';

/** The pinned actions, at their pinned commits (fixtures of the workplace, not part of the project). */
export const ACTION_FIXTURES =
  process.env.HILLCLIMB_ACTION_FIXTURES ?? join(REPO_ROOT, '..', 'shared', 'fixtures', 'actions');
const STAND_INS = join(REPO_ROOT, 'tests', 'workflows', 'act', 'stand-ins');
const GH = join(REPO_ROOT, 'tests', 'helpers', 'act-gh.mjs');

/**
 * The act binary, built on first use (scripts/build-act.mjs), or why the workflow tests must skip.
 * HILLCLIMB_ACT_BINARY names another build instead (runner.act.test.ts shows what it must do).
 */
export function actBinary(): { path: string; skip?: undefined } | { skip: string; path?: undefined } {
  if (process.env.HILLCLIMB_ACT_BINARY) return { path: process.env.HILLCLIMB_ACT_BINARY };
  const r = spawnSync(process.execPath, [join(REPO_ROOT, 'scripts', 'build-act.mjs')], { encoding: 'utf8' });
  if (r.status === 3) return { skip: r.stderr.trim() };
  if (r.status !== 0) throw new Error(`scripts/build-act.mjs failed:\n${r.stderr}`);
  return { path: r.stdout.trim().split('\n').at(-1)! };
}

export interface ActionMapping {
  /** owner/repo@sha, as pinned. */
  uses: string;
  folder: string;
  kind: 'real' | 'stand-in';
}

/**
 * Every `uses: owner/repo@sha` in the workflows of `dir`, mapped to the folder act should use for it:
 * the real action where the fixtures have it (unless `standIns`), else the stand-in.
 */
export function actionMappings(
  dir = join(REPO_ROOT, '.github', 'workflows'),
  standIns = false,
): ActionMapping[] {
  const pins = new Set<string>();
  for (const f of readdirSync(dir)) {
    for (const m of readFileSync(join(dir, f), 'utf8').matchAll(/uses:\s*([\w.-]+\/[\w.-]+)@([0-9a-f]{40})/g))
      pins.add(`${m[1]}@${m[2]}`);
  }
  return [...pins].sort().flatMap((uses): ActionMapping[] => {
    const [repo, sha] = uses.split('@') as [string, string];
    const real = join(ACTION_FIXTURES, `${repo.split('/')[1]}@${sha}`);
    if (!standIns && existsSync(join(real, 'action.yml'))) return [{ uses, folder: real, kind: 'real' }];
    // act copies the clone itself for a checkout of the repository; it never runs this action.
    if (repo === 'actions/checkout') return [];
    const standIn = join(STAND_INS, repo.split('/')[1]!);
    if (existsSync(join(standIn, 'action.yml'))) return [{ uses, folder: standIn, kind: 'stand-in' }];
    return [{ uses, folder: join(STAND_INS, 'offline'), kind: 'stand-in' }];
  });
}

/** Whether the real artifact actions (and so act's artifact server) are used, or the stand-ins. */
export function usesRealArtifactActions(mappings = actionMappings()): boolean {
  return mappings.some((m) => m.uses.startsWith('actions/upload-artifact@') && m.kind === 'real');
}

export interface ActWorldOptions {
  /** Folder for everything of these runs (home, git config, artifacts, logs). */
  dir: string;
  /** URLs (prefixes) git must send to a local bare repository instead: url → bare repository. */
  remotes: Record<string, string>;
}

/** What several act runs of one test share: a home, a git config, the artifact store, the gh log. */
export class ActWorld {
  readonly home: string;
  readonly artifacts: string;
  readonly ghLog: string;
  readonly bin: string;
  readonly gitConfig: string;
  private runs = 0;

  constructor(readonly opts: ActWorldOptions) {
    this.home = join(opts.dir, 'home');
    this.artifacts = join(opts.dir, 'artifacts');
    this.bin = join(opts.dir, 'bin');
    this.ghLog = join(opts.dir, 'gh-calls.jsonl');
    this.gitConfig = join(opts.dir, 'gitconfig');
    for (const d of [this.home, this.artifacts, this.bin]) mkdirSync(d, { recursive: true });
    writeFileSync(this.ghLog, '');
    writeFileSync(
      join(this.bin, 'gh'),
      `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(GH)} "$@"\n`,
    );
    chmodSync(join(this.bin, 'gh'), 0o755);
    writeFileSync(
      this.gitConfig,
      Object.entries(opts.remotes)
        .map(([url, bare]) => `[url ${JSON.stringify(bare)}]\n\tinsteadOf = ${url}\n`)
        .join(''),
    );
  }

  /** The `gh` calls the workflows made, in order (argument arrays). */
  ghCalls(): string[][] {
    return readFileSync(this.ghLog, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as string[]);
  }

  /**
   * The environment act (and so every job on the host) gets: nothing of the test process but PATH,
   * which also finds the gh stand-in first and this Node.js (act runs `node` from PATH for every
   * JavaScript action, whatever its `using:` says).
   */
  env(): Record<string, string> {
    return {
      PATH: [this.bin, dirname(process.execPath), process.env.PATH ?? '/usr/bin:/bin'].join(':'),
      HOME: this.home,
      LANG: 'C.UTF-8',
      TMPDIR: join(this.opts.dir, 'tmp'),
      GIT_CONFIG_GLOBAL: this.gitConfig,
      GIT_CONFIG_NOSYSTEM: '1',
      // act asks api.nektosact.com for notices about its version otherwise: nothing here leaves the machine.
      ACT_DISABLE_VERSION_CHECK: '1',
      HILLCLIMB_ACT_GH_LOG: this.ghLog,
      HILLCLIMB_ACT_ARTIFACTS: this.artifacts,
    };
  }

  /**
   * An artifact of a workflow run as a folder of its files, or undefined when there is none: act's
   * artifact server keeps `<run id>/<name>/<name>.zip` (extracted here), the stand-in a plain folder.
   */
  artifact(runId: number, name: string): string | undefined {
    const dir = join(this.artifacts, String(runId), name);
    const zip = join(dir, `${name}.zip`);
    if (!existsSync(zip)) return existsSync(dir) ? dir : undefined;
    const out = join(this.opts.dir, 'extracted', String(runId), name);
    rmSync(out, { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    const r = spawnSync('python3', ['-m', 'zipfile', '-e', zip, out], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`cannot extract ${zip}: ${r.stderr}`);
    return out;
  }

  nextRun(): number {
    return ++this.runs;
  }
}

export interface ActRunOptions {
  act: string;
  world: ActWorld;
  /** The clone act runs in: its origin names the repository, its checked-out commit is github.sha. */
  repo: string;
  /** Workflow file name under .github/workflows of `repo`. */
  workflow: string;
  event: 'workflow_dispatch' | 'pull_request' | 'issue_comment' | 'push';
  payload: Record<string, unknown>;
  inputs?: Record<string, string>;
  secrets?: Record<string, string>;
  vars?: Record<string, string>;
  /** GITHUB_API_URL: the contract server. */
  apiUrl: string;
  /** GITHUB_RUN_ID (the setup job's run id is gh<run id>). */
  runId: number;
  /** Use the stand-ins even where the real actions are at hand (to compare the two). */
  standIns?: boolean;
  /**
   * Serve act's artifact server (ACTIONS_RUNTIME_TOKEN and ACTIONS_RESULTS_URL for the jobs) even where
   * the real artifact actions are absent: for a test's own action that uses @actions/artifact.
   */
  artifactServer?: boolean;
  timeoutMs?: number;
}

export type JobResult = 'success' | 'failure' | 'skipped' | 'not run';

export interface ActJob {
  id: string;
  result: JobResult;
  /** From the job's first log line to its result, whole seconds (act logs time to the second). */
  seconds: number;
}

interface LogLine {
  msg?: string;
  stage?: string;
  stepResult?: string;
  jobID?: string;
  stepID?: string[];
  time?: string;
  jobResult?: string;
  raw_output?: boolean;
  command?: string;
  name?: string;
  arg?: string;
  level?: string;
}

export class ActRun {
  readonly jobs = new Map<string, ActJob>();
  private readonly lines: LogLine[];

  constructor(
    readonly code: number,
    readonly logFile: string,
    readonly runId: number,
  ) {
    this.lines = readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as LogLine);
    const first = new Map<string, number>();
    for (const l of this.lines) {
      if (!l.jobID || !l.time) continue;
      const t = Date.parse(l.time);
      if (!first.has(l.jobID)) first.set(l.jobID, t);
      if (l.jobResult) {
        this.jobs.set(l.jobID, {
          id: l.jobID,
          result: l.jobResult as JobResult,
          seconds: Math.round((t - first.get(l.jobID)!) / 1000),
        });
      }
    }
  }

  result(job: string): JobResult {
    return this.jobs.get(job)?.result ?? 'not run';
  }

  /** What a step of a job set with GITHUB_OUTPUT (`::set-output::` in act's log); any step when none is named. */
  output(job: string, name: string, step?: string): string | undefined {
    return this.lines.findLast(
      (l) =>
        l.jobID === job &&
        l.command === 'set-output' &&
        l.name === name &&
        (step === undefined || l.stepID?.[0] === step),
    )?.arg;
  }

  /** A step's outcome (`steps.<id>.outcome`: success, failure, skipped), or '' when it never came up. */
  outcome(job: string, step: string): string {
    return (
      this.lines.findLast(
        (l) => l.jobID === job && l.stepID?.[0] === step && l.stepResult && (l.stage ?? 'Main') === 'Main',
      )?.stepResult ?? ''
    );
  }

  /**
   * Every expression act evaluated in a job, with its value, in order. act logs a `with:`/`env:` value
   * as `format('{0}', <expression>)`; that wrapper is taken off.
   */
  evaluations(job: string): { expression: string; value: string }[] {
    return this.lines.flatMap((l) => {
      if (l.jobID !== job || !l.msg) return [];
      const m = /^expression '(.*)' evaluated to '(.*)'$/s.exec(l.msg);
      if (!m) return [];
      const expression = /^format\('\{0\}', (.*)\)$/s.exec(m[1]!)?.[1] ?? m[1]!;
      const value = /^%!t\(string=(.*)\)$/s.exec(m[2]!)?.[1] ?? m[2]!;
      return [{ expression, value }];
    });
  }

  /** Everything a job's steps printed. */
  text(job: string): string {
    return this.lines
      .filter((l) => l.jobID === job && l.raw_output)
      .map((l) => l.msg ?? '')
      .join('');
  }

  /** `::error::` annotations a job's steps printed (act logs them as commands, not raw output). */
  errors(job: string): string[] {
    return this.lines.flatMap((l) => {
      // act shows a workflow command as `❗  ::error::…`; debug lines that merely quote one are not it.
      const m =
        l.jobID === job && l.level !== 'debug' && l.msg ? /^\s*\S*\s*::error[^:]*::(.*)$/s.exec(l.msg) : null;
      return m
        ? [m[1]!.trimEnd().replaceAll('%0A', '\n').replaceAll('%0D', '\r').replaceAll('%25', '%')]
        : [];
    });
  }

  /** job | result | duration, as a markdown table (for the notes, and for failure messages). */
  table(): string {
    const rows = [...this.jobs.values()].map((j) => `| ${j.id} | ${j.result} | ${j.seconds} s |`);
    return ['| job | result | duration |', '|---|---|---|', ...rows].join('\n');
  }

  /** A failure message: the table and the end of each failed job's output. */
  describe(): string {
    const failed = [...this.jobs.values()].filter((j) => j.result === 'failure');
    return [
      `act exit ${this.code}, log ${this.logFile}`,
      this.table(),
      ...failed.map(
        (j) =>
          `--- ${j.id}: errors ---\n${this.errors(j.id).join('\n')}\n` +
          `--- ${j.id}: last lines ---\n${this.text(j.id).split('\n').slice(-30).join('\n')}`,
      ),
    ].join('\n');
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Tools the workflows' own steps call that GitHub's ubuntu-24.04 image has; act runs them from this machine. */
const RUNNER_TOOLS = ['bash', 'git', 'jq', 'yq', 'python3'];

function missingRunnerTools(path: string): string[] {
  return RUNNER_TOOLS.filter((tool) => !path.split(':').some((d) => d && existsSync(join(d, tool))));
}

/** Run one workflow event in act; resolves when act exits (or is killed at the timeout). */
export async function runAct(opts: ActRunOptions): Promise<ActRun> {
  const missing = missingRunnerTools(opts.world.env().PATH!);
  if (missing.length > 0) {
    throw new Error(
      `the workflows run ${missing.join(', ')} (on GitHub's ubuntu-24.04 runners they are installed); install them here (apt-get install ${missing.join(' ')})`,
    );
  }
  const n = opts.world.nextRun();
  const dir = join(opts.world.opts.dir, `run-${n}`);
  mkdirSync(dir, { recursive: true });
  mkdirSync(join(opts.world.opts.dir, 'tmp'), { recursive: true });
  const event = join(dir, 'event.json');
  writeFileSync(event, JSON.stringify(opts.payload));
  const args = [
    opts.event,
    '--workflows',
    join(opts.repo, '.github', 'workflows', opts.workflow),
    '--directory',
    opts.repo,
    '--eventpath',
    event,
    '--platform',
    'ubuntu-24.04=-self-hosted',
    '--platform',
    'ubuntu-latest=-self-hosted',
    '--defaultbranch',
    'main',
    '--action-offline-mode',
    '--action-cache-path',
    join(dir, 'act-cache'),
    '--no-cache-server',
    '--json',
    '--verbose',
    '--env',
    `GITHUB_API_URL=${opts.apiUrl}`,
    '--env',
    `GITHUB_RUN_ID=${opts.runId}`,
    '--env',
    `GITHUB_RUN_NUMBER=${n}`,
  ];
  const mappings = actionMappings(join(opts.repo, '.github', 'workflows'), opts.standIns);
  for (const m of mappings) args.push('--local-repository', `${m.uses}=${m.folder}`);
  if (opts.artifactServer || usesRealArtifactActions(mappings)) {
    args.push(
      '--artifact-server-path',
      opts.world.artifacts,
      '--artifact-server-addr',
      '127.0.0.1',
      '--artifact-server-port',
      String(await freePort()),
    );
  }
  for (const [k, v] of Object.entries(opts.inputs ?? {})) args.push('--input', `${k}=${v}`);
  for (const [k, v] of Object.entries(opts.secrets ?? {})) args.push('--secret', `${k}=${v}`);
  for (const [k, v] of Object.entries(opts.vars ?? {})) args.push('--var', `${k}=${v}`);

  const logFile = join(dir, 'act.jsonl');
  const fd = openSync(logFile, 'w');
  const code = await new Promise<number>((resolve, reject) => {
    const child = spawn(opts.act, args, {
      cwd: opts.repo,
      env: opts.world.env(),
      stdio: ['ignore', fd, fd],
      detached: true,
    });
    const timer = setTimeout(() => {
      // The whole process group act started (its jobs' steps included), and nothing else.
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    }, opts.timeoutMs ?? 600_000);
    child.once('error', reject);
    child.once('exit', (c, signal) => {
      clearTimeout(timer);
      resolve(c ?? (signal ? 128 : 1));
    });
  });
  closeSync(fd);
  return new ActRun(code, logFile, opts.runId);
}

export interface HandOver {
  /** The consuming job, and the expression it evaluated (`needs.<job>.outputs.<name>`, `||`-joined). */
  to: string;
  expression: string;
  /** What the consuming job saw. */
  seen: string;
  /** What the producing jobs' declared outputs were, from their steps' outputs. */
  sent: string;
}

/**
 * Every hand-over of job outputs in a run: each `needs.<job>.outputs.<name>` expression (alone or
 * `||`-joined) a job evaluated, with the value it saw and the value the producing job's `outputs:`
 * declaration gives from what its steps set (`steps.<id>.outputs.<name>`, alone or `||`-joined).
 */
export function handOvers(run: ActRun, workflowFile: string): HandOver[] {
  const workflow = parseYaml(readFileSync(workflowFile, 'utf8')) as {
    jobs: Record<string, { outputs?: Record<string, string> }>;
  };
  const alternatives = (expression: string, pattern: RegExp): RegExpExecArray[] | undefined => {
    const parts = expression.split('||').map((p) => pattern.exec(p.trim()));
    return parts.every((p) => p !== null) ? (parts as RegExpExecArray[]) : undefined;
  };
  const sent = (job: string, name: string): string => {
    const declared = workflow.jobs[job]?.outputs?.[name];
    const inner = declared && /^\$\{\{\s*(.*?)\s*\}\}$/s.exec(declared)?.[1];
    const steps = inner && alternatives(inner, /^steps\.([\w-]+)\.(?:outputs\.([\w-]+)|(outcome))$/);
    if (!steps) {
      throw new Error(
        `${workflowFile}: jobs.${job}.outputs.${name} is not steps.*.outputs.* or steps.*.outcome (${declared})`,
      );
    }
    const value = ([, step, out]: RegExpExecArray) =>
      out === undefined ? run.outcome(job, step!) : (run.output(job, out, step!) ?? '');
    return steps.map(value).find((v) => v !== '') ?? '';
  };
  return Object.keys(workflow.jobs).flatMap((to) =>
    run.evaluations(to).flatMap(({ expression, value }) => {
      const needs = alternatives(expression, /^needs\.([\w-]+)\.outputs\.([\w-]+)$/);
      if (!needs) return [];
      const values = needs.map(([, job, name]) => sent(job!, name!));
      return [{ to, expression, seen: value, sent: values.find((v) => v !== '') ?? '' }];
    }),
  );
}
