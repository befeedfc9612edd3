/**
 * `hillclimb loop`: N iterations against one target, each starting from the current champion. Picks the
 * backends once from config, journals every step, promotes the champion only on `improved`, stops on the
 * failure budget or when the loop is stuck, and always releases what it acquired (TPU, worktrees, a
 * stash of the user's changes). `--resume` continues a killed run without repeating finished work.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { checkModelApi } from '../../agent/index.js';
import {
  type ConfigOverrides,
  type HillclimbConfig,
  loadConfig,
  selectTarget,
  type TargetConfig,
} from '../../config/index.js';
import { type IterationEvidence, STEPS, type Verdict } from '../../evidence/index.js';
import { openProcessLedger, sweepProcessLedger } from '../../exec/index.js';
import { ExitCode, errorMessage, HillclimbError, type Logger, takeLock } from '../../util/index.js';
import { Git } from '../../workspace/index.js';
import { configHash, type LoopContext, runDirOf, stateDirOf } from '../context.js';
import { openLoopContext } from '../open-context.js';
import { Bundle, iterationDirName } from '../state/bundle.js';
import { Journal, listRuns, newRunId, type RunEndReason, runProgress } from '../state/journal.js';
import { removeRunWorktrees } from '../state/worktrees.js';
import { failureSignature, Interrupted } from '../steps/failures.js';
import { type NewIteration, newEvidence, runIterationSteps } from '../steps/iteration.js';
import { checkSandbox, preflight } from './preflight.js';
import { candidateBundles, leadBundle, runSearchIteration, searchFinished } from './search.js';

export interface LoopOptions {
  configFile: string;
  /** Overrides of config keys (from CLI flags), validated like the file. */
  overrides?: ConfigOverrides;
  target?: string;
  /** Continue a run: its id, or true for the latest run. */
  resume?: string | true;
  /** Fixed run id for a new run (CI derives it from the workflow run). */
  runId?: string;
  dryRun?: boolean;
  logger: Logger;
  /** One line per step and iteration, for the terminal or the Actions log. */
  progress?: (line: string) => void;
  signal?: AbortSignal;
  /** Injected in tests to skip backoff waits. */
  sleep?: (ms: number) => Promise<void>;
}

export interface IterationOutcome {
  iteration: number;
  /** `dry-run` for a dry run's iteration, which printed its commands and has no verdict. */
  verdict: Verdict | 'dry-run';
  reason: string;
  subject: string | null;
  evidence: IterationEvidence;
  bundleDir: string;
  /** Every candidate of an iteration that proposed several (loop.candidates > 1), slot 1 first. */
  candidates?: IterationOutcome[];
}

export interface LoopResult {
  runId: string;
  runDir: string;
  stateDir: string;
  endReason: RunEndReason;
  message?: string;
  iterations: IterationOutcome[];
  champion: { commit: string; iteration: number | undefined };
  startCommit: string;
}

export async function runLoop(opts: LoopOptions): Promise<LoopResult> {
  const config = loadConfig(opts.configFile, resumedOverrides(opts) ?? opts.overrides);
  const target = selectTarget(config, opts.target);
  preflight(config, target, { agent: true, cpuGate: true, dryRun: opts.dryRun });
  await checkSandbox(config, opts.logger);
  // Before the lock and the champion's profile: a refused key or a wrong endpoint is found in seconds.
  if (!opts.dryRun) await checkModelApi(config.agent.kind, process.env, opts.logger);
  const stateDir = stateDirOf(config);
  const release = acquireLoopLock(stateDir);
  const closeLedger = trackProcesses(stateDir, opts.logger);
  try {
    return await runLocked(opts, config, target, stateDir);
  } finally {
    closeLedger();
    release();
  }
}

/**
 * The overrides a resumed run started with (its journal's run-start), or undefined for a new run. A
 * run continues with the configuration it began with: `-k 2` names the bundles (`i001-c2`) and `-n`
 * its length, so a resume without the flags must not quietly become another run. A flag given again
 * must say the same; a different value is refused, naming the key.
 */
