import { describe, expect, it } from 'vitest';
import { bootstrapRatioOfMedians, MIN_RESAMPLES } from '../../src/stats/bootstrap.js';
import { median, quantileOfSorted } from '../../src/stats/describe.js';
import { createRng } from '../../src/stats/random.js';

// Ten runs per arm; scipy reference below computed on exactly these values.
const A = [100.0, 101.3, 99.2, 100.8, 98.9, 102.4, 100.1, 99.7, 101.9, 100.4];
const B = [90.1, 91.4, 89.8, 92.6, 90.9, 88.7, 91.2, 90.4, 93.8, 90.0];

/** The textbook bootstrap, written the slow and obvious way, drawing from the PRNG in the same order. */
function naivePercentile(num: number[], den: number[], seed: number, resamples: number): [number, number] {
  const rng = createRng(seed);
  const resample = (xs: number[]): number[] => xs.map(() => xs[rng.int(xs.length)]!);
  const sortedNum = [...num].sort((x, y) => x - y);
  const sortedDen = [...den].sort((x, y) => x - y);
  const ratios: number[] = [];
  for (let r = 0; r < resamples; r++) {
    const n = median(resample(sortedNum));
    ratios.push(n / median(resample(sortedDen)));
  }
  ratios.sort((x, y) => x - y);
  return [quantileOfSorted(ratios, 0.025), quantileOfSorted(ratios, 0.975)];
}

describe('bootstrapRatioOfMedians', () => {
  it('estimates the ratio of medians', () => {
    const r = bootstrapRatioOfMedians(A, B, { seed: 1 });
    expect(r.estimate).toBeCloseTo(median(A) / median(B), 14);
    expect(r.resamples).toBe(MIN_RESAMPLES);
    expect(r.confidence).toBe(0.95);
  });

  it('equals the obvious resample-sort-median bootstrap draw for draw (odd and even n)', () => {
    for (const [num, den] of [
      [A, B],
      [A.slice(0, 5), B.slice(0, 7)],
    ] as const) {
      const fast = bootstrapRatioOfMedians([...num], [...den], { seed: 99 });
      const [lo, hi] = naivePercentile([...num], [...den], 99, MIN_RESAMPLES);
      expect(fast.percentile.lo).toBe(lo);
      expect(fast.percentile.hi).toBe(hi);
    }
  });

  it('matches scipy.stats.bootstrap percentile and BCa intervals', () => {
    // scipy 1.17: bootstrap((A, B), median(x)/median(y), n_resamples=200000, method=...):
    //   percentile [1.091304347826087, 1.1222466960352422], BCa [1.088139281828074, 1.12]
    const r = bootstrapRatioOfMedians(A, B, { seed: 5, resamples: 200_000 });
    expect(r.percentile.lo).toBeCloseTo(1.091304347826087, 3);
    expect(r.percentile.hi).toBeCloseTo(1.1222466960352422, 3);
    expect(r.bca.lo).toBeCloseTo(1.088139281828074, 3);
    expect(r.bca.hi).toBeCloseTo(1.12, 3);
    expect(r.bcaFallback).toBe(false);
  });

  it('is deterministic for a seed and varies a little between seeds', () => {
    const one = bootstrapRatioOfMedians(A, B, { seed: 3 });
    expect(bootstrapRatioOfMedians(A, B, { seed: 3 })).toEqual(one);
    const other = bootstrapRatioOfMedians(A, B, { seed: 4 });
    expect(other.estimate).toBe(one.estimate);
    expect(Math.abs(other.percentile.lo - one.percentile.lo)).toBeLessThan(0.01);
  });

  it('gives a zero-width interval when every run is identical', () => {
    const r = bootstrapRatioOfMedians([5, 5, 5, 5, 5], [4, 4, 4, 4, 4], { seed: 1 });
    expect(r.estimate).toBe(1.25);
    expect(r.percentile).toEqual({ lo: 1.25, hi: 1.25 });
    expect(r.bca).toEqual({ lo: 1.25, hi: 1.25 });
    expect(r.bcaFallback).toBe(true);
  });

  it('refuses fewer than the minimum resamples, bad confidence levels and empty arms', () => {
    expect(() => bootstrapRatioOfMedians(A, B, { seed: 1, resamples: 500 })).toThrow(/resamples/);
    expect(() => bootstrapRatioOfMedians(A, B, { seed: 1, confidence: 1 })).toThrow(/confidence/);
    expect(() => bootstrapRatioOfMedians([], B, { seed: 1 })).toThrow(RangeError);
  });
});
