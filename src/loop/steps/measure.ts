/**
 * measure: champion (A) and candidate (B) benchmarked in the same job, on the same backend, each run a
 * fresh process, interleaved ABAB… from a seeded random first arm. Runs are added in steps while the
 * confidence interval could still clear the accept bar (sequential stopping, rule fixed in the harness); the
 * noise floor comes from the champion's own runs (A/A) pooled over this run's iterations.
 *
 * A candidate run that fails makes the iteration `invalid` at once; a champion run that fails is an
 * infrastructure failure (the champion passed before), retried by the runner without losing the runs
 * already recorded.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  comparabilityProblems,
  type MeasuredRun,
  type MeasurementEvidence,
  type MetricsFile,
  metricValue,
  type PeakInfo,
  peakInfo,
  readMetricsFile,
  recordIsolation,
  runLevels,
  summarizeLevels,
} from '../../evidence/index.js';
import {
  type CompareOptions,
  calibrateNoise,
  createRng,
  decideNext,
  median,
  SEQUENTIAL_STEP,
  type SequentialPolicy,
} from '../../stats/index.js';
import { errorMessage } from '../../util/index.js';
import type { LoopContext } from '../context.js';
import { Bundle, BundleFiles, iterationDirName } from '../state/bundle.js';
import { candidateWorktreePath, championWorktreePath, worktreeAt } from '../state/worktrees.js';
import { InfraFailure, Interrupted } from './failures.js';
import { jobId } from './naming.js';
import type { Step, StepEnv, StepResult } from './step.js';

const MINUTE_MS = 60_000;

export function metricUnit(path: string): string {
  if (path.endsWith('_ms')) return 'ms';
  if (path.endsWith('mfu')) return 'MFU';
  if (path.endsWith('tflops_per_s')) return 'TFLOP/s';
  if (path.endsWith('tokens_per_s')) return 'tok/s';
  return '';
}

export const measureStep: Step = {
  name: 'measure',
  evaluation: true,
  run: measure,
};

async function measure(env: StepEnv): Promise<StepResult> {
  const { ctx, ev } = env;
  const metricConfig = ctx.target.bench.metric;
  const seed = ctx.config.measure.seed + ev.iteration;
  ev.measurement ??= {
    metric: {
      path: metricConfig.path,
      direction: metricConfig.direction,
      label: metricConfig.label ?? metricConfig.path,
      unit: metricUnit(metricConfig.path),
    },
    runs: [],
    firstArm: createRng(seed).uniform() < 0.5 ? 'A' : 'B',
    mfu: { a: null, b: null },
    noise: { cv: null, champion_runs: 0 },
    looks: [],
  };
  const m = ev.measurement;
  const candidate = ev.candidate!;
  const arms = {
    A: await worktreeAt(ctx, championWorktreePath(ctx, ev.base.commit), ev.base.commit),
    B: await worktreeAt(ctx, candidateWorktreePath(ctx, ev.iteration), candidate.commit),
  };

  const prior = priorChampionRuns(ctx, ev.iteration, ev.base.commit);
  const calibration = prior.length > 0 ? calibrateNoise(prior) : undefined;
  m.noise = { cv: calibration?.cv ?? null, champion_runs: calibration?.runs ?? 0 };
  const opts: CompareOptions = {
    direction: metricConfig.direction,
    seed,
    confidence: ctx.config.measure.confidence,
    resamples: ctx.config.measure.resamples,
    practicalDelta: ctx.config.measure.practical_delta,
    regressionDelta: ctx.config.measure.regression_delta,
    implausibleSpeedup: ctx.config.measure.implausible_speedup,
    ...(calibration ? { calibratedCv: calibration.cv } : {}),
  };
  const policy: SequentialPolicy = {
    nStart: ctx.config.measure.runs_per_arm,
    nMax: ctx.config.measure.max_runs_per_arm,
    step: SEQUENTIAL_STEP,
  };

  for (;;) {
    const values = (arm: 'A' | 'B') =>
      m.runs.filter((r) => r.arm === arm && r.value !== null).map((r) => r.value as number);
    const decision = decideNext(values('A'), values('B'), opts, policy);
    const n = Math.min(values('A').length, values('B').length);
    if (decision.action === 'stop') {
      m.looks.push({ n, action: 'stop', reason: decision.reason });
      m.comparison = decision.comparison ?? undefined;
      break;
    }
    if (n > 0) m.looks.push({ n, action: 'more', reason: decision.reason });
    for (const arm of schedule(m.firstArm, decision.addRuns.a, decision.addRuns.b)) {
      const index = m.runs.filter((r) => r.arm === arm).length + 1;
      ctx.progress(`measure ${runName(arm, index)}`);
      const run = await benchRun(env, arm, index, arms[arm].root);
      if (run.problem && arm === 'A') {
        m.discarded ??= [];
        m.discarded.push(run);
        env.save();
        throw new InfraFailure(
          `champion benchmark run ${runName('A', index)} failed: ${run.problem} (the champion passed before; treated as infrastructure)`,
        );
      }
      m.runs.push(run);
      env.save();
      if (run.problem) {
        return {
          status: 'verdict',
          verdict: 'invalid',
          reasons: [`candidate benchmark run ${runName('B', index)} failed: ${run.problem}`],
        };
      }
      const mismatch = await comparability(env.bundle, m, run);
      if (mismatch.length > 0) {
        return {
          status: 'verdict',
          verdict: 'invalid',
          reasons: [`runs are not comparable: ${mismatch.join('; ')}`],
        };
      }
    }
  }

  const mfus = (arm: 'A' | 'B') => m.runs.filter((r) => r.arm === arm).map((r) => r.mfu);
  const medianOrNull = (xs: Array<number | null>) =>
    xs.length > 0 && xs.every((x) => x !== null) ? median(xs as number[]) : null;
  m.mfu = { a: medianOrNull(mfus('A')), b: medianOrNull(mfus('B')) };
  const lastB = [...m.runs].reverse().find((r) => r.arm === 'B' && r.value !== null);
  if (lastB) {
    const metrics = await readMetricsFile(env.bundle.path(lastB.metricsFile));
    m.device = {
      backend: metrics.device.backend,
      kind: metrics.device.kind,
      count: metrics.device.count,
      interpret: metrics.device.interpret,
    };
    m.versions = { ...metrics.versions };
    m.preset = metrics.preset;
    m.impl = metrics.impl;
    m.levels = summarizeLevels(
      m.runs,
      { ...levelInfo(metrics), verdict: { path: m.metric.path, comparison: m.comparison } },
      {
        confidence: ctx.config.measure.confidence,
        resamples: ctx.config.measure.resamples,
        seed,
      },
    );
  }
  const c = m.comparison;
  return { status: 'done', note: c ? `${c.verdict} after ${m.runs.length} runs` : undefined };
}

/** A run's name as its files are named: A-01, B-12. */
export function runName(arm: 'A' | 'B', index: number): string {
  return `${arm}-${String(index).padStart(2, '0')}`;
}