function resumedOverrides(opts: LoopOptions): ConfigOverrides | undefined {
  if (opts.resume === undefined) return undefined;
  // The file alone (its values, where a flag was not given at the start); with the flags where the
  // file needs them to be valid.
  let fileConfig: HillclimbConfig;
  try {
    fileConfig = loadConfig(opts.configFile);
  } catch {
    fileConfig = loadConfig(opts.configFile, opts.overrides);
  }
  const stateDir = stateDirOf(fileConfig);
  const runId = opts.resume === true ? listRuns(stateDir).at(-1) : opts.resume;
  if (runId === undefined) return undefined; // startOrResume says there is nothing to resume
  const journal = new Journal(runDirOf(stateDir, runId));
  if (!existsSync(journal.file)) return undefined;
  const start = runProgress(journal.entries(), journal.file).start;
  const { dryRun: startedDry, ...started } = start.options;
  const refuse = (what: string, hint: string) =>
    new HillclimbError(`run ${runId} ${what}`, { hint, exitCode: ExitCode.badInput });
  // A dry run's steps are recorded as skipped: resumed for real it would measure nothing, and a real
  // run resumed as a dry one would end with its steps skipped for good.
  if (Boolean(startedDry) !== Boolean(opts.dryRun)) {
    throw refuse(
      startedDry
        ? 'was a dry run; --resume without --dry-run cannot make it real'
        : 'is a real run; it cannot be resumed with --dry-run',
      startedDry ? 'start a new run without --dry-run' : `resume it without --dry-run (${journal.file})`,
    );
  }
  if (opts.target !== undefined && opts.target !== start.target) {
    throw refuse(
      `is for target ${start.target}, not ${opts.target}`,
      'resume without --target, or start a new run',
    );
  }
  for (const [key, value] of Object.entries(opts.overrides ?? {})) {
    if (value === undefined) continue;
    const was = key in started ? started[key] : configValue(fileConfig, key);
    if (JSON.stringify(was) === JSON.stringify(value)) continue;
    throw refuse(
      `started with ${key} = ${JSON.stringify(was)}; --resume cannot change it to ${JSON.stringify(value)}`,
      `resume without that flag (the run keeps the settings it started with: ${journal.file}), or start a new run`,
    );
  }
  return started;
}

/** A config value by its dotted key (`loop.candidates`), as the file sets it (defaults applied). */
function configValue(config: HillclimbConfig, key: string): unknown {
  let value: unknown = config;
  for (const part of key.split('.')) {
    value =
      value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[part] : undefined;
  }
  return value;
}

/**
 * One loop at a time per repository: two loops on one machine would benchmark at the same time and
 * disturb each other's numbers, and two writers of one run would corrupt its journal. Held for the
 * whole run, so never taken over for its age, only when its process is gone.
 */
function acquireLoopLock(stateDir: string): () => void {
  const file = join(stateDir, 'loop.lock');
  return takeLock(file, {
    busy: (holder) =>
      new HillclimbError(
        `another hillclimb loop (pid ${holder?.pid ?? '?'}, started ${holder?.acquiredAt ?? '?'}) is running on this repository`,
        {
          hint: `two loops on one machine disturb each other's measurements: wait for it, or stop it and resume it later (hillclimb loop --resume); ${file} names it`,
          exitCode: ExitCode.failure,
        },
      ),
  });
}

/**
 * Under the loop lock: end what a killed loop left running (its ledger names the process groups it had
 * started), then keep this loop's own ledger until it ends.
 */
function trackProcesses(stateDir: string, logger: Logger): () => void {
  const file = join(stateDir, 'processes.json');
  const { ended } = sweepProcessLedger(file);
  if (ended.length > 0) {
    const list = ended.map((e) => `${e.pid} (${truncate(e.command, 80)})`).join(', ');
    logger.warn(`ended ${ended.length} process group(s) a killed hillclimb loop left running: ${list}`);
  }
  return openProcessLedger(file);
}

/** `text`, cut to `max` characters with an ellipsis. */
function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/**
 * The run, in its phases: start it (or pick it up from its journal), open the loop context, retry what
 * failed to publish earlier, run the iterations until done or stopped, and always end it in the journal
 * and release what it holds.
 */
