// The two levels: per-run numbers from the metrics JSON, per-arm medians with intervals, the kernels'
// share of the step (from the measurement or the trace) and Amdahl's bound.
import { describe, expect, it } from 'vitest';
import {
  amdahlLimit,
  amdahlSpeedup,
  kernelShare,
  levelChange,
  peakInfo,
  type RunLevels,
  runLevels,
  summarizeLevels,
  tracedShare,
} from '../../src/evidence/levels.js';
import type { MetricsFile } from '../../src/evidence/metrics.js';
import { type Comparison, compareArms } from '../../src/stats/index.js';
import { summaryOf } from '../trace/summary-builder.js';

const OPTS = { confidence: 0.95, resamples: 2000, seed: 7 };

function metrics(overrides: Partial<MetricsFile> = {}): MetricsFile {
  const m = (median: number, mfu: number | null, tokens: number) => ({
    samples_ms: [median],
    median_ms: median,
    p10_ms: median,
    p90_ms: median,
    flops: 1,
    tflops_per_s: 1,
    mfu,
    tokens_per_s: tokens,
  });
  return {
    schema: 'hillclimb.metrics/v1',
    target: 'gdn',
    impl: 'pallas',
    preset: 'tiny',
    created_at: '2026-11-21T09:15:02Z',
    device: { backend: 'cpu', kind: 'cpu', count: 1, peak_flops_per_s: 2.5e11, interpret: true },
    shapes: { B: 1, T: 256, H: 2, K: 32, V: 32, chunk_size: 64 },
    dtype: 'float32',
    timing: { warmup: 2, repeats: 10, clock: 'perf_counter+block_until_ready' },
    measurements: {
      fwd: m(0.7, 0.08, 365_000),
      fwd_bwd: m(1.8, 0.095, 142_000),
      train_step: m(17, 0.092, 15_000),
    },
    versions: { python: '3.11', jax: '0.10.2', jaxlib: '0.10.2' },
    git: { commit: null, dirty: null },
    ...overrides,
  };
}

/** Runs of two arms with the kernel and the step scaled per arm, with a little spread. */
function runsOf(
  kernel: { a: number; b: number },
  rest = 11.6,
  n = 6,
): Array<{ arm: 'A' | 'B'; levels: RunLevels }> {
  const spread = [0, 0.01, -0.008, 0.004, -0.012, 0.006];
  return (['A', 'B'] as const).flatMap((arm) =>
    Array.from({ length: n }, (_, i) => {
      const k = (arm === 'A' ? kernel.a : kernel.b) * (1 + spread[i % spread.length]!);
      const step = rest + 3 * k;
      return {
        arm,
        levels: {
          kernelMs: k,
          kernelMfu: 0.17 / k,
          stepMs: step,
          tokensPerS: 256 / (step / 1e3),
          modelMfu: 1.57 / step,
          peakFlopsPerS: 2.5e11,
        },
      };
    }),
  );
}

describe('runLevels', () => {
  it('reads both levels of one run from its metrics', () => {
    expect(runLevels(metrics())).toEqual({
      kernelMs: 1.8,
      kernelMfu: 0.095,
      stepMs: 17,
      tokensPerS: 15_000,
      modelMfu: 0.092,
      peakFlopsPerS: 2.5e11,
    });
  });

  it('leaves out what the run did not time', () => {
    const kernelOnly = metrics();
    delete kernelOnly.measurements.train_step;
    expect(runLevels(kernelOnly)).toMatchObject({ kernelMs: 1.8, stepMs: null, modelMfu: null });
  });

  it('knows where the peak came from, in files of this bench and older ones', () => {
    const measured = metrics();
    measured.device.peak = {
      source: 'measured',
      name: 'measured 512^3 float32 matmul',
      dtype: 'fp32',
      flops_per_s: 2.5e11,
      warning: "device kind 'cpu' is not in schemas/device-peaks.json",
      measured: { flops_per_s: 2.5e11, n: 512, dtype: 'float32', repeats: 10, samples_ms: [1.07] },
    };
    expect(peakInfo(measured)).toEqual({
      source: 'measured',
      name: 'measured 512^3 float32 matmul',
      dtype: 'fp32',
    });
    // An older bench: a null peak means no MFU; a number was the table's bf16 figure.
    expect(
      peakInfo(metrics({ device: { ...measured.device, peak: undefined, peak_flops_per_s: null } })),
    ).toBe(undefined);
    const tpu = { backend: 'tpu', kind: 'TPU v5', count: 1, peak_flops_per_s: 459e12, interpret: false };
    expect(peakInfo(metrics({ device: tpu }))).toEqual({ source: 'table', name: 'TPU v5', dtype: 'bf16' });
  });
});