/** The arms of one batch in run order: pairs starting with `first`, then any remainder. */
export function schedule(first: 'A' | 'B', addA: number, addB: number): Array<'A' | 'B'> {
  const second = first === 'A' ? 'B' : 'A';
  const left = { A: addA, B: addB };
  const order: Array<'A' | 'B'> = [];
  while (left.A > 0 || left.B > 0) {
    for (const arm of [first, second] as const) {
      if (left[arm] > 0) {
        order.push(arm);
        left[arm] -= 1;
      }
    }
  }
  return order;
}

async function benchRun(env: StepEnv, arm: 'A' | 'B', index: number, workdir: string): Promise<MeasuredRun> {
  const { ctx, bundle, ev } = env;
  const metricsFile = BundleFiles.runMetrics(arm, index);
  const logFile = BundleFiles.runLog(arm, index);
  rmSync(bundle.path(metricsFile), { force: true });
  rmSync(bundle.path(logFile), { force: true });
  const result = await ctx.backend.run({
    // A retried run gets a fresh id: backends (Ray) attach a repeated id to the earlier, failed job.
    id: jobId(ctx.runId, ev.iteration, 'bench', arm, index, `a${attemptOf(ev.measurement, arm, index)}`),
    command: ctx.target.bench.command,
    workdir,
    timeoutMs: ctx.target.bench.timeout_minutes * MINUTE_MS,
    outputs: { metrics: bundle.path(metricsFile) },
    logFile: bundle.path(logFile),
    signal: ctx.signal,
    // Each arm's code has its own compile cache: the candidate cannot plant entries the champion loads.
    cacheKey: await ctx.git.treeHash(arm === 'A' ? ev.base.commit : ev.candidate!.commit),
  });
  if (result.isolation) recordIsolation(ev, 'measure', { mode: result.isolation, job: ctx.job });
  if (result.killedBy === 'abort') throw new Interrupted('benchmark cancelled');
  if (result.infraError) throw new InfraFailure(`benchmark run ${runName(arm, index)}: ${result.infraError}`);
  const run: MeasuredRun = {
    arm,
    index,
    value: null,
    mfu: null,
    exitCode: result.exitCode,
    durationMs: result.durationMs,
    metricsFile,
    logFile,
  };
  if (result.killedBy === 'timeout' || result.killedBy === 'idle-timeout') {
    run.problem = `killed after ${ctx.target.bench.timeout_minutes} min (${result.killedBy})`;
    return run;
  }
  if (result.exitCode !== 0) {
    run.problem = `exit code ${result.exitCode} (log: ${logFile})`;
    return run;
  }
  try {
    const metrics = await readMetricsFile(bundle.path(metricsFile));
    // A bench that says it did not verify what it timed (a debug flag) gives no evidence.
    if (metrics.verification?.verified === false) {
      run.problem = `${metricsFile}: the bench did not verify what it timed (verification.verified is false)`;
      return run;
    }
    run.value = metricValue(metrics, ctx.target.bench.metric.path, metricsFile);
    if (!(run.value > 0)) {
      run.problem = `metric ${ctx.target.bench.metric.path} is ${run.value}, not positive`;
      run.value = null;
    }
    run.mfu = optionalMetric(metrics, ctx.target.bench.mfu_path, metricsFile);
    run.levels = runLevels(metrics);
  } catch (e) {
    run.problem = errorMessage(e);
  }
  return run;
}