async function runLocked(
  opts: LoopOptions,
  config: HillclimbConfig,
  target: TargetConfig,
  stateDir: string,
): Promise<LoopResult> {
  const git = await Git.create(config.root, { logger: opts.logger });
  const run = await startOrResume(opts, config, target, stateDir, git);
  const opened = await openLoopContext(config, {
    target,
    runId: run.runId,
    steps: STEPS,
    runStartedAt: run.runStartedAt,
    totalIterations: run.totalIterations,
    prepareMayProfile: true,
    logger: opts.logger,
    ...(opts.signal ? { signal: opts.signal } : {}),
    ...(opts.sleep ? { sleep: opts.sleep } : {}),
    dryRun: Boolean(opts.dryRun),
    git,
  }).catch(async (e: unknown) => {
    // Nothing was built to release, but the run has begun: end it in the journal and give the user
    // their stashed changes back, as a run that fails later does.
    run.journal.append({
      t: 'run-end',
      at: new Date().toISOString(),
      reason: 'fatal',
      message: errorMessage(e),
    });
    await restoreUserChanges(git, opts.logger, run.stashSha);
    throw e;
  });
  const { ctx, openBackends, close } = opened;
  const release = () => releaseRun(ctx, close, run.stashSha);
  const progressOut = opts.progress ?? ((l: string) => opts.logger.info(l));

  let ended: IterationsResult;
  try {
    await openBackends();
    await republishFailed(ctx, run.journal, progressOut);
    ended = await runIterations(ctx, run, progressOut);
  } catch (e) {
    const reason: RunEndReason = e instanceof Interrupted ? 'interrupted' : 'fatal';
    run.journal.append({ t: 'run-end', at: new Date().toISOString(), reason, message: errorMessage(e) });
    await release();
    throw e;
  }
  const message =
    ended.message ??
    (opts.dryRun
      ? 'dry run: compute commands were printed, not run; nothing was pushed, published or added to the history'
      : undefined);
  run.journal.append({
    t: 'run-end',
    at: new Date().toISOString(),
    reason: ended.endReason,
    ...(message ? { message } : {}),
  });
  await release();
  return {
    runId: run.runId,
    runDir: run.runDir,
    stateDir,
    endReason: ended.endReason,
    message,
    iterations: ended.outcomes,
    champion: ended.champion,
    startCommit: run.startCommit,
  };
}

/** Where a run stands when its iterations begin. */
interface RunStart {
  runId: string;
  runDir: string;
  journal: Journal;
  startCommit: string;
  runStartedAt: string;
  totalIterations: number;
  champion: LoopResult['champion'];
  /** The user's uncommitted changes, stashed for the run (a new run with `loop.dirty_tree: stash`). */
  stashSha?: string;
}

/** A new run (journalled, the user's changes stashed, synced with the base), or one resumed from its journal. */
async function startOrResume(
  opts: LoopOptions,
  config: HillclimbConfig,
  target: TargetConfig,
  stateDir: string,
  git: Git,
): Promise<RunStart> {
  const resumeId = opts.resume === true ? listRuns(stateDir).at(-1) : opts.resume;
  if (opts.resume !== undefined && resumeId === undefined) {
    throw new HillclimbError(`no run to resume under ${join(stateDir, 'runs')}`, {
      hint: 'start one with: hillclimb loop',
      exitCode: ExitCode.badInput,
    });
  }
  const runId = resumeId ?? opts.runId ?? newRunId();
  const runDir = runDirOf(stateDir, runId);
  const journal = new Journal(runDir);
  return resumeId !== undefined
    ? resumeRun(config, runId, runDir, journal, opts.logger)
    : startRun(opts, config, target, git, { runId, runDir, journal });
}

/** Pick a run up from its journal: same config, same start, the champion it had reached. */
function resumeRun(
  config: HillclimbConfig,
  runId: string,
  runDir: string,
  journal: Journal,
  logger: Logger,
): RunStart {
  if (!existsSync(journal.file)) {
    throw new HillclimbError(`no journal for run ${runId} at ${journal.file}`, {
      exitCode: ExitCode.badInput,
    });
  }
  const progress = runProgress(journal.entries(), journal.file);
  if (progress.start.config_hash !== configHash(config)) {
    throw new HillclimbError(`${config.file} changed since run ${runId} started`, {
      hint: 'resume with the configuration the run started with, or start a new run',
      exitCode: ExitCode.badInput,
    });
  }
  const totalIterations = progress.start.iterations;
  journal.append({
    t: 'resume',
    at: new Date().toISOString(),
    run: runId,
    from_iteration: progress.finished.size + 1,
  });
  logger.info(`resuming run ${runId}: ${progress.finished.size} of ${totalIterations} iterations finished`);
  return {
    runId,
    runDir,
    journal,
    startCommit: progress.start.start_commit,
    runStartedAt: progress.start.at,
    totalIterations,
    champion: progress.champion,
  };
}

