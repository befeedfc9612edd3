/**
 * The harness without an agent: measure any two commits (a human PR against its base, main against a
 * tag), run a correctness gate on a commit, or profile one. Same steps, same evidence and statistics as
 * the loop, so a number means the same thing wherever it was produced.
 */
import { join } from 'node:path';
import { type ConfigOverrides, type HillclimbConfig, loadConfig, selectTarget } from '../../config/index.js';
import type { IterationEvidence, StepName } from '../../evidence/index.js';
import type { Logger } from '../../util/index.js';
import { matchAny } from '../../workspace/index.js';
import type { LoopContext } from '../context.js';
import { openLoopContext } from '../open-context.js';
import type { Attestation } from '../state/attestation.js';
import { Bundle, BundleFiles } from '../state/bundle.js';
import { newRunId } from '../state/journal.js';
import { newEvidence, runIterationSteps } from '../steps/iteration.js';
import { championProfile, type ProfileResult } from '../steps/profile.js';
import { attest, type PhaseOptions } from './phases.js';
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

/**
 * Run `fn` in a loop context for one manual iteration that runs `steps` (no agent): the backends those
 * steps use are open while it runs and released after, whatever happens. `config` when the caller loaded
 * it already.
 */
export async function withContext<T>(
  opts: ManualOptions,
  runId: string,
  steps: readonly StepName[],
  fn: (ctx: LoopContext) => Promise<T>,
  config: HillclimbConfig = loadConfig(opts.configFile, opts.overrides),
): Promise<T> {
  const { ctx, openBackends, close } = await openLoopContext(config, {
    target: selectTarget(config, opts.target),
    runId,
    steps,
    totalIterations: 1,
    prepareMayProfile: true,
    logger: opts.logger,
    progress: opts.progress ?? ((l) => opts.logger.info(l)),
    ...(opts.signal ? { signal: opts.signal } : {}),
    dryRun: Boolean(opts.dryRun),
  });
  try {
    await openBackends();
    return await fn(ctx);
  } finally {
    await close();
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

/** What `measureCommits` hands back: the evidence (with its verdict), its bundle, and this job's word on it. */
export interface MeasuredCommits {
  evidence: IterationEvidence;
  bundleDir: string;
  /** This job made and measured the bundle: what it vouches for, for the publish phase (`--pr`). */
  attestation: Attestation;
}

/** A/B-measure `head` against `base` with the loop's statistics. */
export async function measureCommits(opts: MeasureCommitsOptions): Promise<MeasuredCommits> {
  const runId = opts.runId ?? `manual-${newRunId()}`;
  // The same bundle a pull request's evidence starts from (base..head as a git bundle and a patch).
  const prepared = await prepareExternalChange(phaseOptions(opts, runId), {
    base: opts.base,
    head: opts.head,
    source: `hillclimb measure ${opts.base}..${opts.head}`,
    guard: false,
  });
  const steps: StepName[] = [
    ...(opts.gates ?? []),
    'measure',
    ...(opts.noProfile ? [] : (['profile'] as StepName[])),
    'decide',
  ];
  return withContext(opts, runId, steps, async (ctx) => {
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
    const evidence = await runIterationSteps(ctx, bundle, undefined, { only: steps });
    return { evidence, bundleDir: bundle.dir, attestation: attest(ctx, bundle, evidence, 'measure') };
  });
}

/**
 * Write (or update) the sticky comment of an existing PR with a manual measurement. The PR's title and
 * body are the author's and are left alone. The publish phase takes the bundle as it takes any other
 * job's: checked against the champion it was measured on, and believed on this job's attestation.
 */
export async function commentMeasurement(
  opts: ManualOptions,
  measured: MeasuredCommits,
  prNumber: number,
): Promise<{ commentId: number; operation: string }> {
  const { evidence, attestation } = measured;
  const r = await publishToPullRequest(
    {
      ...phaseOptions(opts, evidence.runId),
      base: evidence.base.commit,
      attestation: JSON.stringify(attestation),
    },
    prNumber,
  );
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
  return withContext(opts, runId, [opts.gate], async (ctx) => {
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
  return withContext(opts, `manual-${newRunId()}`, ['profile'], async (ctx) =>
    championProfile(ctx, await ctx.git.revParse(opts.ref)),
  );
}
