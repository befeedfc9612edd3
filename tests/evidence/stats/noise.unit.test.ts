// Expected MDE constants computed with scipy 1.17:
//   m = (t.ppf(.975, ν) + t.ppf(.8, ν)) · √(π/2) · 1.1 · CV · √(1/n_A + 1/n_B);  MDE = exp(m) − 1
import { describe, expect, it } from 'vitest';
import {
  BOOTSTRAP_WIDTH_FACTOR,
  calibrateNoise,
  MEDIAN_SE_FACTOR,
  mdeMultiplier,
  minimumDetectableEffect,
  pooledLogCv,
  robustNoiseCv,
} from '../../../src/evidence/stats/noise.js';

describe('minimumDetectableEffect', () => {
  it('follows the documented formula', () => {
    expect(MEDIAN_SE_FACTOR).toBeCloseTo(Math.sqrt(Math.PI / 2), 15);
    expect(BOOTSTRAP_WIDTH_FACTOR).toBe(1.1);
    expect(mdeMultiplier(8)).toBeCloseTo(4.4046259207371845, 9);
    expect(minimumDetectableEffect(0.01, 5, 5)).toBeCloseTo(Math.expm1(0.027857300301091556), 10);
    expect(minimumDetectableEffect(0.01, 15, 15)).toBeCloseTo(Math.expm1(0.014614272469297557), 10);
    expect(minimumDetectableEffect(0.02, 5, 8)).toBeCloseTo(Math.expm1(0.04835967307284848), 10);
    expect(minimumDetectableEffect(0.01, 5, 5)).toBeCloseTo(0.02824894, 7);
    expect(mdeMultiplier(8, { confidence: 0.99, power: 0.9 })).toBeCloseTo(6.551603028795206, 8);
  });

  it('scales with CV (in log units) and shrinks with √n towards the large-sample constant', () => {
    expect(Math.log1p(minimumDetectableEffect(0.02, 5, 5))).toBeCloseTo(
      2 * Math.log1p(minimumDetectableEffect(0.01, 5, 5)),
      12,
    );
    expect(minimumDetectableEffect(0, 5, 5)).toBe(0);
    const largeSample = (1.959963984540054 + 0.8416212335729143) * MEDIAN_SE_FACTOR * BOOTSTRAP_WIDTH_FACTOR;
    expect(mdeMultiplier(1e6)).toBeCloseTo(largeSample, 4);
  });

  it('rejects impossible arguments', () => {
    expect(() => minimumDetectableEffect(-0.01, 5, 5)).toThrow(RangeError);
    expect(() => minimumDetectableEffect(0.01, 1, 1)).toThrow(/run counts/);
    expect(() => mdeMultiplier(8, { power: 1 })).toThrow(/power/);
  });
});

describe('noise estimates', () => {
  it('pools the within-group log SD, ignoring shifts between groups', () => {
    const e = Math.exp;
    // Two groups with log SD 0.01 each, one 10% above the other.
    const g1 = [e(-0.01), 1, e(0.01)];
    const g2 = g1.map((v) => v * 1.1);
    expect(pooledLogCv([g1, g2])).toBeCloseTo(0.01, 12);
    expect(pooledLogCv([[1], [2]])).toBeNaN();
  });

  it('drops a disturbed run before estimating the noise floor', () => {
    const quiet = [100.2, 99.8, 100.1, 100.0, 99.9];
    const disturbed = [100.1, 99.9, 135, 100.0, 100.2];
    expect(pooledLogCv([quiet, disturbed])).toBeGreaterThan(0.08);
    expect(robustNoiseCv([quiet, disturbed])).toBeLessThan(0.002);
  });

  it('calibrates from A/A runs and says whether there were enough', () => {
    const c = calibrateNoise([[100.2, 99.8, 100.1, 100.0, 99.9]]);
    expect(c.cv).toBeCloseTo(0.00158, 4);
    expect(c.runs).toBe(5);
    expect(c.degreesOfFreedom).toBe(4);
    expect(c.sufficient).toBe(true);
    expect(
      calibrateNoise([
        [1, 1.01],
        [1.02, 1.0],
      ]).sufficient,
    ).toBe(false);
    expect(() => calibrateNoise([[1, Number.NaN, 1]])).toThrow(/group 0 run 1 is NaN/);
    expect(() => calibrateNoise([[1]])).toThrow(/at least two runs/);
  });
});
