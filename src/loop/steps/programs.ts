/**
 * The split between the code under test and the numbers that decide (docs/security.md, "The
 * measurement"): three kinds of job, all built here, run on whatever backend the step uses.
 *
 * - **requests** runs `python -E -s -m <programs.module> requests` in the verifier tree (no candidate
 *   code): the request file of the iteration's draw — every program's key and shapes, the JAX versions
 *   there, and nothing else (requestPlan).
 * - **export** runs `python -m <programs.module> export --requests …` in a fresh worktree of an arm's
 *   commit. It is the only job that imports the arm's code; it writes `jax.export` programs and a
 *   manifest, and nothing else of it is read: its exit code and log only explain a failure. Every export
 *   is arm-blind: the same command line, the same request file, the same environment, a worktree of
 *   neutral name made for it and removed after, a fresh empty {cache}, a job id that names neither arm
 *   nor step. An export can tell what it is asked to build, and nothing else.
 * - **verify** runs `python -E -s -m <programs.module> verify` in the *verifier tree*: the harness
 *   commit's files without the target's editable paths, plus the programs to check copied in as data.
 *   It never imports the code under test (it checks that itself), draws its own input seed, verifies
 *   every program against the reference and times exactly the programs it verified. Its session
 *   document (evidence/session.ts) is the only source of a gate's pass and of measured numbers. It gets
 *   a compile cache no export job is ever given (VERIFIER_CACHE_KEY; fresh per job on remote machines).
 *
 * The harness builds both commands: CPU pinning, the cache, the flags and the placeholders are its
 * choice, never the configuration's or the candidate's.
 */
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { type Backend, EPHEMERAL_CACHE_KEY, type JobSpec, VERIFIER_CACHE_KEY } from '../../compute/index.js';
import {
  type ExportEvidence,
  type IterationEvidence,
  readSession,
  recordIsolation,
  type Session,
} from '../../evidence/index.js';
import { errorMessage, tellingLogLine } from '../../util/index.js';
import { matchAny } from '../../workspace/index.js';
import type { LoopContext } from '../context.js';
import type { Bundle } from '../state/bundle.js';
import { worktreeAt } from '../state/worktrees.js';
import { ChampionFailure, InfraFailure, Interrupted, isProgramError } from './failures.js';
import { jobId } from './naming.js';
import {
  entryPointMissing,
  kernelLoadedInVerifier,
  missingModule,
  noStepHint,
  olderBenchHint,
  refusedFlag,
  type TargetFacts,
  type TargetProcess,
  targetModuleHint,
} from './target-mistakes.js';

const MINUTE_MS = 60_000;
export type ArmName = 'A' | 'B';
export type Platform = 'cpu' | 'tpu';
export const PLATFORMS: readonly Platform[] = ['cpu', 'tpu'];
export type VerifyMode = 'gate' | 'measure' | 'profile';

/** Where the verifier finds each arm's programs, relative to the verifier tree. */
export const VERIFIER_PROGRAMS_DIR = '.hillclimb-programs';
/** The files of an export the verifier tree receives: the manifest and the programs, nothing else. */
const PROGRAM_FILE = /^(manifest\.json|[A-Za-z0-9._=@-]+\.jaxexport)$/;
/** Bits of a draw: an exact JSON number. */
const DRAW_BITS = 53n;

/** A fresh draw of the correctness matrix's shapes (harness-made, per iteration). */
export function newDraw(): number {
  return Number(randomBytes(8).readBigUInt64BE() >> (64n - DRAW_BITS));
}

/** Where the caller keeps a draw that is not an iteration's (a champion's profile, a manual job). */
export interface DrawHolder {
  iteration: number;
  draw?: number;
}

/**
 * The draw of this iteration's matrix (or of a job outside an iteration), made once and kept: every
 * export of the iteration, both arms alike, is asked for the same programs.
 */
export function iterationDraw(ev: IterationEvidence | DrawHolder): number {
  ev.draw ??= newDraw();
  return ev.draw;
}

/** The environment of every job that runs candidate code, the test suite and the export alike. */
export const CANDIDATE_ENV: Readonly<Record<string, string>> = {
  // No source locations in lowered programs (the same code exported from two trees gives the same
  // bytes). Set here, not by the export, so the suite's process runs under the very same options.
  JAX_TRACEBACK_IN_LOCATIONS_LIMIT: '0',
};