describe('levelChange', () => {
  it('is the improvement ratio (A/B for a time, B/A otherwise) with an interval around it', () => {
    const time = levelChange([10, 10.2, 9.9, 10.1], [8, 8.1, 7.9, 8.05], 'lower', OPTS);
    expect(time.ratio).toBeCloseTo(10.05 / 8.025, 10);
    expect(time.ci!.lo).toBeLessThanOrEqual(time.ratio!);
    expect(time.ci!.hi).toBeGreaterThanOrEqual(time.ratio!);
    const mfu = levelChange([0.1, 0.11, 0.1], [0.12, 0.12, 0.13], 'higher', OPTS);
    expect(mfu.ratio).toBeCloseTo(0.12 / 0.1, 10);
    expect(mfu.ci!.lo).toBeGreaterThan(1);
  });

  it('has no interval from a single run, and no ratio without both arms', () => {
    expect(levelChange([10], [8], 'lower', OPTS)).toMatchObject({ ratio: 1.25, ci: null, nA: 1, nB: 1 });
    expect(levelChange([], [8, 9], 'lower', OPTS)).toMatchObject({ a: null, ratio: null, ci: null });
  });
});

describe('levels of a paired verdict', () => {
  it("give the kernel MFU exactly the kernel time's interval (one FLOP count, one peak), not an interval of its own", () => {
    // Rounds of one session: both arms slowed alike round by round, B 20% faster.
    const load = [1, 1.04, 0.98, 1.07, 1.01, 0.99];
    const runs = (['A', 'B'] as const).flatMap((arm) =>
      load.map((l, i) => {
        const k = (arm === 'A' ? 10 : 10 / 1.2) * l * (1 + 0.003 * ((i * (arm === 'A' ? 3 : 5)) % 4));
        const levels: RunLevels = {
          kernelMs: k,
          kernelMfu: 0.17 / k,
          stepMs: null,
          tokensPerS: null,
          modelMfu: null,
          peakFlopsPerS: 2.5e11,
        };
        return { arm, index: i + 1, levels };
      }),
    );
    const times = (arm: 'A' | 'B') =>
      runs.filter((r) => r.arm === arm).map((r) => r.levels.kernelMs as number);
    const comparison = compareArms(times('A'), times('B'), { direction: 'lower', seed: 1, paired: true });
    const levels = summarizeLevels(
      runs,
      { verdict: { path: 'measurements.fwd_bwd.median_ms', comparison } },
      OPTS,
    );
    expect(levels.kernel.time.ci).toEqual(comparison.ci);
    expect(levels.kernel.mfu.ratio).toBeCloseTo(comparison.ratio!, 12);
    expect(levels.kernel.mfu.ci!.lo).toBeCloseTo(comparison.ci!.lo, 12);
    expect(levels.kernel.mfu.ci!.hi).toBeCloseTo(comparison.ci!.hi, 12);
  });
});