/** Start a new run: apply loop.dirty_tree, sync with the base when asked, and journal its start. */
async function startRun(
  opts: LoopOptions,
  config: HillclimbConfig,
  target: TargetConfig,
  git: Git,
  run: Pick<RunStart, 'runId' | 'runDir' | 'journal'>,
): Promise<RunStart> {
  const stashSha = await applyDirtyTreePolicy(config, git, run.runId);
  let startCommit = await git.head();
  if (config.loop.sync_main !== 'off')
    startCommit = await syncWithBase(config, git, run.runDir, opts.logger, startCommit);
  const runStartedAt = new Date().toISOString();
  // A dry run walks one iteration: every later one would print the same commands.
  const totalIterations = opts.dryRun ? 1 : config.loop.iterations;
  run.journal.append({
    t: 'run-start',
    at: runStartedAt,
    run: run.runId,
    target: target.name,
    iterations: totalIterations,
    start_commit: startCommit,
    config_file: config.file,
    config_hash: configHash(config),
    options: { ...(opts.overrides ?? {}), ...(opts.dryRun ? { dryRun: true } : {}) },
  });
  return {
    ...run,
    startCommit,
    runStartedAt,
    totalIterations,
    champion: { commit: startCommit, iteration: undefined },
    ...(stashSha ? { stashSha } : {}),
  };
}

interface IterationsResult {
  outcomes: IterationOutcome[];
  endReason: RunEndReason;
  message?: string;
  champion: LoopResult['champion'];
}

/**
 * The iterations, each from the current champion: a finished one (resume) is only reported; the run
 * stops early on the failure budget or when it is stuck.
 */
async function runIterations(
  ctx: LoopContext,
  run: RunStart,
  progressOut: (line: string) => void,
): Promise<IterationsResult> {
  let champion = run.champion;
  const outcomes: IterationOutcome[] = [];
  const shouldStop = stopRule(ctx.config);
  const k = ctx.config.loop.candidates;
  for (let i = 1; i <= run.totalIterations; i++) {
    let bundle: Bundle;
    let candidates: IterationOutcome[] | undefined;
    if (k > 1) {
      // A search: k candidates, each a record of its own; the lead (the winner, if any) speaks for it.
      const bundles = candidateBundles(run.runDir, i, k);
      if (!searchFinished(bundles)) {
        champion = await runIteration(ctx, run.journal, bundles, i, champion, progressOut);
      }
      bundle = leadBundle(bundles);
      candidates = bundles.map((b) => outcomeOf(i, b));
    } else {
      bundle = new Bundle(join(run.runDir, iterationDirName(i)));
      const finished = bundle.exists() && bundle.load().steps.publish !== undefined;
      if (!finished) champion = await runIteration(ctx, run.journal, [bundle], i, champion, progressOut);
    }
    const ev = bundle.load();
    const verdict = ev.verdict ?? (ev.dryRun ? 'dry-run' : 'error');
    outcomes.push({ ...outcomeOf(i, bundle), ...(candidates ? { candidates } : {}) });
    const said = ev.dryRun && !ev.verdict ? 'dry run: no verdict (commands printed, not run)' : verdict;
    progressOut(
      `[${iterationDirName(i)} ${ctx.target.name}] ${said}${ev.verdictReasons[0] ? `: ${ev.verdictReasons[0]}` : ''}`,
    );
    const stop = shouldStop(ev);
    if (stop) return { outcomes, endReason: stop.endReason, message: stop.message, champion };
  }
  return { outcomes, endReason: 'completed', champion };
}

/** What the loop reports of an iteration's (or a candidate's) bundle. */
function outcomeOf(i: number, bundle: Bundle): IterationOutcome {
  const ev = bundle.load();
  return {
    iteration: i,
    verdict: ev.verdict ?? (ev.dryRun ? 'dry-run' : 'error'),
    reason: ev.verdictReasons[0] ?? '',
    subject: ev.candidate?.subject ?? null,
    evidence: ev,
    bundleDir: bundle.dir,
  };
}