/** The request file in an export's (and a gate suite's) working tree. */
export const REQUEST_FILE = '.hillclimb-request.json';

/** The one command line of every export: the same for both arms, every step, every run. */
export function exportCommand(ctx: LoopContext, platform: Platform): string[] {
  const p = ctx.target.programs;
  return [
    '{python}',
    '-m',
    p.module,
    'export',
    '--platform',
    platform,
    '--requests',
    REQUEST_FILE,
    '--out',
    '{programs}',
    '--',
    ...p.args,
  ];
}

/** What an iteration's exports are asked for on a platform: the requests step's file, read. */
export interface RequestPlan {
  platform: Platform;
  draw: number;
  /** The request file (the run's copy). */
  file: string;
  /** The program keys it asks for. */
  keys: string[];
  /** Python, JAX and jaxlib versions where it was written (the verifier's environment). */
  versions: Record<string, string>;
}

const REQUESTS_SCHEMA = 'hillclimb.requests/v1';

/**
 * The request file of `draw` for `platform`, written by the target's requests step in the verifier tree
 * of `harness` (no candidate code) on `backend`; made once per run and kept in the run's folder.
 */
export async function requestPlan(
  ctx: LoopContext,
  ev: IterationEvidence | DrawHolder,
  o: { backend: Backend; harness: string; platform: Platform },
): Promise<RequestPlan> {
  const draw = iterationDraw(ev);
  const p = ctx.target.programs;
  const key = createHash('sha256')
    .update(JSON.stringify([o.harness, o.platform, draw, o.backend.info().description, p.module, p.args]))
    .digest('hex')
    .slice(0, 20);
  const file = join(ctx.runDir, 'requests', `${key}.json`);
  const made = await onceAtATime(file, () => writePlan(ctx, ev, o, { file, key, draw }));
  // Kept in the evidence: a new champion's programs are kept under these versions.
  if ('gates' in ev) ev.requests = { ...ev.requests, [made.platform]: { draw, versions: made.versions } };
  return made;
}

async function writePlan(
  ctx: LoopContext,
  ev: IterationEvidence | DrawHolder,
  o: { backend: Backend; harness: string; platform: Platform },
  { file, key, draw }: { file: string; key: string; draw: number },
): Promise<RequestPlan> {
  const p = ctx.target.programs;
  if (!existsSync(file)) {
    const log = join(ctx.runDir, 'requests', `${key}.log`);
    // A tree of this plan's own: another plan (a search's other candidate) may be made at the same time.
    const tree = await oneAtATime(() => verifierTree(ctx, o.harness, `requests-${key.slice(0, 8)}`, {}));
    const result = await o.backend
      .run({
        id: jobId(ctx.runId, ev, 'requests', o.platform, Date.now()),
        command: [
          '{python}',
          '-E',
          '-s',
          '-m',
          p.module,
          'requests',
          '--draw',
          String(draw),
          '--out',
          '{metrics}',
          '--',
          ...p.args,
        ],
        workdir: tree,
        timeoutMs: p.timeout_minutes * MINUTE_MS,
        outputs: { metrics: `${file}.part` },
        logFile: log,
        signal: ctx.signal,
        cacheKey: VERIFIER_CACHE_KEY,
      })
      // One plan per iteration and platform: its tree goes when it is written.
      .finally(() => oneAtATime(() => removeExportTree(ctx, tree)));
    if (result.killedBy === 'abort') throw new Interrupted('requests cancelled');
    // A dry run printed the command: the steps after it print theirs with an empty request file.
    if (ctx.dryRun && result.infraError?.startsWith('dry run')) {
      mkdirSync(join(ctx.runDir, 'requests'), { recursive: true });
      writeFileSync(`${file}.dry-run`, `${JSON.stringify({ schema: REQUESTS_SCHEMA, requests: [] })}\n`);
      return { platform: o.platform, draw, file: `${file}.dry-run`, keys: [], versions: {} };
    }
    if (result.infraError) throw new InfraFailure(`the requests step could not run: ${result.infraError}`);
    if (result.exitCode !== 0 || !existsSync(`${file}.part`)) {
      const text = readLog(log);
      // Exit 0 without the file (a remote backend that lost it says so as infraError): the module ran
      // and ran no step.
      const noStep = result.exitCode === 0;
      const why = noStep
        ? `the target module's requests step (${p.module}) wrote no request file (exit 0)`
        : `the target module's requests step (${p.module}) exited ${result.exitCode}: ${lastErrorLine(log) ?? `see ${log}`}`;
      if (result.exitCode === 2 || noStep || isProgramError(text) || entryPointMissing(text, p.module)) {
        const mistake = noStep
          ? noStepHint(await targetFacts(ctx, o.harness))
          : await mistakeHint(ctx, 'requests', text, o.harness);
        throw new ChampionFailure(why, {
          hint: `${mistake ? `${mistake}; ` : ''}the harness fails without any candidate (targets.${ctx.target.name}.programs.module: ${p.module}); fix it, commit, and run again (the whole log: ${log})`,
        });
      }
      throw new InfraFailure(why, { hint: `check the machine; the step's log: ${log}` });
    }
    cpSync(`${file}.part`, file);
    rmSync(`${file}.part`, { force: true });
  }
  return readPlan(file, o.platform, draw);
}