describe('summarizeLevels', () => {
  const model = { preset: 'tiny', gdnLayers: 3, layerMatchesKernel: true };
  const peak = { source: 'measured' as const, name: 'measured 512^3 float32 matmul', dtype: 'fp32' };

  it('summarizes both levels and estimates the share from the medians', () => {
    const levels = summarizeLevels(runsOf({ a: 1.9, b: 1.4 }), { peak, model }, OPTS);
    expect(levels.kernel.time.ratio).toBeCloseTo(1.9 / 1.4, 2);
    expect(levels.model!.preset).toBe('tiny');
    // The step moves by much less than the kernel: 11.6 + 3 × 1.9 = 17.3 ms → 15.8 ms.
    expect(levels.model!.time.ratio).toBeCloseTo(17.3 / 15.8, 2);
    expect(levels.model!.time.ratio!).toBeLessThan(levels.kernel.time.ratio!);
    expect(levels.model!.mfu.b!).toBeGreaterThan(levels.model!.mfu.a!);
    expect(levels.share).toMatchObject({ source: 'measurement' });
    expect(levels.share!.a).toBeCloseTo((3 * 1.9) / 17.3, 2);
    expect(levels.share!.b).toBeCloseTo((3 * 1.4) / 15.8, 2);
    expect(levels.peak).toEqual(peak);
  });

  it('leaves runs without levels (failed ones) out, and the model out when no step was timed', () => {
    const runs: Array<{ arm: 'A' | 'B'; levels?: RunLevels }> = [...runsOf({ a: 2, b: 1 }), { arm: 'B' }];
    const kernelOnly = runs.map((r) => (r.levels ? { ...r, levels: { ...r.levels, stepMs: null } } : r));
    const levels = summarizeLevels(kernelOnly, { model }, OPTS);
    expect(levels.kernel.time.nB).toBe(6);
    expect(levels.model).toBeUndefined();
    expect(levels.share).toBeUndefined();
  });

  it('estimates no share when the kernel was timed at another shape than the model calls it', () => {
    const levels = summarizeLevels(
      runsOf({ a: 2, b: 1 }),
      { model: { ...model, layerMatchesKernel: false } },
      OPTS,
    );
    expect(levels.model).toBeDefined();
    expect(levels.share).toBeUndefined();
  });

  // Issue 23.2: the demo printed "model MFU 8.21% → 7.07%" beside a step 7.8% faster — each session
  // re-measures the matmul peak, and B's rounds met a higher one. Against one pooled peak, MFU moves
  // exactly against the time.
  it('puts both arms on one peak, so MFU moves against the time whatever each session measured', () => {
    const runs = runsOf({ a: 1.9, b: 1.7 }).map((r, i) => {
      // The candidate's sessions measured a peak 40% higher (a quieter machine): its MFUs read lower.
      const own = (r.arm === 'B' ? 3.5e11 : 2.5e11) * (1 + 0.001 * i);
      const scale = 2.5e11 / own;
      return {
        ...r,
        levels: {
          ...r.levels,
          kernelMfu: r.levels.kernelMfu! * scale,
          modelMfu: r.levels.modelMfu! * scale,
          peakFlopsPerS: own,
        },
      };
    });
    const levels = summarizeLevels(runs, { peak, model }, OPTS);
    expect(levels.kernel.time.ratio!).toBeGreaterThan(1);
    expect(levels.model!.time.ratio!).toBeGreaterThan(1);
    // Faster, and higher MFU at both levels: the ratios agree to rounding.
    expect(levels.kernel.mfu.b!).toBeGreaterThan(levels.kernel.mfu.a!);
    expect(levels.model!.mfu.b!).toBeGreaterThan(levels.model!.mfu.a!);
    expect(levels.kernel.mfu.ratio!).toBeCloseTo(levels.kernel.time.ratio!, 2);
    expect(levels.model!.mfu.ratio!).toBeCloseTo(levels.model!.time.ratio!, 2);
    expect(levels.pooledPeak).toMatchObject({ n: 12, min: 2.5e11 });
    expect(levels.pooledPeak!.max).toBeCloseTo(3.5e11 * 1.011, -8);
  });

  it("gives the verdict metric's level the verdict's own interval", () => {
    const comparison = { ratio: 1.3571, ci: { lo: 1.3, hi: 1.41 } } as Comparison;
    const levels = summarizeLevels(
      runsOf({ a: 1.9, b: 1.4 }),
      { model, verdict: { path: 'measurements.fwd_bwd.median_ms', comparison } },
      OPTS,
    );
    expect(levels.kernel.time).toMatchObject({ ratio: 1.3571, ci: { lo: 1.3, hi: 1.41 } });
    expect(levels.model!.time.ci).not.toEqual({ lo: 1.3, hi: 1.41 });
  });
});

