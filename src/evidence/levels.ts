/**
 * The two levels of every measurement: the kernel (fwd+bwd time and MFU) and the training step of a
 * model built on it (step time, tokens/s, model MFU), read per run from the metrics JSON and summarised
 * per arm with a bootstrap interval of the change; the GDN kernels' share of the step, and what
 * Amdahl's law allows from it. A kernel speed-up moves the step only by the kernel's share: these are
 * the numbers people decide on.
 *
 * Every value comes from metrics files the harness wrote (or, for the share, the trace it profiled);
 * the verdict metric's own comparison stays in `measurement.comparison`.
 */

import {
  bootstrapRatioOfMedians,
  type Comparison,
  type Interval,
  median,
  pairedLogRatio,
} from '../stats/index.js';
import type { TraceSummary } from '../trace/index.js';
import type { MetricsFile } from './metrics.js';

/** The measurement the bench times the model's training step under. */
export const TRAIN_STEP = 'train_step';
/** The kernel's measurement both levels compare: forward plus backward, as a training step runs it. */
export const KERNEL_MEASUREMENT = 'fwd_bwd';
/** The module name of the bench's training step in a trace (`jax.jit` of `train_step`). */
export const TRAIN_STEP_PROGRAM = 'jit_train_step';
/** Kernel ops in a trace: the stable Pallas names (`gdn_chunk_fwd`, `gdn_chunk_bwd`). */
const KERNEL_OP = /^gdn_/;
const KERNEL_SCOPE = /(^|\/)gdn_chunk_/;
/** A traced train step more than this far from the measured one is profiler-inflated (agreement.ts). */
const SHARE_AGREEMENT_FACTOR = 1.5;

/** One run's numbers at both levels; null where the run did not measure them. */
export interface RunLevels {
  /** Kernel fwd+bwd median, ms. */
  kernelMs: number | null;
  /** Kernel MFU (fraction) against the run's peak. */
  kernelMfu: number | null;
  /** Training step median, ms. */
  stepMs: number | null;
  tokensPerS: number | null;
  /** Model MFU (fraction) against the run's peak. */
  modelMfu: number | null;
  /** The peak both MFUs are against, FLOP/s. */
  peakFlopsPerS: number | null;
}

export type LevelKey = Exclude<keyof RunLevels, 'peakFlopsPerS'>;

export interface LevelMetric {
  label: string;
  unit: string;
  direction: 'higher' | 'lower';
  /** Where the value is in the metrics JSON. */
  path: string;
}

export const LEVEL_METRICS: Record<LevelKey, LevelMetric> = {
  kernelMs: {
    label: 'kernel fwd+bwd time',
    unit: 'ms',
    direction: 'lower',
    path: `measurements.${KERNEL_MEASUREMENT}.median_ms`,
  },
  kernelMfu: {
    label: 'kernel MFU',
    unit: 'MFU',
    direction: 'higher',
    path: `measurements.${KERNEL_MEASUREMENT}.mfu`,
  },
  stepMs: {
    label: 'train step time',
    unit: 'ms',
    direction: 'lower',
    path: `measurements.${TRAIN_STEP}.median_ms`,
  },
  tokensPerS: {
    label: 'tokens/s',
    unit: 'tok/s',
    direction: 'higher',
    path: `measurements.${TRAIN_STEP}.tokens_per_s`,
  },
  modelMfu: { label: 'model MFU', unit: 'MFU', direction: 'higher', path: `measurements.${TRAIN_STEP}.mfu` },
};

/** One level metric, champion (A) against candidate (B). */
export interface LevelChange {
  /** Medians of the arms' per-run values; null when an arm has none. */
  a: number | null;
  b: number | null;
  nA: number;
  nB: number;
  /** Improvement ratio (> 1 better: A/B for times, B/A otherwise) and its bootstrap interval. */
  ratio: number | null;
  ci: Interval | null;
}

/** The peak MFU is against, as the candidate's runs recorded it. */
export interface PeakInfo {
  source: 'table' | 'measured';
  /** `TPU v5p`, or `measured 512^3 float32 matmul`. */
  name: string;
  dtype: string;
}

/** The GDN kernels' share of the training step, per arm (fractions 0..1). */
export interface KernelShare {
  a: number | null;
  b: number | null;
  /** `profile`: kernel ops in the traced step; `measurement`: GDN layers × kernel fwd+bwd / step. */
  source: 'profile' | 'measurement';
  /** How it was derived, in one line. */
  detail: string;
}