function readPlan(file: string, platform: Platform, draw: number): RequestPlan {
  let doc: { schema?: unknown; versions?: unknown; requests?: unknown };
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new InfraFailure(`the request file ${file} is unreadable: ${errorMessage(e)}`);
  }
  const requests = Array.isArray(doc.requests) ? doc.requests : [];
  const keys = requests
    .map((r: { key?: unknown }) => r?.key)
    .filter((k): k is string => typeof k === 'string');
  if (doc.schema !== REQUESTS_SCHEMA || keys.length === 0 || keys.length !== requests.length) {
    throw new InfraFailure(`${file} is not a request file of ${REQUESTS_SCHEMA} with its keys`);
  }
  const versions: Record<string, string> = {};
  if (doc.versions && typeof doc.versions === 'object') {
    for (const [k, v] of Object.entries(doc.versions)) if (typeof v === 'string') versions[k] = v;
  }
  return { platform, draw, file, keys, versions };
}

/**
 * A fresh worktree of `commit` for one export: a neutral name, the request file beside the code, no
 * trace of the step, the arm or an earlier export. The hill-climb log is left out: a champion's tree
 * holds its own log entry (the one file the harness adds on top of a winner), which would tell its
 * code it was promoted. Removed by `removeExportTree`.
 */
async function exportTree(ctx: LoopContext, commit: string, plan: RequestPlan): Promise<string> {
  const path = join(ctx.runDir, 'worktrees', `export-${randomBytes(6).toString('hex')}`);
  const wt = await worktreeAt(ctx, path, commit);
  rmSync(join(wt.root, ctx.config.paths.log_file), { force: true });
  writeRequestFile(wt.root, plan);
  return wt.root;
}

/** The request file into a tree, never through a link a commit could have put there. */
function writeRequestFile(root: string, plan: RequestPlan): void {
  const file = join(root, REQUEST_FILE);
  rmSync(file, { force: true, recursive: true });
  writeFileSync(file, readFileSync(plan.file), { flag: 'wx' });
}

/** Remove a worktree made for one job (an export's, a plan's). */
async function removeExportTree(ctx: LoopContext, path: string): Promise<void> {
  await ctx.git.removeWorktree(path).catch(() => rmSync(path, { recursive: true, force: true }));
}

/** Put the plan's request file in a gate suite's working tree (the witness reads it there). */
export function placeRequestFile(root: string, plan: RequestPlan): void {
  writeRequestFile(root, plan);
}

export interface VerifyOptions {
  mode: VerifyMode;
  platform: Platform;
  draw: number;
  /** The arms, in order: A and B, or (a screening session) the champion A and candidates C<slot>. */
  arms: string[];
  /** measure: rounds in this session. */
  rounds?: number;
  /** Timed calls per round and program (profile: before the traced steps). */
  repeats: number;
  /** measure: more calls for a program whose `repeats` calls take less (bench.min_time_ms); 0 or absent: none. */
  minTimeMs?: number;
  warmup: number;
  /** profile: write the trace to {trace}. */
  trace?: boolean;
}

/**
 * The calls of a timed session, from the target's bench: every session that times (a measurement, the
 * shared screen, the agent's `screen` tool) takes them from here, so all of them time alike.
 */
