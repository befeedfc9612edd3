/**
 * profile: one profiled run of the candidate, its trace analysed by the harness (steps, hotspots,
 * custom calls) and diffed against the champion's. The champion's profile is cached by commit, profile
 * command and device, so a champion is profiled once per run however many iterations measure it.
 * The traced step times are checked against the measured medians (analysis/agreement.ts): a profile
 * that does not agree is kept, and reports say its times are profiler-inflated.
 * The GDN kernels' share of the training step is read from the traces when they can say (levels.ts).
 * A profile that fails is recorded and reported; it never changes a measured verdict.
 */

import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type IterationEvidence, kernelShare } from '../../evidence/index.js';
import {
  diffSummaries,
  type ProfileAgreement,
  profileAgreement,
  summarizeTracePath,
  TRACE_SUMMARY_SCHEMA,
  type TraceSummary,
} from '../../trace/index.js';
import { errorMessage, readJson, writeJsonAtomic } from '../../util/index.js';
import type { LoopContext } from '../context.js';
import { BundleFiles } from '../state/bundle.js';
import { championPrograms } from './champion-programs.js';
import { ChampionFailure, InfraFailure, Interrupted } from './failures.js';
import {
  type ArmName,
  bundlePrograms,
  type DrawHolder,
  iterationDraw,
  ProgramFiles,
  requestPlan,
  runVerifier,
  VerifierFailed,
} from './programs.js';
import type { Step } from './step.js';

export interface ProfileResult {
  traceDir: string;
  summary: TraceSummary;
  cached: boolean;
}

export const profileStep: Step = {
  name: 'profile',
  evaluation: true,
  async run({ ctx, bundle, ev }) {
    if (!ctx.target.profile) {
      ev.profile = { status: 'skipped', reason: 'no profile command configured for this target' };
      return { status: 'skipped', note: 'no profile command configured' };
    }
    if (ev.dryRun && !ev.measurement?.comparison) {
      return { status: 'skipped', note: 'dry run: nothing was measured, so there is nothing to profile' };
    }
    try {
      const traceDir = bundle.path(BundleFiles.profileDir);
      const platform = ctx.backend.info().platform;
      const programs = bundlePrograms(bundle, 'B', platform);
      if (!existsSync(join(programs, 'manifest.json'))) {
        throw new Error(
          `the candidate has no exported programs for ${platform} (the measurement did not run)`,
        );
      }
      const summary = await profileCommit(ctx, ev, {
        arm: 'B',
        harness: ev.base.commit,
        programs,
        traceDir,
        metrics: bundle.path(BundleFiles.profileMetrics),
        log: bundle.path(BundleFiles.profileLog),
        session: bundle.path(ProgramFiles.session('profile')),
        name: 'profile',
      });
      writeJsonAtomic(bundle.path(BundleFiles.summary), summary);
      const champion = await championProfile(ctx, ev.base.commit);
      writeJsonAtomic(bundle.path(BundleFiles.championSummary), champion.summary);
      const diff = diffSummaries(champion.summary, summary);
      writeJsonAtomic(bundle.path(BundleFiles.diff), diff);
      const agreement = measuredAgreement(ev, summary, champion.summary);
      // The GDN kernels' share of the training step: from the traces where they name the kernel's
      // ops and agree with the measured step, else the measurement's estimate.
      const share = kernelShare(ev.measurement?.levels, { champion: champion.summary, candidate: summary });
      ev.profile = {
        status: 'done',
        candidateTrace: BundleFiles.profileDir,
        championTrace: champion.traceDir,
        championCached: champion.cached,
        summary,
        championSummary: champion.summary,
        diff,
        ...(agreement === undefined ? {} : { agreement }),
        ...(share === undefined ? {} : { kernelShare: share }),
      };
      if (agreement?.agrees === false) ctx.logger.warn(`profile: ${agreement.detail}`);
      return { status: 'done' };
    } catch (e) {
      // A champion that cannot export stops the run here, before the agent spends anything.
      if (e instanceof Interrupted || e instanceof InfraFailure || e instanceof ChampionFailure) throw e;
      ev.profile = { status: 'failed', reason: errorMessage(e).split('\n')[0] };
      ctx.logger.warn(`profile failed (the verdict does not depend on it): ${errorMessage(e)}`);
      return { status: 'done', note: `profile failed: ${ev.profile.reason}` };
    }
  },
};