describe("the kernels' share from the trace", () => {
  /** A train step of 30 ms traced over 5 steps, with the kernel's custom calls inside it. */
  function trainTrace(kernelMs: number, stepMs = 30) {
    const s = summaryOf(
      [
        ['gdn_chunk_fwd', 'custom-call', kernelMs / 3, 3, 'jit_train_step(7)'],
        ['gdn_chunk_bwd', 'custom-call', (2 * kernelMs) / 3, 3, 'jit_train_step(7)'],
        ['fusion.1', 'loop fusion', stepMs - kernelMs - 2, 40, 'jit_train_step(7)'],
        ['gdn_chunk_bwd', 'custom-call', 1, 1, 'jit_fwd_bwd(3)'],
      ],
      { count: 5 },
    );
    s.steps.annotations = [{ name: 'hillclimb_train_step', count: 5, meanMs: stepMs, medianMs: stepMs }];
    // Whole-trace totals over the annotation's 5 steps (summaryOf counts the steps it was given).
    for (const op of s.ops) op.totalMs = op.timeMs * 5;
    return s;
  }

  it('is the kernel ops of the train-step program over the traced step', () => {
    const traced = tracedShare(trainTrace(12), 30.5)!;
    expect(traced.kernelMs).toBeCloseTo(12, 10);
    expect(traced.share).toBeCloseTo(12 / 30, 10);
  });

  it('says nothing when the trace cannot: no train step, no kernel ops named, or profiler-inflated', () => {
    expect(tracedShare(summaryOf([['fusion', 'loop fusion', 1, 1]]), 10)).toBeUndefined();
    const anonymous = trainTrace(12);
    anonymous.ops = anonymous.ops.filter((o) => !o.name.startsWith('gdn_'));
    expect(tracedShare(anonymous, 30)).toBeUndefined();
    expect(tracedShare(trainTrace(12), 10)).toBeUndefined(); // traced 3× the measured step
  });

  it('prefers the profiles when both can say, else keeps the measurement estimate', () => {
    const levels = summarizeLevels(
      runsOf({ a: 1.9, b: 1.4 }),
      { model: { preset: 'tiny', gdnLayers: 3, layerMatchesKernel: true } },
      OPTS,
    );
    levels.model!.time.a = 30;
    levels.model!.time.b = 27;
    const share = kernelShare(levels, { champion: trainTrace(12, 30), candidate: trainTrace(9, 27) })!;
    expect(share.source).toBe('profile');
    expect(share.a).toBeCloseTo(0.4, 10);
    expect(share.b).toBeCloseTo(9 / 27, 10);
    expect(share.detail).toBe(
      'from the profiles: GDN kernel ops 12.000 ms of a 30.000 ms traced step before, 9.000 ms of 27.000 ms after',
    );
    expect(kernelShare(levels, { champion: trainTrace(12, 30), candidate: summaryOf([]) })).toBe(
      levels.share,
    );
  });
});

describe("Amdahl's law", () => {
  it('bounds the step speed-up by the share the kernels have', () => {
    // The example: kernels 38% of the step, 2× faster → at most 1.24×.
    expect(amdahlSpeedup(0.38, 2)).toBeCloseTo(1.2346, 4);
    expect(amdahlLimit(0.38)).toBeCloseTo(1.6129, 4);
    expect(amdahlSpeedup(0.38, 1)).toBe(1);
    expect(amdahlLimit(1)).toBe(Number.POSITIVE_INFINITY);
  });
});