export function timedCalls(ctx: LoopContext): Pick<VerifyOptions, 'repeats' | 'minTimeMs' | 'warmup'> {
  const { repeats, min_time_ms, warmup } = ctx.target.bench;
  return { repeats, minTimeMs: min_time_ms, warmup };
}

export function verifyCommand(ctx: LoopContext, o: VerifyOptions): string[] {
  const p = ctx.target.programs;
  return [
    '{python}',
    // No PYTHON* variables, no user site-packages: the harness alone decides what this process loads.
    '-E',
    '-s',
    '-m',
    p.module,
    'verify',
    '--mode',
    o.mode,
    '--platform',
    o.platform,
    '--draw',
    String(o.draw),
    ...o.arms.flatMap((arm) => ['--arm', `${arm}=${VERIFIER_PROGRAMS_DIR}/${arm}`]),
    '--out',
    '{metrics}',
    '--rounds',
    String(o.rounds ?? 1),
    '--repeats',
    String(o.repeats),
    '--warmup',
    String(o.warmup),
    ...(o.mode === 'measure' && (o.minTimeMs ?? 0) > 0 ? ['--min-time-ms', String(o.minTimeMs)] : []),
    '--compile-cache',
    '{cache}',
    // On a CPU, timings are taken on one core (XLA:CPU's thread pool stalls on a busy machine); a gate
    // only verifies, so it keeps every core.
    ...(o.platform === 'cpu' && o.mode !== 'gate' ? ['--pin-cpu'] : []),
    ...(o.trace ? ['--trace', '{trace}'] : []),
    '--',
    ...p.args,
  ];
}

/**
 * Bounds on a verifier command another job sends (the tools relay): the tools' sessions have one or two
 * arms (a check's, a screen's champion and tree) and at most 10 rounds (`screen`'s own limit).
 */
export const VERIFY_LIMITS = {
  arms: 2,
  rounds: 10,
  repeats: 10_000,
  warmup: 1_000,
  minTimeMs: 60_000,
} as const;
const ARM_NAME = /^[A-Z][A-Za-z0-9]{0,15}$/;
const MODES: readonly VerifyMode[] = ['gate', 'measure', 'profile'];

/**
 * The options of a verifier command, when `argv` is exactly what verifyCommand builds for them with
 * this context's target (its module and arguments) on `platform`: any other word, order, value or
 * bound, and the answer is why not. The tools relay's server runs only commands it rebuilt from these.
 */
export function parseVerifyCommand(
  ctx: LoopContext,
  argv: readonly unknown[],
  platform: Platform,
): VerifyOptions | string {
  if (!argv.every((a): a is string => typeof a === 'string' && a.length <= 4096) || argv.length > 200) {
    return 'the command is not a short list of words';
  }
  // The verifier's own words come before `--`; the target's arguments after it are the config's, and
  // the word-for-word comparison below holds them to it.
  const end = argv.indexOf('--');
  const own = end === -1 ? argv : argv.slice(0, end);
  const value = (flag: string): string | undefined => {
    const i = own.indexOf(flag);
    return i >= 0 && i + 1 < own.length ? own[i + 1] : undefined;
  };
  const integer = (flag: string, max: number): number | string => {
    const v = value(flag);
    if (v === undefined || !/^(0|[1-9][0-9]{0,15})$/.test(v)) return `${flag} is not a whole number`;
    const n = Number(v);
    return Number.isSafeInteger(n) && n <= max ? n : `${flag} ${v} is over ${max}`;
  };
  const mode = value('--mode') as VerifyMode | undefined;
  if (mode === undefined || !MODES.includes(mode)) return '--mode is not gate, measure or profile';
  if (value('--platform') !== platform) return `--platform is not ${platform}, this machine's`;
  const draw = integer('--draw', Number.MAX_SAFE_INTEGER);
  const rounds = integer('--rounds', VERIFY_LIMITS.rounds);
  const repeats = integer('--repeats', VERIFY_LIMITS.repeats);
  const warmup = integer('--warmup', VERIFY_LIMITS.warmup);
  const minTimeMs = own.includes('--min-time-ms') ? integer('--min-time-ms', VERIFY_LIMITS.minTimeMs) : 0;
  for (const n of [draw, rounds, repeats, warmup, minTimeMs]) if (typeof n === 'string') return n;
  const arms: string[] = [];
  for (let i = 0; i < own.length; i++) {
    if (own[i] !== '--arm') continue;
    const [arm, dir] = (own[i + 1] ?? '').split('=');
    if (arm === undefined || !ARM_NAME.test(arm) || dir !== `${VERIFIER_PROGRAMS_DIR}/${arm}`) {
      return `--arm ${JSON.stringify(own[i + 1] ?? '').slice(0, 60)} is not NAME=${VERIFIER_PROGRAMS_DIR}/NAME`;
    }
    if (arms.includes(arm)) return `arm ${arm} is named twice`;
    arms.push(arm);
  }
  if (arms.length === 0 || arms.length > VERIFY_LIMITS.arms) return `not 1 to ${VERIFY_LIMITS.arms} arms`;
  const opts: VerifyOptions = {
    mode,
    platform,
    draw: draw as number,
    arms,
    rounds: rounds as number,
    repeats: repeats as number,
    warmup: warmup as number,
    ...(minTimeMs !== 0 ? { minTimeMs: minTimeMs as number } : {}),
    ...(own.includes('--trace') ? { trace: true } : {}),
  };
  const rebuilt = verifyCommand(ctx, opts);
  const same = rebuilt.length === argv.length && rebuilt.every((w, i) => w === argv[i]);
  return same ? opts : "the command is not the verifier's, word for word, for this target";
}

