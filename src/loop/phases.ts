/**
 * One iteration split into phases, so CI can run each in its own job with only the privileges it needs:
 *
 *   propose            prepare, propose, guard      agent job: no write token, no cloud credentials
 *   cpu-gate           cpu-gate                     runs candidate code: no secrets at all
 *   accelerator-gate   accelerator-gate             cloud credentials (candidate code runs on the TPU VM)
 *   measure            measure, profile, decide     cloud credentials
 *   publish            record, publish              write token; runs no candidate code
 *
 * Phases hand over through the iteration's evidence bundle (uploaded and downloaded as an artifact) and
 * the store (history). `all` runs the whole iteration in one process, as `hillclimb loop` does.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { buildAgent } from '../agent/factory.js';
import type { Backend } from '../compute/backend.js';
import { LocalBackend } from '../compute/backends/local.js';
import { buildBackend } from '../compute/factory.js';
import { type ConfigOverrides, loadConfig, selectTarget } from '../config/load.js';
import { packageVersion } from '../env/root.js';
import type { IterationEvidence, StepName } from '../evidence/iteration.js';
import { STEPS } from '../evidence/iteration.js';
import { buildForge } from '../forge/factory.js';
import { buildStore } from '../store/factory.js';
import type { Store } from '../store/store.js';
import { ExitCode, errorMessage, HillclimbError } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { Git } from '../workspace/git.js';
import { Bundle, BundleFiles, iterationDirName } from './bundle.js';
import { configHash, defaultHost, type LoopContext, realSleep, runDirOf, stateDirOf } from './context.js';
import { historyFile, readHistory } from './history.js';
import { newEvidence, runIterationSteps } from './iteration.js';
import { candidateRef } from './naming.js';

export const PHASES = ['propose', 'cpu-gate', 'accelerator-gate', 'measure', 'publish', 'all'] as const;
export type Phase = (typeof PHASES)[number];

export const PHASE_STEPS: Readonly<Record<Phase, readonly StepName[]>> = {
  propose: ['prepare', 'propose', 'guard'],
  'cpu-gate': ['cpu-gate'],
  'accelerator-gate': ['accelerator-gate'],
  measure: ['measure', 'profile', 'decide'],
  publish: ['record', 'publish'],
  all: STEPS,
};

/** Where the history lives in the store, per target. */
export function historyKey(target: string): string {
  return `history/${target}.jsonl`;
}

export interface PhaseOptions {
  configFile: string;
  overrides?: ConfigOverrides;
  target?: string;
  runId: string;
  iteration: number;
  /** Iterations the run was asked for (shown in the prompt). Default: loop.iterations. */
  totalIterations?: number;
  /**
   * The champion to start from (propose only). Default: the champion after the target's last history
   * row, else HEAD.
   */
  base?: string;
  /** When the run started (orders sticky comments); default now, for the first phase. */
  runStartedAt?: string;
  dryRun?: boolean;
  logger: Logger;
  progress?: (line: string) => void;
  signal?: AbortSignal;
}

export interface PhaseResult {
  phase: Phase;
  evidence: IterationEvidence;
  bundleDir: string;
  stateDir: string;
}