/** What the candidate's metrics say about both levels: the peak, and the model its runs trained. */
function levelInfo(metrics: MetricsFile): {
  peak?: PeakInfo;
  model?: { preset: string; gdnLayers: number; layerMatchesKernel: boolean };
} {
  const peak = peakInfo(metrics);
  const model = metrics.model;
  const s = metrics.shapes;
  const layer = model?.gdn_layer_shape;
  return {
    ...(peak ? { peak } : {}),
    ...(model && layer
      ? {
          model: {
            preset: model.preset,
            gdnLayers: model.gdn_layers,
            // The estimate of the kernels' share needs the kernel timed at the shape the model calls it.
            layerMatchesKernel:
              layer.B === s.B && layer.T === s.T && layer.H === s.H && layer.K === s.K && layer.V === s.V,
          },
        }
      : {}),
  };
}

/** 1 + the failed, discarded runs of this arm and index: the attempt number of the next run. */
function attemptOf(m: MeasurementEvidence | undefined, arm: 'A' | 'B', index: number): number {
  return 1 + (m?.discarded ?? []).filter((r) => r.arm === arm && r.index === index).length;
}

function optionalMetric(metrics: MetricsFile, path: string, file: string): number | null {
  try {
    return metricValue(metrics, path, file);
  } catch {
    return null;
  }
}

/** A run must measure the same problem on the same kind of device as the first champion run. */
async function comparability(bundle: Bundle, m: MeasurementEvidence, run: MeasuredRun): Promise<string[]> {
  const firstA = m.runs.find((r) => r.arm === 'A' && r.value !== null);
  if (!firstA || firstA === run) return [];
  const [a, b] = await Promise.all([
    readMetricsFile(bundle.path(firstA.metricsFile)),
    readMetricsFile(bundle.path(run.metricsFile)),
  ]);
  return comparabilityProblems(a, b);
}

/**
 * Champion runs of earlier iterations of this run that measured the same champion commit: an A/A pool
 * for the noise floor (identical code, fresh processes, same backend).
 */
function priorChampionRuns(ctx: LoopContext, iteration: number, champion: string): number[][] {
  const groups: number[][] = [];
  if (!existsSync(ctx.runDir)) return groups;
  for (const name of readdirSync(ctx.runDir).sort()) {
    if (!/^i\d{3}$/.test(name) || name >= iterationDirName(iteration)) continue;
    const b = new Bundle(join(ctx.runDir, name));
    if (!b.exists()) continue;
    const other = b.load();
    if (other.base.commit !== champion || !other.measurement) continue;
    const values = other.measurement.runs
      .filter((r) => r.arm === 'A' && r.value !== null)
      .map((r) => r.value!);
    if (values.length >= 2) groups.push(values);
  }
  return groups;
}