export type ExportOutcome = ExportEvidence;

/**
 * Export one arm's programs of `commit` into `dest` (emptied first), as the plan asks, arm-blind (see
 * the module doc). An export that fails is the arm's failure (`status: failed`, its last error line as
 * the reason); a job that could not run is infrastructure (throws).
 */
export async function exportPrograms(
  ctx: LoopContext,
  ev: IterationEvidence | DrawHolder,
  o: {
    backend: Backend;
    commit: string;
    plan: RequestPlan;
    dest: string;
    logFile: string;
    /** Bundle-relative names recorded in the evidence. */
    record: { dir: string; logFile: string };
    name: string;
    step: 'cpu-gate' | 'accelerator-gate' | 'measure' | 'profile';
  },
): Promise<ExportOutcome> {
  rmSync(o.dest, { recursive: true, force: true });
  rmSync(o.logFile, { force: true });
  const platform = o.plan.platform;
  const tree = await oneAtATime(() => exportTree(ctx, o.commit, o.plan));
  let result: Awaited<ReturnType<Backend['run']>>;
  try {
    result = await o.backend.run({
      // Names the run only: nothing in it says which arm, step or iteration the export serves.
      id: `${ctx.runId}-export-${randomBytes(4).toString('hex')}`.replace(/[^A-Za-z0-9._-]/g, '_'),
      command: exportCommand(ctx, platform),
      workdir: tree,
      env: { ...CANDIDATE_ENV },
      timeoutMs: ctx.target.programs.timeout_minutes * MINUTE_MS,
      outputs: { programs: o.dest },
      logFile: o.logFile,
      signal: ctx.signal,
      // A fresh, empty {cache}, removed after: nothing an earlier export left can tell it anything.
      cacheKey: EPHEMERAL_CACHE_KEY,
      include: [REQUEST_FILE],
    });
  } finally {
    await oneAtATime(() => removeExportTree(ctx, tree));
  }
  if (result.isolation && 'gates' in ev)
    recordIsolation(ev, o.step, { mode: result.isolation, job: ctx.job });
  if (result.killedBy === 'abort') throw new Interrupted('export cancelled');
  const done = {
    platform,
    dir: o.record.dir,
    logFile: o.record.logFile,
    durationMs: result.durationMs,
  };
  if (result.infraError) throw new InfraFailure(`export of ${o.name} could not run: ${result.infraError}`);
  const failed = (reason: string): ExportOutcome => ({ status: 'failed', reason, ...done });
  if (result.killedBy) return failed(`the export timed out after ${ctx.target.programs.timeout_minutes} min`);
  if (result.exitCode !== 0) {
    const mistake = await mistakeHint(ctx, 'export', readLog(o.logFile), o.commit);
    return failed(
      `the export exited ${result.exitCode}: ${lastErrorLine(o.logFile) ?? `see ${o.record.logFile}`}${mistake ? `; ${mistake}` : ''}`,
    );
  }
  if (!existsSync(join(o.dest, 'manifest.json')))
    return failed('the export wrote no programs (no manifest.json)');
  return { status: 'passed', ...done };
}

