import { describe, expect, it } from 'vitest';
import {
  logCv,
  median,
  quantileOfSorted,
  sampleVariance,
  sortedCopy,
  withoutOutliers,
} from '../../src/stats/describe.js';

describe('descriptive statistics', () => {
  it('takes medians of odd and even counts without mutating the input', () => {
    const values = [3, 1, 2];
    expect(median(values)).toBe(2);
    expect(values).toEqual([3, 1, 2]);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });

  it('interpolates quantiles like numpy.quantile (type 7)', () => {
    // numpy.quantile([3,1,4,1,5,9,2,6], [0.1, 0.25, 0.5, 0.9]) = [1, 1.75, 3.5, 6.9]
    const sorted = sortedCopy([3, 1, 4, 1, 5, 9, 2, 6]);
    expect(quantileOfSorted(sorted, 0.1)).toBeCloseTo(1, 12);
    expect(quantileOfSorted(sorted, 0.25)).toBeCloseTo(1.75, 12);
    expect(quantileOfSorted(sorted, 0.5)).toBeCloseTo(3.5, 12);
    expect(quantileOfSorted(sorted, 0.9)).toBeCloseTo(6.9, 12);
  });

  it('estimates CV as the SD of ln(value)', () => {
    expect(sampleVariance([1, 2, 3, 4])).toBeCloseTo(5 / 3, 12);
    expect(logCv([2, 2, 2])).toBe(0);
    // ln values −0.01, 0, 0.01 have SD 0.01.
    expect(logCv([Math.exp(-0.01), 1, Math.exp(0.01)])).toBeCloseTo(0.01, 12);
  });

  it("drops values outside Tukey's fences on the log scale and keeps the order", () => {
    const runs = [100.2, 99.8, 100.1, 140, 99.9, 100.0];
    expect(withoutOutliers(runs)).toEqual([100.2, 99.8, 100.1, 99.9, 100.0]);
    const clean = [100.2, 99.8, 100.1, 100.4, 99.9];
    expect(withoutOutliers(clean)).toEqual(clean);
    // Too few values to judge: nothing is dropped.
    expect(withoutOutliers([1, 100, 1000])).toEqual([1, 100, 1000]);
  });
});