/**
 * Run iteration `i` (or resume it at its first unfinished step) and journal its end; returns the
 * champion after it, which changes only on `improved`. One bundle: one candidate; several: a search
 * (./search.ts), decided by its lead.
 */
async function runIteration(
  ctx: LoopContext,
  journal: Journal,
  bundles: readonly Bundle[],
  i: number,
  championBefore: LoopResult['champion'],
  progressOut: (line: string) => void,
): Promise<LoopResult['champion']> {
  let champion = championBefore;
  if (!bundles[0]!.exists()) {
    if (i > 1 && ctx.config.loop.sync_main === 'each-iteration') {
      const synced = await syncWithBase(ctx.config, ctx.git, ctx.runDir, ctx.logger, champion.commit);
      if (synced !== champion.commit) {
        champion = { commit: synced, iteration: champion.iteration };
        journal.append({ t: 'champion', at: new Date().toISOString(), iteration: i - 1, commit: synced });
      }
    }
    journal.append({
      t: 'iteration-start',
      at: new Date().toISOString(),
      iteration: i,
      base_commit: champion.commit,
    });
  }
  const it: NewIteration = {
    iteration: i,
    base: {
      commit: champion.commit,
      ...(champion.iteration !== undefined ? { iteration: champion.iteration } : {}),
      ...(champion.iteration !== undefined
        ? { branch: branchOf(ctx.runDir, champion.iteration, ctx.config.loop.candidates) }
        : {}),
    },
  };
  let ev: IterationEvidence;
  if (bundles.length > 1) {
    ev = leadBundle(await runSearchIteration(ctx, journal, it, progressOut)).load();
  } else {
    const bundle = bundles[0]!;
    if (!bundle.exists()) bundle.save(newEvidence(ctx, it));
    ctx.progress = (line) => progressOut(`[${iterationDirName(i)} ${ctx.target.name}] ${line}`);
    ev = await runIterationSteps(ctx, bundle, journal);
  }
  const verdict = ev.verdict ?? 'error';
  journal.append({
    t: 'iteration-end',
    at: new Date().toISOString(),
    iteration: i,
    verdict,
    ...(ev.candidate ? { candidate_commit: ev.candidate.commit } : {}),
  });
  if (verdict === 'improved' && ev.candidate) {
    champion = { commit: ev.candidate.logCommit ?? ev.candidate.commit, iteration: i };
    journal.append({ t: 'champion', at: new Date().toISOString(), iteration: i, commit: champion.commit });
  }
  return champion;
}

/**
 * When the run stops before its last iteration: more consecutive errors than loop.failure_budget, or
 * the same failure signature loop.stuck_after times in a row (a human should look).
 */
function stopRule(
  config: HillclimbConfig,
): (ev: IterationEvidence) => { endReason: RunEndReason; message: string } | undefined {
  let consecutiveErrors = 0;
  const signatures: string[] = [];
  return (ev) => {
    const verdict = ev.verdict ?? 'error';
    consecutiveErrors = verdict === 'error' ? consecutiveErrors + 1 : 0;
    if (consecutiveErrors > config.loop.failure_budget) {
      return {
        endReason: 'failure-budget',
        message: `${consecutiveErrors} consecutive iterations ended in error (loop.failure_budget is ${config.loop.failure_budget})`,
      };
    }
    if (['error', 'invalid', 'no-op'].includes(verdict)) {
      signatures.push(failureSignature(verdict, ev.verdictReasons, ev.stoppedAt));
    } else signatures.length = 0;
    const last = signatures.slice(-config.loop.stuck_after);
    if (last.length === config.loop.stuck_after && new Set(last).size === 1) {
      return {
        endReason: 'stuck',
        message: `the last ${config.loop.stuck_after} iterations failed the same way (${verdict}: ${ev.verdictReasons[0] ?? ''}); a human should look`,
      };
    }
    return undefined;
  };
}

/** The branch of an earlier iteration of this run (where a stacked PR is based). */
function branchOf(runDir: string, iteration: number, k: number): string | undefined {
  const plain = new Bundle(join(runDir, iterationDirName(iteration)));
  if (plain.exists()) return plain.load().candidate?.branch;
  // A search's champion is its winner.
  const winner = candidateBundles(runDir, iteration, k).find(
    (b) => b.exists() && b.load().search?.role === 'winner',
  );
  return winner?.load().candidate?.branch;
}