/**
 * What to change in the target module when its process in `commit`'s tree failed with `log`
 * (target-mistakes.ts), if the log shows a known mistake; the tree is listed only then.
 */
export async function mistakeHint(
  ctx: LoopContext,
  process: TargetProcess,
  log: string,
  commit: string,
): Promise<string | undefined> {
  const known =
    missingModule(log) !== undefined ||
    kernelLoadedInVerifier(log) ||
    entryPointMissing(log, ctx.target.programs.module);
  return known ? targetModuleHint(process, log, await targetFacts(ctx, commit)) : undefined;
}

/** What the target-mistake hints need to know of the target and `commit`'s tree. */
export async function targetFacts(ctx: LoopContext, commit: string): Promise<TargetFacts> {
  return {
    target: ctx.target.name,
    module: ctx.target.programs.module,
    files: (await ctx.git.listFiles(commit)).map((f) => f.path),
    requirements: ctx.config.paths.requirements,
  };
}

function readLog(file: string): string {
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
}

/** The most telling line of a failed step's log: its own `failed:`/error line, else the last line. */
export function lastErrorLine(logFile: string): string | undefined {
  return tellingLogLine(logFile, {
    skip: /^(?:\$|#) /,
    telling: [/\b(failed|error|Error)\b[:]/],
    orLast: true,
  })?.slice(0, 800); // long enough for a message with two paths and its hint
}

/** The verifier's tree for a harness commit: a fresh worktree without the editable paths. */
export function verifierTreePath(ctx: LoopContext, commit: string, name: string): string {
  return join(ctx.runDir, 'worktrees', `verifier-${commit.slice(0, 12)}-${name}`);
}

/**
 * Git work in the run's repository, one piece at a time: a search's agents (search.parallel_proposals)
 * and its screens (a backend with several machines) may run at once, and `git worktree add` of one
 * repository must not.
 */
let repositoryQueue: Promise<unknown> = Promise.resolve();
export function oneAtATime<T>(fn: () => Promise<T>): Promise<T> {
  const run = repositoryQueue.then(fn, fn);
  repositoryQueue = run.catch(() => undefined);
  return run;
}

/**
 * One run of `fn` per key at a time: callers asking for the same key while it runs share its result
 * (two screens that need the champion's programs, or the same request file, at once). Not a queue for
 * git work (oneAtATime): `fn` may itself queue some.
 */
const inFlight = new Map<string, Promise<unknown>>();
export function onceAtATime<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const running = inFlight.get(key) as Promise<T> | undefined;
  if (running) return running;
  const run = fn().finally(() => inFlight.delete(key));
  inFlight.set(key, run);
  return run;
}

async function verifierTree(
  ctx: LoopContext,
  commit: string,
  name: string,
  programs: Readonly<Record<string, string>>,
): Promise<string> {
  const path = verifierTreePath(ctx, commit, name);
  // Dirty after its last use (editable paths removed, programs added): worktreeAt re-creates it clean.
  const wt = await worktreeAt(ctx, path, commit);
  for (const { path: file } of await wt.listFiles(commit)) {
    if (matchAny(ctx.target.editable, file)) rmSync(join(wt.root, file), { force: true });
  }
  const into = join(wt.root, VERIFIER_PROGRAMS_DIR);
  rmSync(into, { recursive: true, force: true });
  for (const [arm, dir] of Object.entries(programs)) copyProgramFiles(dir, join(into, arm));
  return wt.root;
}

/** Copy an export's manifest and programs (nothing else it may have left there) into `dest`. */
export function copyProgramFiles(from: string, dest: string): void {
  mkdirSync(dest, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    if (entry.isFile() && PROGRAM_FILE.test(entry.name))
      cpSync(join(from, entry.name), join(dest, entry.name));
  }
}

export interface VerifierRun {
  session: Session;
  durationMs: number;
}

/** A verifier session that could not vouch for anything: timed out, or ended without its document. */
export class VerifierFailed extends Error {
  constructor(
    message: string,
    readonly timedOut: boolean,
  ) {
    super(message);
  }
}

