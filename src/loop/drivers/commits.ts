/**
 * The harness without an agent: measure any two commits (a human PR against its base, main against a
 * tag), run a correctness gate on a commit, or profile one. Same steps, same evidence and statistics as
 * the loop, so a number means the same thing wherever it was produced.
 */
import { join } from 'node:path';
import { buildBackend, buildCpuBackend } from '../../compute/factory.js';
import { type ConfigOverrides, loadConfig, selectTarget } from '../../config/load.js';
import { packageVersion } from '../../env/root.js';
import type { IterationEvidence, StepName } from '../../evidence/iteration.js';
import { buildForge } from '../../forge/factory.js';
import { buildStore } from '../../store/factory.js';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import { Git } from '../../workspace/git.js';
import { matchAny } from '../../workspace/glob.js';
import {
  configHash,
  currentJobId,
  defaultHost,
  type LoopContext,
  NO_AGENT,
  realSleep,
  runDirOf,
  stateDirOf,
} from '../context.js';
import { Bundle, BundleFiles } from '../state/bundle.js';
import { newRunId } from '../state/journal.js';
import { newEvidence, runIterationSteps } from '../steps/iteration.js';
import { championProfile, type ProfileResult } from '../steps/profile.js';
import type { PhaseOptions } from './phases.js';
import { prepareExternalChange, publishToPullRequest } from './pull-request.js';

export interface ManualOptions {
  configFile: string;
  overrides?: ConfigOverrides;
  target?: string;
  logger: Logger;
  progress?: (line: string) => void;
  signal?: AbortSignal;
  dryRun?: boolean;
}

async function manualContext(opts: ManualOptions, runId: string): Promise<LoopContext> {
  const config = loadConfig(opts.configFile, opts.overrides);
  const target = selectTarget(config, opts.target);
  const stateDir = stateDirOf(config);
  const backend = buildBackend(config, {
    root: config.root,
    logger: opts.logger,
    runId,
    dryRun: opts.dryRun,
  });
  return {
    config,
    target,
    root: config.root,
    stateDir,
    runId,
    runDir: runDirOf(stateDir, runId),
    runStartedAt: new Date().toISOString(),
    totalIterations: 1,
    git: await Git.create(config.root, { logger: opts.logger }),
    backend,
    cpuBackend: buildCpuBackend(config, { root: config.root, logger: opts.logger }, backend),
    agent: NO_AGENT,
    forge: buildForge(config, { root: config.root, logger: opts.logger }),
    store: buildStore(config, { root: config.root, logger: opts.logger }),
    logger: opts.logger,
    progress: opts.progress ?? ((l) => opts.logger.info(l)),
    signal: opts.signal ?? new AbortController().signal,
    configHash: configHash(config),
    hillclimbVersion: packageVersion(),
    host: defaultHost(),
    sleep: realSleep,
    prepareMayProfile: true,
    job: currentJobId(),
    dryRun: Boolean(opts.dryRun),
  };
}

async function withContext<T>(
  opts: ManualOptions,
  runId: string,
  fn: (ctx: LoopContext) => Promise<T>,
): Promise<T> {
  const ctx = await manualContext(opts, runId);
  try {
    await ctx.backend.open();
    if (ctx.cpuBackend !== ctx.backend) await ctx.cpuBackend.open();
    return await fn(ctx);
  } finally {
    await ctx.backend.close().catch((e: unknown) => opts.logger.warn(`release compute: ${errorMessage(e)}`));
    if (ctx.cpuBackend !== ctx.backend) await ctx.cpuBackend.close().catch(() => undefined);
    await ctx.git.close().catch(() => undefined);
  }
}

export interface MeasureCommitsOptions extends ManualOptions {
  base: string;
  head: string;
  /** Also run these gates on the head first. Default: none. */
  gates?: Array<'cpu-gate' | 'accelerator-gate'>;
  /** Skip the profiled run. */
  noProfile?: boolean;
  runId?: string;
}