/**
 * The one peak every MFU of a comparison is against: the median of the runs' peaks (both arms). A
 * measured peak is re-measured in every verifier session and moves with the machine's load; MFUs taken
 * against different sessions' peaks can move against the time. Against one peak they cannot.
 */
export interface PooledPeak {
  flopsPerS: number;
  /** The runs' own peaks, lowest and highest, and how many runs had one. */
  min: number;
  max: number;
  n: number;
}

export interface LevelsEvidence {
  kernel: { time: LevelChange; mfu: LevelChange };
  /** Absent when the runs timed no model step. */
  model?: {
    preset: string;
    gdnLayers: number;
    time: LevelChange;
    tokensPerS: LevelChange;
    mfu: LevelChange;
  };
  peak?: PeakInfo;
  /** The peak both arms' MFUs are rescaled to (absent when no run recorded one). */
  pooledPeak?: PooledPeak;
  /** The share from the measurement (the profile step may replace it with the trace's). */
  share?: KernelShare;
  /** Confidence, resamples and seed of every interval here. */
  confidence: number;
  resamples: number;
  seed: number;
}

function numberAt(
  m: MetricsFile,
  measurement: string,
  key: 'median_ms' | 'mfu' | 'tokens_per_s',
): number | null {
  const value = m.measurements[measurement]?.[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/** Both levels of one run, from its metrics file. */
export function runLevels(m: MetricsFile): RunLevels {
  return {
    kernelMs: numberAt(m, KERNEL_MEASUREMENT, 'median_ms'),
    kernelMfu: numberAt(m, KERNEL_MEASUREMENT, 'mfu'),
    stepMs: numberAt(m, TRAIN_STEP, 'median_ms'),
    tokensPerS: numberAt(m, TRAIN_STEP, 'tokens_per_s'),
    modelMfu: numberAt(m, TRAIN_STEP, 'mfu'),
    peakFlopsPerS: m.device.peak_flops_per_s,
  };
}

/** The peak a metrics file's MFUs are against; undefined when it has none. */
export function peakInfo(m: MetricsFile): PeakInfo | undefined {
  if (m.device.peak)
    return { source: m.device.peak.source, name: m.device.peak.name, dtype: m.device.peak.dtype };
  // Files of older benches: a non-null peak was the table's bf16 figure.
  return m.device.peak_flops_per_s === null
    ? undefined
    : { source: 'table', name: m.device.kind, dtype: 'bf16' };
}

/**
 * One level metric across the arms: medians, and the interval of the improvement ratio when both arms
 * have at least two values — the bootstrap of the ratio of medians, or for `paired` values (a[i] and
 * b[i] from one round) the paired verdict's t interval of the rounds' log ratios, so that a level
 * that is a fixed multiple of the verdict's metric (kernel MFU of kernel time: one FLOP count, one
 * pooled peak) gets exactly the verdict's interval, reciprocated.
 */
export function levelChange(
  a: readonly number[],
  b: readonly number[],
  direction: 'higher' | 'lower',
  opts: { confidence: number; resamples: number; seed: number; paired?: boolean },
): LevelChange {
  const change: LevelChange = {
    a: a.length > 0 ? median(a) : null,
    b: b.length > 0 ? median(b) : null,
    nA: a.length,
    nB: b.length,
    ratio: null,
    ci: null,
  };
  if (change.a === null || change.b === null || !(change.a > 0 && change.b > 0)) return change;
  change.ratio = direction === 'lower' ? change.a / change.b : change.b / change.a;
  if (a.length < 2 || b.length < 2 || a.some((x) => !(x > 0)) || b.some((x) => !(x > 0))) return change;
  const [num, den] = direction === 'lower' ? [a, b] : [b, a];
  if (opts.paired && a.length === b.length) {
    const paired = pairedLogRatio(num, den, opts.confidence);
    change.ratio = paired.estimate;
    change.ci = { ...paired.ci };
    return change;
  }
  change.ci = { ...bootstrapRatioOfMedians(num, den, opts).percentile };
  return change;
}

/**
 * Both levels over the runs of a measurement (runs without levels, i.e. failed ones, are left out).
 * `model` names the model the runs trained, when they timed a step. The level that is the verdict's
 * metric (`verdict.path`) takes the verdict's own ratio and interval, so one quantity never shows two
 * intervals.
 */
export function summarizeLevels(
  runs: ReadonlyArray<{ arm: 'A' | 'B'; index?: number; levels?: RunLevels }>,
  info: {
    peak?: PeakInfo;
    model?: { preset: string; gdnLayers: number; layerMatchesKernel: boolean };
    verdict?: { path: string; comparison: Comparison | undefined };
  },
  opts: { confidence: number; resamples: number; seed: number },
): LevelsEvidence {
  const pooled = pooledPeak(runs);
  const values = (arm: 'A' | 'B', key: LevelKey): number[] =>
    runs.flatMap((r) => {
      const v = r.arm === arm ? r.levels?.[key] : null;
      if (typeof v !== 'number') return [];
      return [MFU_KEYS.has(key) ? atPooledPeak(v, r.levels?.peakFlopsPerS, pooled) : v];
    });
  /**
   * Whether every run's `key` is one constant times its `base` (or over it, when one is better higher
   * and the other lower): then the improvement ratios are equal, run by run, and so are their intervals.
   */
  const fixedMultipleOf = (key: LevelKey, base: LevelKey): boolean => {
    const reciprocal = LEVEL_METRICS[key].direction !== LEVEL_METRICS[base].direction;
    const factors = runs.flatMap((r) => {
      const v = r.levels?.[key];
      const w = r.levels?.[base];
      if (typeof v !== 'number' || typeof w !== 'number' || !(v > 0 && w > 0)) return [];
      const level = MFU_KEYS.has(key) ? atPooledPeak(v, r.levels?.peakFlopsPerS, pooled) : v;
      return [reciprocal ? level * w : level / w];
    });
    if (factors.length < 2) return false;
    const first = factors[0]!;
    return factors.every((f) => Math.abs(f - first) <= 1e-9 * Math.abs(first));
  };
  // A paired verdict's rounds give every level its pairs: the rounds where both arms have a value.
  const paired = info.verdict?.comparison?.ciMethod === 'paired-t';
  const roundPairs = (key: LevelKey): [number[], number[]] => {
    const byRound = new Map<number, { A?: number; B?: number }>();
    const seen = { A: 0, B: 0 };
    for (const r of runs) {
      const round = r.index ?? seen[r.arm];
      seen[r.arm] += 1;
      const v = r.levels?.[key];
      if (typeof v !== 'number') continue;
      const entry = byRound.get(round) ?? {};
      entry[r.arm] = MFU_KEYS.has(key) ? atPooledPeak(v, r.levels?.peakFlopsPerS, pooled) : v;
      byRound.set(round, entry);
    }
    const both = [...byRound.values()].filter((e) => e.A !== undefined && e.B !== undefined);
    return [both.map((e) => e.A!), both.map((e) => e.B!)];
  };
  const verdictKey = (Object.keys(LEVEL_METRICS) as LevelKey[]).find(
    (k) => LEVEL_METRICS[k].path === info.verdict?.path,
  );
  const change = (key: LevelKey, offset: number): LevelChange => {
    const [a, b] = paired ? roundPairs(key) : [values('A', key), values('B', key)];
    const c = levelChange(a, b, LEVEL_METRICS[key].direction, { ...opts, seed: opts.seed + offset, paired });
    // The verdict's own metric, and a level that is a fixed multiple of it (kernel MFU of kernel time:
    // one FLOP count, one peak), take the verdict's ratio and interval: one quantity, one interval.
    const verdict = info.verdict?.comparison;
    const isVerdicts =
      info.verdict?.path === LEVEL_METRICS[key].path ||
      (verdictKey !== undefined && key !== verdictKey && fixedMultipleOf(key, verdictKey));
    if (isVerdicts && verdict && verdict.ratio !== null) {
      return { ...c, ratio: verdict.ratio, ci: verdict.ci === null ? null : { ...verdict.ci } };
    }
    return c;
  };
  const levels: LevelsEvidence = {
    kernel: { time: change('kernelMs', 1), mfu: change('kernelMfu', 2) },
    confidence: opts.confidence,
    resamples: opts.resamples,
    seed: opts.seed,
  };
  if (info.peak) levels.peak = info.peak;
  if (pooled) levels.pooledPeak = pooled;
  const m = info.model;
  if (m && (values('A', 'stepMs').length > 0 || values('B', 'stepMs').length > 0)) {
    levels.model = {
      preset: m.preset,
      gdnLayers: m.gdnLayers,
      time: change('stepMs', 3),
      tokensPerS: change('tokensPerS', 4),
      mfu: change('modelMfu', 5),
    };
    if (m.layerMatchesKernel) levels.share = measuredShare(levels, m.gdnLayers);
  }
  return levels;
}

const MFU_KEYS: ReadonlySet<LevelKey> = new Set(['kernelMfu', 'modelMfu']);

/** An MFU against its run's own peak, rescaled to the comparison's one peak (as it is without either). */
export function atPooledPeak(
  mfu: number,
  ownPeak: number | null | undefined,
  pooled: PooledPeak | undefined,
): number {
  return pooled && typeof ownPeak === 'number' && ownPeak > 0 ? (mfu * ownPeak) / pooled.flopsPerS : mfu;
}

/** The median of the runs' peaks, with their range; undefined when no run recorded a peak. */
export function pooledPeak(
  runs: ReadonlyArray<{ levels?: Pick<RunLevels, 'peakFlopsPerS'> }>,
): PooledPeak | undefined {
  const peaks = runs.flatMap((r) => {
    const p = r.levels?.peakFlopsPerS;
    return typeof p === 'number' && p > 0 ? [p] : [];
  });
  if (peaks.length === 0) return undefined;
  return { flopsPerS: median(peaks), min: Math.min(...peaks), max: Math.max(...peaks), n: peaks.length };
}

/** The share estimated from the medians: GDN layers × kernel fwd+bwd / train step. */
export function measuredShare(levels: LevelsEvidence, gdnLayers: number): KernelShare {
  const share = (kernel: number | null, step: number | null) =>
    kernel !== null && step !== null && step > 0 ? Math.min(1, (gdnLayers * kernel) / step) : null;
  return {
    a: share(levels.kernel.time.a, levels.model?.time.a ?? null),
    b: share(levels.kernel.time.b, levels.model?.time.b ?? null),
    source: 'measurement',
    detail: `estimated from the medians: ${gdnLayers} GDN layers × kernel fwd+bwd time / train step time`,
  };
}

/**
 * The kernels' share of the traced training step: the time of the kernel's ops (custom calls named
 * `gdn_…`, or ops under a `gdn_chunk_…` scope) in the train-step program over the traced step.
 * Undefined when the trace cannot say: no train step in it, kernel ops it does not name (XLA:CPU traces
 * carry no scopes), or a traced step more than 1.5× from the measured one (profiler-inflated).
 */
export function tracedShare(
  summary: TraceSummary,
  measuredStepMs: number | null,
): { share: number; kernelMs: number; stepMs: number } | undefined {
  const step = summary.steps.annotations?.find((a) => a.name === `hillclimb_${TRAIN_STEP}`);
  if (!step || !(step.medianMs > 0)) return undefined;
  if (measuredStepMs !== null && measuredStepMs > 0) {
    const ratio = step.medianMs / measuredStepMs;
    if (ratio > SHARE_AGREEMENT_FACTOR || ratio < 1 / SHARE_AGREEMENT_FACTOR) return undefined;
  }
  const inStep = summary.ops.filter((o) => o.program.replace(/\(\d+\)$/, '') === TRAIN_STEP_PROGRAM);
  const kernel = inStep.filter((o) => (o.customCall && KERNEL_OP.test(o.name)) || KERNEL_SCOPE.test(o.scope));
  if (kernel.length === 0) return undefined;
  // Per-step op times are per detected step; the detector may have chosen the train step or not, so
  // take the whole-trace totals over the annotation's count.
  const kernelMs = kernel.reduce((sum, o) => sum + o.totalMs, 0) / step.count;
  return { share: Math.min(1, kernelMs / step.medianMs), kernelMs, stepMs: step.medianMs };
}

/**
 * The share from the profiles when both traces can say, else the measurement's estimate (or nothing).
 */
export function kernelShare(
  levels: LevelsEvidence | undefined,
  traces: { champion?: TraceSummary; candidate?: TraceSummary },
): KernelShare | undefined {
  const model = levels?.model;
  const a = traces.champion ? tracedShare(traces.champion, model?.time.a ?? null) : undefined;
  const b = traces.candidate ? tracedShare(traces.candidate, model?.time.b ?? null) : undefined;
  if (a && b) {
    const ms = (x: number) => `${x.toFixed(3)} ms`;
    return {
      a: a.share,
      b: b.share,
      source: 'profile',
      detail: `from the profiles: GDN kernel ops ${ms(a.kernelMs)} of a ${ms(a.stepMs)} traced step before, ${ms(b.kernelMs)} of ${ms(b.stepMs)} after`,
    };
  }
  return levels?.share;
}

/** Amdahl's law: the step speed-up when a `share` of it gets `speedup`× faster. */
export function amdahlSpeedup(share: number, speedup: number): number {
  return 1 / (1 - share + share / speedup);
}

/** The most a kernel alone can give the step: the rest stays (1 / (1 − share)). */
export function amdahlLimit(share: number): number {
  return share >= 1 ? Number.POSITIVE_INFINITY : 1 / (1 - share);
}