/**
 * The signals by which a process dies of its own memory or code (a fault, an abort): the only ones a
 * candidate's programs are blamed for. A SIGKILL or SIGTERM is the OOM killer's or someone else's.
 */
const FAULTS: Record<number, string> = {
  4: 'SIGILL',
  6: 'SIGABRT',
  7: 'SIGBUS',
  8: 'SIGFPE',
  11: 'SIGSEGV',
  31: 'SIGSYS',
};

/**
 * The verifier died of a fault (FAULTS). Whose fault it is, the step decides (crashProbe). A death
 * by any other signal is a plain InfraFailure.
 */
export class VerifierCrashed extends InfraFailure {
  readonly signal: string;

  constructor(signal: string, exitCode: number, line: string) {
    super(`the verifier died by ${signal} (exit ${exitCode}): ${line}`);
    this.signal = signal;
  }
}

/**
 * After a crash with the candidate's programs in the session: whose fault it is. `again` runs the
 * same session once more: when it ends cleanly the crash was not the programs' doing (rethrown, as
 * infrastructure: the step is retried). `champion` runs the same kind of session over the champion's
 * programs alone: when that ends cleanly, or cannot run at all, the candidate's programs are what
 * crashed the verifier (twice), and the reason says so; when it crashes too, the machine is at fault.
 */
export async function crashProbe(
  crash: VerifierCrashed,
  probes: { again: () => Promise<unknown>; champion: () => Promise<unknown> },
): Promise<string> {
  try {
    await probes.again();
  } catch (e) {
    if (!(e instanceof VerifierCrashed)) throw e;
    try {
      await probes.champion();
    } catch (c) {
      if (c instanceof VerifierCrashed) throw crash;
      return `the candidate's programs crashed the verifier twice (${crash.signal}), and the champion's could not be checked (${errorMessage(c)}): ${crash.message}`;
    }
    return `the candidate's programs crashed the verifier twice (${crash.signal}), which runs the champion's cleanly: ${crash.message}`;
  }
  throw crash; // not again: the machine's, this time
}

/**
 * Run the verifier over `programs` (arm → the folder of its export) with the harness of `harness` (a
 * commit whose protected paths are the ones the candidate was guarded against: the champion). The
 * session document lands at `sessionFile`.
 */
/** Where a verifier session's programs come from and its outputs go. */
export interface VerifierPlaces {
  /** The harness's commit: the verifier tree is its files, the editable paths removed. */
  harness: string;
  /** Each arm's exported programs. */
  programs: Readonly<Record<string, string>>;
  sessionFile: string;
  logFile: string;
  traceDir?: string;
  /** Names the verifier tree (one per concurrent use). */
  name: string;
}

/**
 * The job of one verifier session: the harness's tree with the arms' programs in it, and the verifier's
 * command. Old outputs are removed first. runVerifier runs it; the tools relay's server builds its jobs
 * here too, from the options it parsed, never from a command it was sent.
 */
export async function verifierJob(
  ctx: LoopContext,
  ev: IterationEvidence | { iteration: number },
  o: VerifyOptions & VerifierPlaces,
): Promise<JobSpec> {
  const tree = await oneAtATime(() => verifierTree(ctx, o.harness, o.name, o.programs));
  rmSync(o.sessionFile, { force: true });
  rmSync(o.logFile, { force: true });
  if (o.traceDir) rmSync(o.traceDir, { recursive: true, force: true });
  return {
    id: jobId(ctx.runId, ev, 'verify', o.name, Date.now()),
    command: verifyCommand(ctx, o),
    workdir: tree,
    timeoutMs: ctx.target.bench.timeout_minutes * MINUTE_MS,
    outputs: { metrics: o.sessionFile, ...(o.traceDir ? { trace: o.traceDir } : {}) },
    logFile: o.logFile,
    signal: ctx.signal,
    cacheKey: VERIFIER_CACHE_KEY,
    include: [VERIFIER_PROGRAMS_DIR],
  };
}