/**
 * The profile checked against the measurement of the same iteration: the traced step of the measured
 * call (the bench's `hillclimb_<measurement>` step annotations) against the measured medians.
 */
function measuredAgreement(
  ev: IterationEvidence,
  summary: TraceSummary,
  championSummary: TraceSummary,
): ProfileAgreement | undefined {
  const m = ev.measurement;
  const c = m?.comparison;
  if (m === undefined || c === undefined) return undefined;
  return profileAgreement({
    candidate: summary,
    champion: championSummary,
    metricPath: m.metric.path,
    measured: { a: c.a.median, b: c.b.median },
    unit: m.metric.unit,
  });
}

/**
 * Profile an arm's verified programs: the verifier (profile mode) checks them on fresh inputs, times
 * them and traces a few steps of each; the trace it writes to `traceDir` is analysed here.
 */
export async function profileCommit(
  ctx: LoopContext,
  ev: Parameters<typeof runVerifier>[1],
  o: {
    arm: ArmName;
    harness: string;
    programs: string;
    traceDir: string;
    metrics: string;
    log: string;
    session: string;
    name: string;
  },
): Promise<TraceSummary> {
  const profile = ctx.target.profile!;
  rmSync(o.traceDir, { recursive: true, force: true });
  mkdirSync(o.traceDir, { recursive: true });
  let run: Awaited<ReturnType<typeof runVerifier>>;
  try {
    run = await runVerifier(ctx, ev, {
      mode: 'profile',
      platform: ctx.backend.info().platform,
      draw: iterationDraw(ev),
      arms: [o.arm],
      repeats: profile.repeats,
      warmup: 1,
      trace: true,
      backend: ctx.backend,
      harness: o.harness,
      programs: { [o.arm]: o.programs },
      sessionFile: o.session,
      logFile: o.log,
      traceDir: o.traceDir,
      name: o.name,
      step: 'profile',
    });
  } catch (e) {
    if (e instanceof VerifierFailed) throw new Error(e.message);
    throw e;
  }
  const failure = run.session.arms[o.arm]?.failure;
  if (failure || !run.session.profile) {
    throw new Error(`the verifier did not profile the programs: ${failure ?? 'no profile in the session'}`);
  }
  writeJsonAtomic(o.metrics, run.session.profile.metrics);
  return summarizeTracePath(o.traceDir, undefined, deviceKindOpts(o.metrics));
}

/** The device kind the bench recorded (metrics JSON `device.kind`), for the roofline of JSON traces. */
function deviceKindOpts(metricsFile: string): { deviceKind?: string } {
  try {
    const kind = readJson<{ device?: { kind?: unknown } }>(metricsFile).device?.kind;
    return typeof kind === 'string' && kind !== '' ? { deviceKind: kind } : {};
  } catch {
    return {};
  }
}

/**
 * Where a commit's profile summary is shared through the store (read by the agent's job in CI). Keyed
 * by the kind of device too, so a CPU profile never stands in for a TPU one.
 */
export function storedProfileKey(ctx: LoopContext, commit: string): string {
  const info = ctx.backend.info();
  const device = [info.backend, info.acceleratorType]
    .filter(Boolean)
    .join('-')
    .replace(/[^A-Za-z0-9._-]/g, '_');
  return `profiles/${ctx.target.name}/${device}/${commit}.json`;
}

