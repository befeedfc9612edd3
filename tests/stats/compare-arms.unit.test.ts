import { describe, expect, it } from 'vitest';
import { compareArms, DEFAULT_POLICY, resolvePolicy } from '../../src/stats/compare-arms.js';
import {
  acceptMargin,
  minimumDetectableEffect,
  noiseUpperBound,
  robustNoise,
} from '../../src/stats/noise.js';
import { createRng } from '../../src/stats/random.js';

/** `n` log-normal runs around `typical` with per-run CV `cv`, reproducible from `seed`. */
function runs(typical: number, cv: number, n: number, seed: number): number[] {
  const rng = createRng(seed);
  return Array.from({ length: n }, () => typical * Math.exp(cv * rng.normal()));
}

const A_MS = runs(100, 0.01, 10, 1);

describe('compareArms', () => {
  it('calls identical arms no-change', () => {
    const c = compareArms(A_MS, [...A_MS], { direction: 'lower', seed: 1 });
    expect(c.verdict).toBe('no-change');
    expect(c.ratio).toBe(1);
    expect(c.ci!.lo).toBeLessThan(1);
    expect(c.ci!.hi).toBeGreaterThan(1);
    expect(c.reasons[0]).toMatch(/no significant change/);
  });

  it('calls a 20% speedup at CV 1% improved, with the speedup as A/B for lower-is-better', () => {
    const b = runs(100 / 1.2, 0.01, 10, 2);
    const c = compareArms(A_MS, b, { direction: 'lower', seed: 1 });
    expect(c.verdict).toBe('improved');
    expect(c.ratio).toBeCloseTo(c.a.median! / c.b.median!, 12);
    expect(c.ratio!).toBeGreaterThan(1.17);
    expect(c.ratio!).toBeLessThan(1.23);
    expect(c.ci!.lo).toBeGreaterThan(c.acceptBar!);
    expect(c.deltaPct).toBeCloseTo((c.ratio! - 1) * 100, 12);
    expect(c.deltaCiPct!.lo).toBeCloseTo((c.ci!.lo - 1) * 100, 12);
    expect(c.reasons[0]).toMatch(/^lower CI bound 1\.\d+ > accept bar 1\.\d+$/);
    expect(c.reasons[1]).toMatch(
      /^speedup \(median A \/ median B\) 1\.\d+ \[1\.\d+, 1\.\d+\] \(95% percentile CI, n = 10\/10\)$/,
    );
  });

  it('reads the same numbers the other way round for higher-is-better', () => {
    // Times fell by 20%: as "higher is better" values that is a drop, so a regression.
    const b = runs(100 / 1.2, 0.01, 10, 2);
    const asHigher = compareArms(A_MS, b, { direction: 'higher', seed: 1 });
    expect(asHigher.verdict).toBe('regressed');
    expect(asHigher.ratio).toBeCloseTo(asHigher.b.median! / asHigher.a.median!, 12);
    expect(asHigher.ci!.hi).toBeLessThan(asHigher.regressBar);
    // MFU up by 20% is an improvement.
    const mfuA = runs(0.3, 0.01, 8, 3);
    const mfuB = runs(0.36, 0.01, 8, 4);
    const up = compareArms(mfuA, mfuB, { direction: 'higher', seed: 1 });
    expect(up.verdict).toBe('improved');
    expect(up.reasons[1]).toMatch(/^gain \(median B \/ median A\)/);
  });

  it('calls a clear slowdown regressed', () => {
    const b = runs(105, 0.005, 8, 5);
    const c = compareArms(runs(100, 0.005, 8, 6), b, { direction: 'lower', seed: 1 });
    expect(c.verdict).toBe('regressed');
    expect(c.reasons[0]).toMatch(/^upper CI bound 0\.\d+ < regression bar 0\.9800$/);
  });

  it('sends an implausible speedup to a human instead of accepting it', () => {
    const b = A_MS.map((v) => v / 25);
    const c = compareArms(A_MS, b, { direction: 'lower', seed: 1 });
    expect(c.verdict).toBe('needs-human');
    expect(c.reasons[0]).toMatch(/exceeds the plausibility ceiling 10×/);
    const allowed = compareArms(A_MS, b, { direction: 'lower', seed: 1, implausibleSpeedup: 50 });
    expect(allowed.verdict).toBe('improved');
  });

  it('is invalid, saying why, for NaN, non-positive values and too few runs', () => {
    const nan = compareArms(A_MS, [1, 2, Number.NaN, 3, 4], { direction: 'lower', seed: 1 });
    expect(nan.verdict).toBe('invalid');
    expect(nan.reasons).toEqual(['B (candidate): run 2 is NaN']);
    expect(nan.ratio).toBeNull();
    expect(nan.ci).toBeNull();
    expect(nan.b.median).toBeNull();
    expect(nan.a.median).not.toBeNull();

    const zero = compareArms([1, 0, 1, 1, -2], A_MS, { direction: 'higher', seed: 1 });
    expect(zero.verdict).toBe('invalid');
    expect(zero.reasons[0]).toBe(
      'A (champion): run 1 is 0, but a ratio of medians needs positive values; run 4 is -2, but a ratio of medians needs positive values',
    );

    const short = compareArms(A_MS, [99, 98, 97], { direction: 'lower', seed: 1 });
    expect(short.verdict).toBe('invalid');
    expect(short.reasons).toEqual(['B (candidate) has 3 runs; a verdict needs at least 5 per arm']);

    const inf = compareArms(A_MS, [1, 2, 3, Number.POSITIVE_INFINITY, 5], { direction: 'lower', seed: 1 });
    expect(inf.reasons).toEqual(['B (candidate): run 3 is Infinity']);
  });

  it('is deterministic for a seed', () => {
    const b = runs(97, 0.01, 10, 8);
    const one = compareArms(A_MS, b, { direction: 'lower', seed: 11 });
    expect(compareArms(A_MS, b, { direction: 'lower', seed: 11 })).toEqual(one);
    expect(one.seed).toBe(11);
    expect(one.resamples).toBe(2000);
  });

  it('sets the accept bar to 1 + max(practical δ, noise margin), reports the MDE, and says where the noise came from', () => {
    const b = runs(99, 0.01, 10, 9);
    const observed = compareArms(A_MS, b, { direction: 'lower', seed: 1 });
    expect(observed.mdeSource).toBe('observed');
    const [nA, nB] = [A_MS.length, b.length];
    expect(observed.acceptMargin).toBeCloseTo(acceptMargin(observed.noiseCv!, nA, nB), 12);
    expect(observed.acceptBar).toBeCloseTo(1 + Math.max(observed.acceptMargin!, 0.02), 12);
    // The MDE is computed at the observed CV's 90% upper bound, not at the estimate.
    const { degreesOfFreedom } = robustNoise([A_MS, b]);
    expect(observed.mdeCv).toBeCloseTo(noiseUpperBound(observed.noiseCv!, degreesOfFreedom), 12);
    expect(observed.mdeCv!).toBeGreaterThan(1.2 * observed.noiseCv!);
    expect(observed.mde).toBeCloseTo(minimumDetectableEffect(observed.mdeCv!, nA, nB), 12);
    expect(observed.mde!).toBeGreaterThan(minimumDetectableEffect(observed.noiseCv!, nA, nB));
    expect(observed.mde!).toBeGreaterThan(observed.acceptBar! - 1);
    expect(observed).toMatchObject({ falseAcceptRate: 0.01, power: 0.8, practicalDelta: 0.02 });
    expect(observed.reasons[2]).toMatch(
      /^accept bar 1\.0200 = 1 \+ max\(practical δ 2\.00%, noise margin 0\.\d\d% for ≤ 1\.00% false accepts at no change\); detectable with 80% power: \d\.\d\d% \(observed CV \d\.\d\d%, n = \d+\/\d+; MDE at CV \d\.\d\d%, its 90% upper bound\); regression bar 0\.9800$/,
    );

    // A calibration noisier than today's runs raises the floor; a quieter one does not lower it.
    const noisy = compareArms(A_MS, b, { direction: 'lower', seed: 1, calibratedCv: 0.03 });
    expect(noisy.mdeSource).toBe('calibrated');
    expect(noisy.noiseCv).toBe(0.03);
    expect(noisy.mdeCv).toBe(0.03);
    expect(noisy.mde!).toBeGreaterThan(observed.mde!);
    expect(noisy.reasons[2]).toMatch(
      /MDE at CV 3\.00%, the larger of that CV and the observed CV's 90% upper bound\)/,
    );
    const quiet = compareArms(A_MS, b, { direction: 'lower', seed: 1, calibratedCv: 0.0001 });
    expect(quiet.mdeSource).toBe('observed');
    expect(quiet.mde).toBe(observed.mde);
    expect(quiet.reasons.at(-1)).toMatch(/more than twice the A\/A calibration/);

    const fixed = compareArms(A_MS, b, { direction: 'lower', seed: 1, mde: 0.05 });
    expect(fixed.mdeSource).toBe('fixed');
    expect(fixed.noiseCv).toBeNull();
    expect(fixed.mdeCv).toBeNull();
    expect(fixed.acceptBar).toBeCloseTo(1.05, 12);
  });

  it('never accepts less than the practical δ, even without noise', () => {
    const a = [10, 10, 10, 10, 10];
    const small = compareArms(a, [9.95, 9.95, 9.95, 9.95, 9.95], { direction: 'lower', seed: 1 });
    expect(small.ci).toEqual({ lo: 10 / 9.95, hi: 10 / 9.95 });
    expect(small.acceptMargin).toBe(0);
    expect(small.mde).toBeCloseTo(0.02, 12);
    expect(small.verdict).toBe('no-change');
    const big = compareArms(a, [9.8, 9.8, 9.8, 9.8, 9.8], { direction: 'lower', seed: 1 });
    expect(big.verdict).toBe('improved');
  });

  it('fills in the documented defaults and rejects out-of-range knobs', () => {
    expect(DEFAULT_POLICY).toEqual({
      confidence: 0.95,
      resamples: 2000,
      ciMethod: 'percentile',
      practicalDelta: 0.02,
      regressionDelta: 0.02,
      power: 0.8,
      falseAcceptRate: 0.01,
      implausibleSpeedup: 10,
      minRuns: 5,
    });
    expect(() => compareArms(A_MS, A_MS, { direction: 'lower', seed: 1, falseAcceptRate: 0.5 })).toThrow(
      /falseAcceptRate/,
    );
    expect(resolvePolicy({ practicalDelta: 0.03 }).regressionDelta).toBe(0.03);
    expect(resolvePolicy({ practicalDelta: 0.02, regressionDelta: 0.005 }).regressionDelta).toBe(0.005);
    expect(() => compareArms(A_MS, A_MS, { direction: 'lower', seed: 1, implausibleSpeedup: 1 })).toThrow(
      RangeError,
    );
    expect(() => compareArms(A_MS, A_MS, { direction: 'lower', seed: 1, minRuns: 1 })).toThrow(/minRuns/);
    expect(() => compareArms(A_MS, A_MS, { direction: 'up' as 'lower', seed: 1 })).toThrow(/direction/);
    expect(() => compareArms(A_MS, A_MS, { direction: 'lower', seed: 1, resamples: 100 })).toThrow(
      /resamples/,
    );
  });

  it('uses BCa when asked', () => {
    const b = runs(95, 0.01, 10, 10);
    const c = compareArms(A_MS, b, { direction: 'lower', seed: 1, ciMethod: 'bca' });
    expect(c.ciMethod).toBe('bca');
    expect(c.reasons[1]).toMatch(/95% BCa CI/);
  });
});

describe('an MDE beyond the plausibility ceiling', () => {
  it('is said as nothing detectable, not printed as a gain the rule could accept', () => {
    // Rounds so noisy that the MDE passes 10×: any ratio that large is needs-human, so nothing is detectable.
    const a = [1, 9, 2, 14, 1.5];
    const b = [8, 1.2, 11, 1.1, 12];
    const c = compareArms(a, b, { direction: 'lower', seed: 1, paired: true });
    expect(1 + c.mde!).toBeGreaterThan(10);
    expect(c.mdeBeyondCeiling).toBe(true);
    expect(c.reasons.join('\n')).toContain(
      'detectable with 80% power: nothing below the plausibility ceiling 10×',
    );
    const quiet = compareArms([10, 10.1, 9.9, 10, 10.05], [9, 9.1, 8.9, 9.05, 9], {
      direction: 'lower',
      seed: 1,
      paired: true,
    });
    expect(quiet.mdeBeyondCeiling).toBeUndefined();
  });
});