export async function runVerifier(
  ctx: LoopContext,
  ev: IterationEvidence | { iteration: number },
  o: VerifyOptions &
    VerifierPlaces & {
      backend: Backend;
      step: 'cpu-gate' | 'accelerator-gate' | 'measure' | 'profile';
    },
): Promise<VerifierRun> {
  const timeout = ctx.target.bench.timeout_minutes;
  const job = await verifierJob(ctx, ev, o);
  const result = await o.backend.run(job);
  if (result.isolation && 'gates' in ev)
    recordIsolation(ev, o.step, { mode: result.isolation, job: ctx.job });
  if (result.killedBy === 'abort') throw new Interrupted('verifier cancelled');
  if (result.infraError) throw new InfraFailure(`the verifier could not run: ${result.infraError}`);
  const log = relative(ctx.runDir, o.logFile);
  if (result.killedBy) {
    throw new VerifierFailed(
      `the verifier session timed out after ${timeout} min (bench.timeout_minutes)`,
      true,
    );
  }
  // The verifier's own exits are 0, 2 and 3: 128 + n is a signal (the sandbox's init reports it so).
  const fault = result.exitCode !== null ? FAULTS[result.exitCode - 128] : undefined;
  if (fault !== undefined) {
    throw new VerifierCrashed(fault, result.exitCode!, lastErrorLine(o.logFile) ?? `see ${log}`);
  }
  if (result.exitCode !== 0 || !existsSync(o.sessionFile)) {
    const why = `the verifier exited ${result.exitCode} without a session: ${lastErrorLine(o.logFile) ?? `see ${log}`}`;
    // The verifier runs the harness's tree alone: the kernel loaded there, or a module it cannot
    // import, is the target module's mistake, the same on every try.
    const text = readLog(o.logFile);
    // A flag this hillclimb sent, refused as unknown (exit 2): the command line's refusal, given before
    // any program is loaded, the same on every try with or without a candidate.
    const sent = job.command.slice(0, job.command.indexOf('--'));
    const flag = result.exitCode === 2 ? refusedFlag(text, sent) : undefined;
    if (flag !== undefined) {
      throw new ChampionFailure(why, {
        hint: `${olderBenchHint(flag, { target: ctx.target.name, requirements: ctx.config.paths.requirements })} (the whole log: ${o.logFile})`,
      });
    }
    if (kernelLoadedInVerifier(text) || (isProgramError(text) && missingModule(text) !== undefined)) {
      const mistake = await mistakeHint(ctx, 'verify', text, o.harness);
      throw new ChampionFailure(why, {
        hint: `${mistake ? `${mistake}; ` : ''}the harness fails without any candidate (targets.${ctx.target.name}.programs.module: ${ctx.target.programs.module}); fix it, commit, and run again (the whole log: ${o.logFile})`,
      });
    }
    throw new InfraFailure(why);
  }
  try {
    return { session: await readSession(o.sessionFile), durationMs: result.durationMs };
  } catch (e) {
    throw new InfraFailure(`the verifier's session is unreadable: ${errorMessage(e)}`);
  }
}

/**
 * A gate session: the verifier checks one arm's exported programs over the matrix of `draw` (no timing:
 * one repeat, no warm-up). The gate, its crash probe, `hillclimb check` and the agent's `check` tool.
 */
export function runGateSession(
  ctx: LoopContext,
  ev: IterationEvidence | { iteration: number },
  o: {
    platform: Platform;
    draw: number;
    arm: 'A' | 'B';
    programs: string;
    backend: Backend;
    harness: string;
    sessionFile: string;
    logFile: string;
    name: string;
    step: 'cpu-gate' | 'accelerator-gate';
  },
): Promise<VerifierRun> {
  const { arm, programs, ...rest } = o;
  return runVerifier(ctx, ev, {
    ...rest,
    mode: 'gate',
    arms: [arm],
    repeats: 1,
    warmup: 0,
    programs: { [arm]: programs },
  });
}

/** Where a bundle keeps an arm's programs for a platform, and the export's log. */
export const ProgramFiles = {
  dir: (arm: ArmName, platform: Platform) => `programs/${arm}-${platform}`,
  exportLog: (arm: ArmName, platform: Platform) => `programs/export-${arm}-${platform}.log`,
  session: (name: string) => `verify/${name}.session.json`,
  verifyLog: (name: string) => `verify/${name}.log`,
};

/** The absolute paths of an arm's programs in a bundle. */
export function bundlePrograms(bundle: Bundle, arm: ArmName, platform: Platform): string {
  return bundle.path(ProgramFiles.dir(arm, platform));
}