/** The local cache folder of a commit's profile, by commit, profile command and device. */
function cacheDir(ctx: LoopContext, commit: string): string {
  const key = createHash('sha256')
    .update(JSON.stringify([commit, ctx.target.programs, ctx.target.profile, ctx.backend.info().description]))
    .digest('hex')
    .slice(0, 20);
  return join(ctx.stateDir, 'cache', 'profiles', key);
}

/**
 * A profile summary of `commit` that needs no new run: the local cache, else the one a measuring job
 * stored. Undefined when neither exists (or the store cannot be read).
 */
export async function knownProfileSummary(
  ctx: LoopContext,
  commit: string,
): Promise<TraceSummary | undefined> {
  const local = join(cacheDir(ctx, commit), 'summary.json');
  if (existsSync(local)) return current(readJson<TraceSummary>(local));
  const key = storedProfileKey(ctx, commit);
  try {
    if (!(await ctx.store.list(`profiles/${ctx.target.name}/`)).includes(key)) return undefined;
    const copy = join(ctx.stateDir, 'cache', 'stored-profiles', `${commit}.json`);
    await ctx.store.get(key, copy);
    return current(readJson<TraceSummary>(copy));
  } catch (e) {
    ctx.logger.warn(`could not read the stored profile of ${commit.slice(0, 12)}: ${errorMessage(e)}`);
    return undefined;
  }
}

/** A cached summary of this hillclimb's schema; an older one is profiled again. */
function current(summary: TraceSummary): TraceSummary | undefined {
  return summary.schema === TRACE_SUMMARY_SCHEMA ? summary : undefined;
}

/** Share a profile summary through the store (best effort: a failure is a warning). */
export async function shareProfileSummary(
  ctx: LoopContext,
  commit: string,
  summaryFile: string,
): Promise<void> {
  try {
    await ctx.store.put(storedProfileKey(ctx, commit), summaryFile);
  } catch (e) {
    ctx.logger.warn(`could not store the profile of ${commit.slice(0, 12)}: ${errorMessage(e)}`);
  }
}

/**
 * The champion's profile: from the cache when this commit, command and device were profiled before.
 * With `scratch` (an agent's tool call, made while the agent runs and could load the machine), a
 * profile made now goes there and is neither cached nor shared: later steps and jobs make their own.
 */
export async function championProfile(
  ctx: LoopContext,
  commit: string,
  opts: { scratch?: string } = {},
): Promise<ProfileResult> {
  const cache = cacheDir(ctx, commit);
  const cachedFile = join(cache, 'summary.json');
  const cachedSummary = existsSync(cachedFile) ? current(readJson<TraceSummary>(cachedFile)) : undefined;
  if (cachedSummary !== undefined)
    return { traceDir: join(cache, 'trace'), summary: cachedSummary, cached: true };
  // Profiled before by another job or iteration (same commit, same kind of device): reuse its summary.
  const stored = await knownProfileSummary(ctx, commit);
  if (stored) return { traceDir: storedProfileKey(ctx, commit), summary: stored, cached: true };
  const dir = opts.scratch ?? cache;
  const summaryFile = join(dir, 'summary.json');
  const traceDir = join(dir, 'trace');
  const where: DrawHolder = { iteration: 0 };
  const platform = ctx.backend.info().platform;
  const plan = await requestPlan(ctx, where, { backend: ctx.backend, harness: commit, platform });
  const summary = await profileCommit(ctx, where, {
    arm: 'A',
    harness: commit,
    programs: (await championPrograms(ctx, where, commit, plan)).dir,
    traceDir,
    metrics: join(dir, 'metrics.json'),
    log: join(dir, 'profile.log'),
    session: join(dir, 'session.json'),
    name: `profile-${commit.slice(0, 12)}`,
  });
  writeJsonAtomic(summaryFile, summary);
  if (opts.scratch === undefined) await shareProfileSummary(ctx, commit, summaryFile);
  return { traceDir, summary, cached: false };
}