/** Run one phase of one iteration. Idempotent: finished steps are skipped. */
export async function runPhase(phase: Phase, opts: PhaseOptions): Promise<PhaseResult> {
  const config = loadConfig(opts.configFile, opts.overrides);
  const target = selectTarget(config, opts.target);
  const stateDir = stateDirOf(config);
  const runDir = runDirOf(stateDir, opts.runId);
  const bundle = new Bundle(join(runDir, iterationDirName(opts.iteration)));
  const git = await Git.create(config.root, { logger: opts.logger });
  const store = buildStore(config, { root: config.root, logger: opts.logger });
  await pullHistory(store, stateDir, target.name, opts.logger);

  const backend = buildBackend(config, {
    root: config.root,
    logger: opts.logger,
    runId: opts.runId,
    dryRun: opts.dryRun,
  });
  const cpuBackend: Backend =
    config.compute.backend === 'local'
      ? backend
      : new LocalBackend({ root: config.root, logger: opts.logger });
  const existing = bundle.exists() ? bundle.load() : undefined;
  const ctx: LoopContext = {
    config,
    target,
    root: config.root,
    stateDir,
    runId: opts.runId,
    runDir,
    runStartedAt: existing?.runStartedAt ?? opts.runStartedAt ?? new Date().toISOString(),
    totalIterations: existing?.totalIterations ?? opts.totalIterations ?? config.loop.iterations,
    git,
    backend,
    cpuBackend,
    agent: buildAgent(config, { root: config.root, logger: opts.logger }),
    forge: buildForge(config, { root: config.root, logger: opts.logger }),
    store,
    logger: opts.logger,
    progress: (line) =>
      (opts.progress ?? opts.logger.info)(`[${iterationDirName(opts.iteration)} ${target.name}] ${line}`),
    signal: opts.signal ?? new AbortController().signal,
    configHash: configHash(config),
    hillclimbVersion: packageVersion(),
    host: defaultHost(),
    sleep: realSleep,
  };

  if (!existing) {
    if (phase !== 'propose' && phase !== 'all') {
      throw new HillclimbError(`no evidence bundle at ${bundle.dir}`, {
        hint: `run the propose phase first, or download the iteration's bundle artifact into ${bundle.dir}`,
        exitCode: ExitCode.badInput,
      });
    }
    const base = opts.base ?? championFromHistory(stateDir, target.name) ?? (await git.head());
    bundle.save(newEvidence(ctx, { iteration: opts.iteration, base: { commit: await git.revParse(base) } }));
  }
  await ensureCandidateCommits(git, bundle, ctx.runId, opts.iteration);

  const steps = PHASE_STEPS[phase];
  const needsBackend = steps.some((s) =>
    ['cpu-gate', 'accelerator-gate', 'measure', 'profile', 'prepare'].includes(s),
  );
  try {
    if (needsBackend) {
      await backend.open();
      if (cpuBackend !== backend) await cpuBackend.open();
    }
    const evidence = await runIterationSteps(ctx, bundle, undefined, { only: steps });
    if (steps.includes('record')) await pushHistory(store, stateDir, target.name);
    return { phase, evidence, bundleDir: bundle.dir, stateDir };
  } finally {
    if (needsBackend) {
      await backend.close().catch((e: unknown) => opts.logger.warn(`release compute: ${errorMessage(e)}`));
      if (cpuBackend !== backend) await cpuBackend.close().catch(() => undefined);
    }
    await git.close().catch((e: unknown) => opts.logger.warn(`remove worktrees: ${errorMessage(e)}`));
  }
}

/** The champion after the target's last history row, if any. */
export function championFromHistory(stateDir: string, target: string): string | undefined {
  return readHistory(stateDir, target).at(-1)?.championAfter;
}

/** A bundle made in another job carries the candidate's commits; fetch them if this clone lacks them. */
async function ensureCandidateCommits(
  git: Git,
  bundle: Bundle,
  runId: string,
  iteration: number,
): Promise<void> {
  const ev = bundle.load();
  if (!ev.candidate) return;
  if ((await git.tryRevParse(`${ev.candidate.commit}^{commit}`)) !== undefined) return;
  const file = bundle.path(BundleFiles.gitBundle);
  if (!existsSync(file)) {
    throw new HillclimbError(`commit ${ev.candidate.commit} is missing and ${file} does not exist`, {
      exitCode: ExitCode.badInput,
    });
  }
  await git.fetchBundle(file, candidateRef(runId, iteration));
}

/** Bring the store's history for the target into the state dir (the store is the shared copy). */
export async function pullHistory(
  store: Store,
  stateDir: string,
  target: string,
  logger: Logger,
): Promise<void> {
  if (store.name === 'local') return;
  try {
    const keys = await store.list('history/');
    if (keys.includes(historyKey(target))) await store.get(historyKey(target), historyFile(stateDir));
  } catch (e) {
    logger.warn(`could not read the history from the ${store.name} store: ${errorMessage(e)}`);
  }
}

/** Write the state dir's history back to the store. */
export async function pushHistory(store: Store, stateDir: string, target: string): Promise<void> {
  if (store.name === 'local' || !existsSync(historyFile(stateDir))) return;
  await store.put(historyKey(target), historyFile(stateDir));
}
