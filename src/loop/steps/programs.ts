/**
 * The split between the code under test and the numbers that decide (docs/security.md, "The
 * measurement"): two kinds of job, both built here, run on whatever backend the step uses.
 *
 * - **export** runs `python -m <programs.module> export` in an arm's working tree. It is the only job
 *   that imports the arm's code; it writes `jax.export` programs and a manifest, and nothing else of it
 *   is read: its exit code and log only explain a failure.
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
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { type Backend, VERIFIER_CACHE_KEY } from '../../compute/index.js';
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
import { InfraFailure, Interrupted } from './failures.js';
import { jobId } from './naming.js';

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

/** The draw of this iteration's matrix, made once and kept in the evidence (0 outside an iteration:
 * only the timed programs are exported there, whose shapes no draw changes). */
export function iterationDraw(ev: IterationEvidence | { iteration: number }): number {
  if (!('gates' in ev)) return 0;
  ev.draw ??= newDraw();
  return ev.draw;
}

export function exportCommand(ctx: LoopContext, platform: Platform, draw: number, only?: 'bench'): string[] {
  const p = ctx.target.programs;
  return [
    '{python}',
    '-m',
    p.module,
    'export',
    '--platform',
    platform,
    '--draw',
    String(draw),
    ...(only ? ['--only', only] : []),
    '--out',
    '{programs}',
    '--',
    ...p.args,
  ];
}

export interface VerifyOptions {
  mode: VerifyMode;
  platform: Platform;
  draw: number;
  arms: ArmName[];
  /** measure: rounds in this session. */
  rounds?: number;
  /** Timed calls per round and program (profile: before the traced steps). */
  repeats: number;
  warmup: number;
  /** profile: write the trace to {trace}. */
  trace?: boolean;
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

export type ExportOutcome = ExportEvidence;

/**
 * Export one arm's programs from `workdir` (a checkout of `commit`) into `dest` (emptied first). An
 * export that fails is the arm's failure (`status: failed`, its last error line as the reason); a job
 * that could not run is infrastructure (throws).
 */
export async function exportPrograms(
  ctx: LoopContext,
  ev: IterationEvidence | { iteration: number },
  o: {
    backend: Backend;
    workdir: string;
    commit: string;
    platform: Platform;
    draw: number;
    only?: 'bench';
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
  const result = await o.backend.run({
    id: jobId(ctx.runId, ev, 'export', o.name, Date.now()),
    command: exportCommand(ctx, o.platform, o.draw, o.only),
    workdir: o.workdir,
    timeoutMs: ctx.target.programs.timeout_minutes * MINUTE_MS,
    outputs: { programs: o.dest },
    logFile: o.logFile,
    signal: ctx.signal,
    // The code's own compile cache: never the champion's, never the verifier's.
    cacheKey: await ctx.git.treeHash(o.commit),
  });
  if (result.isolation && 'gates' in ev)
    recordIsolation(ev, o.step, { mode: result.isolation, job: ctx.job });
  if (result.killedBy === 'abort') throw new Interrupted('export cancelled');
  if (result.infraError) throw new InfraFailure(`export of ${o.name} could not run: ${result.infraError}`);
  const done = {
    platform: o.platform,
    dir: o.record.dir,
    logFile: o.record.logFile,
    durationMs: result.durationMs,
  };
  const failed = (reason: string): ExportOutcome => ({ status: 'failed', reason, ...done });
  if (result.killedBy) return failed(`the export timed out after ${ctx.target.programs.timeout_minutes} min`);
  if (result.exitCode !== 0) {
    return failed(
      `the export exited ${result.exitCode}: ${lastErrorLine(o.logFile) ?? `see ${o.record.logFile}`}`,
    );
  }
  if (!existsSync(join(o.dest, 'manifest.json')))
    return failed('the export wrote no programs (no manifest.json)');
  return { status: 'passed', ...done };
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

async function verifierTree(
  ctx: LoopContext,
  commit: string,
  name: string,
  programs: Partial<Record<ArmName, string>>,
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
 * Run the verifier over `programs` (arm → the folder of its export) with the harness of `harness` (a
 * commit whose protected paths are the ones the candidate was guarded against: the champion). The
 * session document lands at `sessionFile`.
 */
export async function runVerifier(
  ctx: LoopContext,
  ev: IterationEvidence | { iteration: number },
  o: VerifyOptions & {
    backend: Backend;
    harness: string;
    programs: Partial<Record<ArmName, string>>;
    sessionFile: string;
    logFile: string;
    traceDir?: string;
    name: string;
    step: 'cpu-gate' | 'accelerator-gate' | 'measure' | 'profile';
  },
): Promise<VerifierRun> {
  const tree = await oneAtATime(() => verifierTree(ctx, o.harness, o.name, o.programs));
  rmSync(o.sessionFile, { force: true });
  rmSync(o.logFile, { force: true });
  if (o.traceDir) rmSync(o.traceDir, { recursive: true, force: true });
  const timeout = ctx.target.bench.timeout_minutes;
  const result = await o.backend.run({
    id: jobId(ctx.runId, ev, 'verify', o.name, Date.now()),
    command: verifyCommand(ctx, o),
    workdir: tree,
    timeoutMs: timeout * MINUTE_MS,
    outputs: { metrics: o.sessionFile, ...(o.traceDir ? { trace: o.traceDir } : {}) },
    logFile: o.logFile,
    signal: ctx.signal,
    cacheKey: VERIFIER_CACHE_KEY,
    include: [VERIFIER_PROGRAMS_DIR],
  });
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
  if (result.exitCode !== 0 || !existsSync(o.sessionFile)) {
    throw new InfraFailure(
      `the verifier exited ${result.exitCode} without a session: ${lastErrorLine(o.logFile) ?? `see ${log}`}`,
    );
  }
  try {
    return { session: await readSession(o.sessionFile), durationMs: result.durationMs };
  } catch (e) {
    throw new InfraFailure(`the verifier's session is unreadable: ${errorMessage(e)}`);
  }
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
