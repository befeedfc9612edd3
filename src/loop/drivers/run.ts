/**
 * `hillclimb loop`: N iterations against one target, each starting from the current champion. Picks the
 * backends once from config, journals every step, promotes the champion only on `improved`, stops on the
 * failure budget or when the loop is stuck, and always releases what it acquired (TPU, worktrees, a
 * stash of the user's changes). `--resume` continues a killed run without repeating finished work.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildAgent } from '../../agent/factory.js';
import type { Backend } from '../../compute/backend.js';
import { buildBackend, buildCpuBackend } from '../../compute/factory.js';
import { type ConfigOverrides, loadConfig, selectTarget } from '../../config/load.js';
import type { HillclimbConfig, TargetConfig } from '../../config/types.js';
import { packageVersion } from '../../env/root.js';
import type { IterationEvidence } from '../../evidence/iteration.js';
import type { Verdict } from '../../evidence/verdicts.js';
import { buildForge } from '../../forge/factory.js';
import { buildStore } from '../../store/factory.js';
import { ExitCode, errorMessage, HillclimbError } from '../../util/errors.js';
import { takeLock } from '../../util/lock.js';
import type { Logger } from '../../util/log.js';
import { Git } from '../../workspace/git.js';
import {
  configHash,
  currentJobId,
  defaultHost,
  type LoopContext,
  realSleep,
  runDirOf,
  stateDirOf,
} from '../context.js';
import { Bundle, iterationDirName } from '../state/bundle.js';
import { Journal, listRuns, newRunId, type RunEndReason, runProgress } from '../state/journal.js';
import { removeRunWorktrees } from '../state/worktrees.js';
import { failureSignature, Interrupted } from '../steps/failures.js';
import { newEvidence, runIterationSteps } from '../steps/iteration.js';
import { preflight } from './preflight.js';

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
  verdict: Verdict;
  reason: string;
  subject: string | null;
  evidence: IterationEvidence;
  bundleDir: string;
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
  const config = loadConfig(opts.configFile, opts.overrides);
  const target = selectTarget(config, opts.target);
  preflight(config, target, { agent: true, cpuGate: true, dryRun: opts.dryRun });
  const stateDir = stateDirOf(config);
  const release = acquireLoopLock(stateDir);
  try {
    return await runLocked(opts, config, target, stateDir);
  } finally {
    release();
  }
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

async function runLocked(
  opts: LoopOptions,
  config: HillclimbConfig,
  target: TargetConfig,
  stateDir: string,
): Promise<LoopResult> {
  const root = config.root;
  const git = await Git.create(root, { logger: opts.logger });
  const signal = opts.signal ?? new AbortController().signal;
  const progressOut = opts.progress ?? ((l: string) => opts.logger.info(l));

  // Where the run stands: new, or resumed from its journal.
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
  const hash = configHash(config);
  let stashSha: string | undefined;
  let startCommit: string;
  let runStartedAt: string;
  let totalIterations: number;
  let champion: LoopResult['champion'];

  if (resumeId !== undefined) {
    if (!existsSync(journal.file)) {
      throw new HillclimbError(`no journal for run ${resumeId} at ${journal.file}`, {
        exitCode: ExitCode.badInput,
      });
    }
    const progress = runProgress(journal.entries(), journal.file);
    if (progress.start.config_hash !== hash) {
      throw new HillclimbError(`${config.file} changed since run ${runId} started`, {
        hint: 'resume with the configuration the run started with, or start a new run',
        exitCode: ExitCode.badInput,
      });
    }
    startCommit = progress.start.start_commit;
    runStartedAt = progress.start.at;
    totalIterations = progress.start.iterations;
    champion = progress.champion;
    journal.append({
      t: 'resume',
      at: new Date().toISOString(),
      run: runId,
      from_iteration: progress.finished.size + 1,
    });
    opts.logger.info(
      `resuming run ${runId}: ${progress.finished.size} of ${totalIterations} iterations finished`,
    );
  } else {
    stashSha = await applyDirtyTreePolicy(config, git, runId);
    startCommit = await git.head();
    if (config.loop.sync_main !== 'off')
      startCommit = await syncWithBase(config, git, runDir, opts.logger, startCommit);
    runStartedAt = new Date().toISOString();
    // A dry run walks one iteration: every later one would print the same commands.
    totalIterations = opts.dryRun ? 1 : config.loop.iterations;
    champion = { commit: startCommit, iteration: undefined };
    journal.append({
      t: 'run-start',
      at: runStartedAt,
      run: runId,
      target: target.name,
      iterations: totalIterations,
      start_commit: startCommit,
      config_file: config.file,
      config_hash: hash,
      options: { ...(opts.overrides ?? {}), ...(opts.dryRun ? { dryRun: true } : {}) },
    });
  }

  const backend = buildBackend(config, { root, logger: opts.logger, runId, dryRun: opts.dryRun });
  const cpuBackend: Backend = buildCpuBackend(config, { root, logger: opts.logger }, backend);
  const ctx: LoopContext = {
    config,
    target,
    root,
    stateDir,
    runId,
    runDir,
    runStartedAt,
    totalIterations,
    git,
    backend,
    cpuBackend,
    agent: buildAgent(config, { root, logger: opts.logger }),
    forge: buildForge(config, { root, logger: opts.logger }),
    store: buildStore(config, { root, logger: opts.logger }),
    logger: opts.logger,
    progress: () => undefined,
    signal,
    configHash: hash,
    hillclimbVersion: packageVersion(),
    host: defaultHost(),
    sleep: opts.sleep ?? realSleep,
    prepareMayProfile: true,
    job: currentJobId(),
    dryRun: Boolean(opts.dryRun),
  };

  const outcomes: IterationOutcome[] = [];
  let endReason: RunEndReason = 'completed';
  let message: string | undefined;
  try {
    await backend.open();
    if (cpuBackend !== backend) await cpuBackend.open();
    await republishFailed(ctx, journal, progressOut);

    let consecutiveErrors = 0;
    const signatures: string[] = [];
    for (let i = 1; i <= totalIterations; i++) {
      const bundle = new Bundle(join(runDir, iterationDirName(i)));
      const finished = bundle.exists() && bundle.load().steps.publish !== undefined;
      if (!finished) {
        if (!bundle.exists() && i > 1 && config.loop.sync_main === 'each-iteration') {
          const synced = await syncWithBase(config, git, runDir, opts.logger, champion.commit);
          if (synced !== champion.commit) {
            champion = { commit: synced, iteration: champion.iteration };
            journal.append({ t: 'champion', at: new Date().toISOString(), iteration: i - 1, commit: synced });
          }
        }
        if (!bundle.exists()) {
          bundle.save(
            newEvidence(ctx, {
              iteration: i,
              base: {
                commit: champion.commit,
                ...(champion.iteration !== undefined ? { iteration: champion.iteration } : {}),
                ...(champion.iteration !== undefined ? { branch: branchOf(runDir, champion.iteration) } : {}),
              },
            }),
          );
          journal.append({
            t: 'iteration-start',
            at: new Date().toISOString(),
            iteration: i,
            base_commit: champion.commit,
          });
        }
        ctx.progress = (line) => progressOut(`[${iterationDirName(i)} ${target.name}] ${line}`);
        const ev = await runIterationSteps(ctx, bundle, journal);
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
          journal.append({
            t: 'champion',
            at: new Date().toISOString(),
            iteration: i,
            commit: champion.commit,
          });
        }
      }
      const ev = bundle.load();
      const verdict = ev.verdict ?? 'error';
      outcomes.push({
        iteration: i,
        verdict,
        reason: ev.verdictReasons[0] ?? '',
        subject: ev.candidate?.subject ?? null,
        evidence: ev,
        bundleDir: bundle.dir,
      });
      progressOut(
        `[${iterationDirName(i)} ${target.name}] ${verdict}${ev.verdictReasons[0] ? `: ${ev.verdictReasons[0]}` : ''}`,
      );

      consecutiveErrors = verdict === 'error' ? consecutiveErrors + 1 : 0;
      if (consecutiveErrors > config.loop.failure_budget) {
        endReason = 'failure-budget';
        message = `${consecutiveErrors} consecutive iterations ended in error (loop.failure_budget is ${config.loop.failure_budget})`;
        break;
      }
      if (['error', 'invalid', 'no-op'].includes(verdict)) {
        signatures.push(failureSignature(verdict, ev.verdictReasons, ev.stoppedAt));
      } else signatures.length = 0;
      const last = signatures.slice(-config.loop.stuck_after);
      if (last.length === config.loop.stuck_after && new Set(last).size === 1) {
        endReason = 'stuck';
        message = `the last ${config.loop.stuck_after} iterations failed the same way (${verdict}: ${ev.verdictReasons[0] ?? ''}); a human should look`;
        break;
      }
    }
  } catch (e) {
    endReason = e instanceof Interrupted ? 'interrupted' : 'fatal';
    message = errorMessage(e);
    journal.append({ t: 'run-end', at: new Date().toISOString(), reason: endReason, message });
    await cleanup(ctx, cpuBackend, stashSha, opts.logger);
    throw e;
  }
  if (opts.dryRun && !message) {
    message =
      'dry run: compute commands were printed, not run; nothing was pushed, published or added to the history';
  }
  journal.append({
    t: 'run-end',
    at: new Date().toISOString(),
    reason: endReason,
    ...(message ? { message } : {}),
  });
  await cleanup(ctx, cpuBackend, stashSha, opts.logger);
  return { runId, runDir, stateDir, endReason, message, iterations: outcomes, champion, startCommit };
}

/** The branch of an earlier iteration of this run (where a stacked PR is based). */
function branchOf(runDir: string, iteration: number): string | undefined {
  const b = new Bundle(join(runDir, iterationDirName(iteration)));
  return b.exists() ? b.load().candidate?.branch : undefined;
}

