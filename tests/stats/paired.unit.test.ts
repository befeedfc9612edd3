// The paired rule's interval (src/stats/paired.ts): Student's t on the rounds' log ratios.
import { describe, expect, it } from 'vitest';
import { compareArms } from '../../src/stats/compare-arms.js';
import { acceptMargin, minimumDetectableEffect } from '../../src/stats/noise.js';
import { pairedLogRatio } from '../../src/stats/paired.js';
import {
  pairedRoundsRule,
  powerAtPrintedMde,
  printedIntervalCoverage,
  type Scenario,
  simulate,
} from '../../src/stats/simulation.js';
import { studentTQuantile } from '../../src/stats/student.js';

describe('pairedLogRatio', () => {
  it('is the t interval of the mean log ratio, exponentiated', () => {
    const d = [0.1, 0.12, 0.08, 0.11, 0.09];
    const den = [3, 5, 4, 6, 2];
    const num = den.map((x, i) => x * Math.exp(d[i]!));
    const r = pairedLogRatio(num, den, 0.95);
    const mean = 0.1;
    const sd = Math.sqrt(d.reduce((s, x) => s + (x - mean) ** 2, 0) / 4);
    const half = studentTQuantile(0.975, 4) * (sd / Math.sqrt(5));
    expect(r.estimate).toBeCloseTo(Math.exp(mean), 12);
    expect(r.ci.lo).toBeCloseTo(Math.exp(mean - half), 12);
    expect(r.ci.hi).toBeCloseTo(Math.exp(mean + half), 12);
    expect(r.logSd).toBeCloseTo(sd, 12);
  });

  it('cancels a machine that drifts across rounds', () => {
    // Both arms slow down together round by round (a neighbour's job ramping up); B is 10% faster.
    const drift = [1, 1.06, 1.12, 1.2, 1.3, 1.42, 1.55];
    const jitter = [1.001, 0.999, 1.002, 0.998, 1.0, 1.001, 0.999];
    const a = drift.map((x, i) => 10 * x * jitter[i]!);
    const b = drift.map((x, i) => (10 / 1.1) * x * jitter[(i + 3) % 7]!);
    const paired = pairedLogRatio(a, b, 0.95);
    expect(paired.ci.lo).toBeGreaterThan(1.09);
    expect(paired.ci.hi).toBeLessThan(1.11);
  });

  it('refuses what it cannot judge', () => {
    expect(() => pairedLogRatio([1, 2], [1], 0.95)).toThrow('paired arms need equal lengths, got 2 and 1');
    expect(() => pairedLogRatio([1], [1], 0.95)).toThrow('at least two rounds');
    expect(() => pairedLogRatio([1, 2], [1, 2], 1)).toThrow('confidence');
  });
});

describe('the paired verdict', () => {
  it('prints the t interval and names it, and accepts exactly when the one-sided bound clears the margin', () => {
    const a = [10.2, 10.1, 10.4, 10.0, 10.3];
    const b = [8.3, 8.2, 8.6, 8.1, 8.3];
    const c = compareArms(a, b, { direction: 'lower', seed: 1, paired: true });
    const r = pairedLogRatio(a, b, 0.95);
    expect(c.ratio).toBeCloseTo(r.estimate, 12);
    expect(c.ci).toEqual(r.ci);
    expect(c.ciMethod).toBe('paired-t');
    expect(c.resamples).toBe(0);
    expect(c.reasons.join('\n')).toContain("t interval of the rounds' log ratios");
    expect(c.verdict).toBe('improved');
    // The margin: (t_{.99} − t_{.975}) · SE, the SE of the mean log ratio.
    const se = r.logSd / Math.sqrt(5);
    expect(c.acceptMargin).toBeCloseTo(
      Math.expm1((studentTQuantile(0.99, 4) - studentTQuantile(0.975, 4)) * se),
      12,
    );
    expect(acceptMargin(r.logSd / Math.SQRT2, 5, 5, { paired: true })).toBeCloseTo(c.acceptMargin!, 12);
  });

  it('keeps its interval at 95% and its false accepts at 1% for every n and noise shape (simulation)', () => {
    // 3 binomial SEs of slack at 1,500 trials: 95% − 1.7 points; the t interval is exact for
    // log-normal noise and conservative for the heavier shapes.
    for (const shape of ['lognormal', 't3', 'one-arm', 'drift'] as const) {
      for (const n of [5, 7]) {
        const scenario: Scenario = { cv: 0.02, trueRatio: 1, direction: 'lower', shape };
        const cov = printedIntervalCoverage(pairedRoundsRule(n), scenario, { trials: 1500, seed: n });
        expect(cov.coverage, `${shape} n = ${n}`).toBeGreaterThan(0.933);
        // δ = 0 so that the margin alone holds the false accepts.
        const fa = simulate(pairedRoundsRule(n, { practicalDelta: 0 }), scenario, {
          trials: 1500,
          seed: n + 1,
        });
        expect(fa.acceptRate, `${shape} n = ${n}`).toBeLessThan(0.01 + 3 * Math.sqrt(0.0099 / 1500));
      }
    }
  });

  it('has the power it prints under drift (the ratio of medians had 69% at 15 rounds)', () => {
    const scenario: Scenario = { cv: 0.02, trueRatio: 1, direction: 'lower', shape: 'drift' };
    const p = powerAtPrintedMde(pairedRoundsRule(15), scenario, { trials: 400, seed: 5 });
    expect(p.power).toBeGreaterThan(0.8);
    expect(minimumDetectableEffect(0.02, 15, 15, { paired: true })).toBeLessThan(p.medianMde);
  });
});