/** Iterations whose record or publish step failed earlier get another try before the loop goes on. */
async function republishFailed(
  ctx: LoopContext,
  journal: Journal,
  progress: (l: string) => void,
): Promise<void> {
  const k = ctx.config.loop.candidates;
  for (let i = 1; i <= ctx.totalIterations; i++) {
    const bundles =
      k > 1 ? candidateBundles(ctx.runDir, i, k) : [new Bundle(join(ctx.runDir, iterationDirName(i)))];
    for (const bundle of bundles) {
      if (!bundle.exists()) continue;
      const ev = bundle.load();
      if (ev.steps.record?.status === 'failed' || ev.steps.publish?.status === 'failed') {
        ctx.progress = (line) => progress(`[${iterationDirName(ev)} ${ctx.target.name}] ${line}`);
        await runIterationSteps(ctx, bundle, journal, { only: ['record', 'publish'] });
      }
    }
  }
}

async function applyDirtyTreePolicy(
  config: HillclimbConfig,
  git: Git,
  runId: string,
): Promise<string | undefined> {
  if (await git.isClean()) return undefined;
  if (config.loop.dirty_tree === 'fail') {
    throw new HillclimbError(
      `${git.root} has uncommitted changes; they would not be part of the experiment`,
      {
        hint: 'commit or stash them, or set loop.dirty_tree: stash to have hillclimb stash and restore them',
        exitCode: ExitCode.failure,
      },
    );
  }
  return git.stashChanges(`hillclimb loop ${runId}: stashed uncommitted changes`);
}

/**
 * loop.sync_main: merge the remote base branch into `commit` in a scratch worktree (the user's checkout
 * is never touched) and return the merge commit. Already contained → `commit` unchanged. A fetch
 * failure or a conflict is reported and the loop goes on from `commit`.
 */
async function syncWithBase(
  config: HillclimbConfig,
  git: Git,
  runDir: string,
  logger: Logger,
  commit: string,
): Promise<string> {
  const remote = 'origin';
  const where = `${remote}/${config.forge.base}`;
  let fetched: string;
  try {
    fetched = await git.fetch(remote, config.forge.base);
  } catch (e) {
    logger.warn(`loop.sync_main: could not fetch ${where}: ${errorMessage(e)}; going on without it`);
    return commit;
  }
  if (await git.isAncestor(fetched, commit)) return commit;
  const path = join(runDir, 'worktrees', 'sync');
  await git.addWorktree(path, commit);
  try {
    const wt = await Git.create(path);
    const merged = await wt.merge(fetched);
    if (merged.status === 'conflict') {
      logger.warn(
        `loop.sync_main: merging ${where} conflicts in ${merged.paths.join(', ')}; going on without it`,
      );
      return commit;
    }
    logger.info(`loop.sync_main: merged ${where} (${fetched.slice(0, 12)})`);
    return merged.head;
  } finally {
    await git.removeWorktree(path);
  }
}

/**
 * Release everything the run acquired, whatever happened: the loop context (compute, worktrees), the
 * run's own worktrees, and the user's stashed changes. A problem is logged and the rest still runs.
 */
async function releaseRun(
  ctx: LoopContext,
  close: () => Promise<void>,
  stashSha: string | undefined,
): Promise<void> {
  await close();
  try {
    await removeRunWorktrees(ctx);
  } catch (e) {
    ctx.logger.warn(`cleanup: remove worktrees: ${errorMessage(e)}`);
  }
  await restoreUserChanges(ctx.git, ctx.logger, stashSha);
}

/** Put back the changes a run stashed when it started (`loop.dirty_tree: stash`); never throws. */
async function restoreUserChanges(git: Git, logger: Logger, stashSha: string | undefined): Promise<void> {
  if (!stashSha) return;
  try {
    const r = await git.restoreStash(stashSha);
    if (r.restored) await git.dropStash(stashSha);
    else logger.warn(`your stashed changes were kept as stash ${stashSha}: ${r.reason}`);
  } catch (e) {
    logger.warn(`cleanup: restore stashed changes: ${errorMessage(e)}`);
  }
}

export function resolveConfigFile(root: string, configFile?: string): string {
  return resolve(root, configFile ?? 'hillclimb.yml');
}