/** Iterations whose record or publish step failed earlier get another try before the loop goes on. */
async function republishFailed(
  ctx: LoopContext,
  journal: Journal,
  progress: (l: string) => void,
): Promise<void> {
  for (let i = 1; i <= ctx.totalIterations; i++) {
    const bundle = new Bundle(join(ctx.runDir, iterationDirName(i)));
    if (!bundle.exists()) continue;
    const ev = bundle.load();
    if (ev.steps.record?.status === 'failed' || ev.steps.publish?.status === 'failed') {
      ctx.progress = (line) => progress(`[${iterationDirName(i)} ${ctx.target.name}] ${line}`);
      await runIterationSteps(ctx, bundle, journal, { only: ['record', 'publish'] });
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

async function cleanup(
  ctx: LoopContext,
  cpuBackend: Backend,
  stashSha: string | undefined,
  logger: Logger,
): Promise<void> {
  const problems: string[] = [];
  const attempt = async (what: string, fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (e) {
      problems.push(`${what}: ${errorMessage(e)}`);
    }
  };
  await attempt('release compute', () => ctx.backend.close());
  if (cpuBackend !== ctx.backend) await attempt('release local compute', () => cpuBackend.close());
  await attempt('remove worktrees', async () => {
    await ctx.git.close();
    await removeRunWorktrees(ctx);
  });
  if (stashSha) {
    await attempt('restore stashed changes', async () => {
      const r = await ctx.git.restoreStash(stashSha);
      if (r.restored) await ctx.git.dropStash(stashSha);
      else logger.warn(`your stashed changes were kept as stash ${stashSha}: ${r.reason}`);
    });
  }
  for (const p of problems) logger.warn(`cleanup: ${p}`);
}

export function resolveConfigFile(root: string, configFile?: string): string {
  return resolve(root, configFile ?? 'hillclimb.yml');
}