/** The options a manual measurement hands to the phase functions it shares with CI. */
function phaseOptions(opts: ManualOptions, runId: string): PhaseOptions {
  return {
    configFile: opts.configFile,
    ...(opts.overrides ? { overrides: opts.overrides } : {}),
    ...(opts.target ? { target: opts.target } : {}),
    runId,
    iteration: 1,
    logger: opts.logger,
    ...(opts.progress ? { progress: opts.progress } : {}),
  };
}

/** A/B-measure `head` against `base` with the loop's statistics; returns the evidence (with its verdict). */
export async function measureCommits(
  opts: MeasureCommitsOptions,
): Promise<{ evidence: IterationEvidence; bundleDir: string }> {
  const runId = opts.runId ?? `manual-${newRunId()}`;
  // The same bundle a pull request's evidence starts from (base..head as a git bundle and a patch).
  const prepared = await prepareExternalChange(phaseOptions(opts, runId), {
    base: opts.base,
    head: opts.head,
    source: `hillclimb measure ${opts.base}..${opts.head}`,
    guard: false,
  });
  return withContext(opts, runId, async (ctx) => {
    const bundle = new Bundle(prepared.bundleDir);
    const ev = bundle.load();
    // A change to the protected harness measures each arm with a different yardstick: say so.
    const harnessTouched = (ev.candidate?.changedPaths ?? []).filter((p) =>
      matchAny(ctx.target.protected, p),
    );
    if (harnessTouched.length > 0) {
      ev.verdict = 'needs-human';
      ev.verdictReasons = [
        `the change touches protected harness paths (${harnessTouched.join(', ')}): each arm would be measured by its own harness; re-baseline instead`,
      ];
      bundle.save(ev);
    }
    const steps: StepName[] = [
      ...(opts.gates ?? []),
      'measure',
      ...(opts.noProfile ? [] : (['profile'] as StepName[])),
      'decide',
    ];
    const evidence = await runIterationSteps(ctx, bundle, undefined, { only: steps });
    return { evidence, bundleDir: bundle.dir };
  });
}

/**
 * Write (or update) the sticky comment of an existing PR with a manual measurement. The PR's title and
 * body are the author's and are left alone.
 */
export async function commentMeasurement(
  opts: ManualOptions,
  evidence: IterationEvidence,
  prNumber: number,
): Promise<{ commentId: number; operation: string }> {
  const r = await publishToPullRequest(phaseOptions(opts, evidence.runId), prNumber);
  return {
    commentId: r.evidence.publish?.commentId ?? 0,
    operation: r.evidence.publish?.commentOperation ?? '',
  };
}

export interface GateOptions extends ManualOptions {
  ref: string;
  gate: 'cpu-gate' | 'accelerator-gate';
}

/** Run one correctness gate on a commit; returns the evidence with the gate's JUnit totals. */
export async function testCommit(
  opts: GateOptions,
): Promise<{ evidence: IterationEvidence; bundleDir: string }> {
  const runId = `manual-${newRunId()}`;
  return withContext(opts, runId, async (ctx) => {
    const commit = await ctx.git.revParse(opts.ref);
    const bundle = new Bundle(join(ctx.runDir, 'i001'));
    const ev = newEvidence(ctx, { iteration: 1, base: { commit } });
    ev.candidate = {
      branch: (await ctx.git.currentBranch()) ?? commit.slice(0, 12),
      commit,
      commits: [commit],
      subject: await ctx.git.subject(commit),
      changedPaths: [],
      patchFile: BundleFiles.patch,
    };
    bundle.save(ev);
    const evidence = await runIterationSteps(ctx, bundle, undefined, { only: [opts.gate] });
    return { evidence, bundleDir: bundle.dir };
  });
}

/** Profile one commit and return its trace summary (cached like the loop's champion profiles). */
export async function profileCommitSummary(opts: ManualOptions & { ref: string }): Promise<ProfileResult> {
  return withContext(opts, `manual-${newRunId()}`, async (ctx) =>
    championProfile(ctx, await ctx.git.revParse(opts.ref)),
  );
}
