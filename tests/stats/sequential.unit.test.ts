import { describe, expect, it } from 'vitest';
import { compareArms } from '../../src/stats/compare-arms.js';
import { createRng } from '../../src/stats/random.js';
import {
  DEFAULT_SEQUENTIAL_POLICY,
  decideNext,
  futilityBar,
  maxLooks,
  perLookOptions,
} from '../../src/stats/sequential.js';
import { fixedRunsRule, simulate } from '../../src/stats/simulation.js';

function runs(typical: number, cv: number, n: number, seed: number): number[] {
  const rng = createRng(seed);
  return Array.from({ length: n }, () => typical * Math.exp(cv * rng.normal()));
}

const opts = { direction: 'lower' as const, seed: 3 };

describe('decideNext', () => {
  it('asks for the first nStart runs per arm, topping up a short arm', () => {
    expect(DEFAULT_SEQUENTIAL_POLICY).toEqual({ nStart: 5, nMax: 15, step: 2 });
    const d = decideNext([], [], opts);
    expect(d).toEqual({
      action: 'more',
      addRuns: { a: 5, b: 5 },
      reason: 'fewer than 5 runs per arm',
      comparison: null,
    });
    expect(decideNext([1, 1, 1], [1, 1], opts).addRuns).toEqual({ a: 2, b: 3 });
  });

  it("says the run's false-accept target, not only a look's share of it", () => {
    const d = decideNext(runs(10, 0.01, 5, 1), runs(8, 0.01, 5, 2), { ...opts, paired: true });
    const c = d.comparison!;
    expect(c.falseAcceptRate).toBeCloseTo(0.01 / 6, 12);
    expect(c.sequence).toEqual({ falseAcceptRate: 0.01, looks: 6 });
    expect(c.reasons.join('\n')).toContain(
      "false accepts at no change over the run's 6 looks (0.17% at each)",
    );
    // A comparison on its own keeps the plain wording.
    expect(compareArms(runs(10, 0.01, 5, 1), runs(8, 0.01, 5, 2), opts).reasons.join('\n')).toContain(
      'for ≤ 1.00% false accepts at no change)',
    );
  });

  it('stops at once on values no further run can repair', () => {
    const d = decideNext([1, 2], [1, Number.NaN], opts);
    expect(d.action).toBe('stop');
    expect(d.reason).toBe('invalid: B (candidate): run 1 is NaN');
    expect(d.comparison!.verdict).toBe('invalid');
  });

  it('stops on a clear win with the verdict compareArms gives', () => {
    const a = runs(100, 0.01, 5, 1);
    const b = runs(80, 0.01, 5, 2);
    const d = decideNext(a, b, opts);
    expect(d.action).toBe('stop');
    expect(d.comparison).toEqual(compareArms(a, b, perLookOptions(opts, DEFAULT_SEQUENTIAL_POLICY)));
    expect(d.comparison!.verdict).toBe('improved');
  });

  it('shares the false-accept target out over its looks, so the whole sequence keeps it', () => {
    expect(maxLooks(DEFAULT_SEQUENTIAL_POLICY)).toBe(6); // 5, 7, 9, 11, 13, 15 runs per arm
    expect(perLookOptions(opts, DEFAULT_SEQUENTIAL_POLICY).falseAcceptRate).toBeCloseTo(0.01 / 6, 15);
    expect(
      perLookOptions({ ...opts, falseAcceptRate: 0.03 }, { nStart: 5, nMax: 6, step: 2 }).falseAcceptRate,
    ).toBe(0.015);
    const d = decideNext(runs(100, 0.03, 5, 1), runs(90, 0.03, 5, 2), opts);
    expect(d.comparison!.falseAcceptRate).toBeCloseTo(0.01 / 6, 15);
  });

  it('stops on a clear loss or a change too small to ever clear the bar', () => {
    const loss = decideNext(runs(100, 0.01, 5, 1), runs(110, 0.01, 5, 2), opts);
    expect(loss.action).toBe('stop');
    expect(loss.comparison!.verdict).toBe('regressed');
    const flat = decideNext(runs(100, 0.002, 5, 3), runs(100, 0.002, 5, 4), opts);
    expect(flat.action).toBe('stop');
    expect(flat.comparison!.verdict).toBe('no-change');
    expect(flat.reason).toMatch(/would more likely than not miss the accept bar at 15 runs per arm/);
  });

  it('adds step runs per arm while the interval straddles the accept bar, up to nMax', () => {
    // A 3% gain at CV ≈ 1.6%: the 5-run interval reaches both sides of the ≈ 1.7% bar.
    const a = [100, 102, 98, 101, 99];
    const b = [100, 103, 97, 101.5, 98.5].map((v) => v / 1.03);
    const first = compareArms(a, b, perLookOptions(opts, DEFAULT_SEQUENTIAL_POLICY));
    expect(first.ci!.lo).toBeLessThan(first.acceptBar!);
    expect(first.ci!.hi).toBeGreaterThan(first.acceptBar!);
    const d = decideNext(a, b, opts);
    expect(d.action).toBe('more');
    expect(d.addRuns).toEqual({ a: 2, b: 2 });
    expect(d.reason).toMatch(/straddles the accept bar/);

    const capped = decideNext(a, b, opts, { nStart: 5, nMax: 6, step: 2 });
    expect(capped.addRuns).toEqual({ a: 1, b: 1 });
    const atMax = decideNext(a, b, opts, { nStart: 5, nMax: 5, step: 2 });
    expect(atMax.action).toBe('stop');
    expect(atMax.reason).toBe('reached nMax = 5 runs per arm');
    expect(atMax.comparison!.verdict).toBe('no-change');
  });

  it('keeps measuring a real gain seen through a burst of noise: the bar falls as runs are added', () => {
    // Champion ≈ 5.1 ms; candidate ≈ 3.8 ms (1.34×), two of its runs slowed by a burst of load. Under a
    // very strict false-accept target the noise margin dominates the bar: at 5 runs it is above the
    // whole interval, but a gain at the interval's upper bound would clear the lower bar 15 runs per
    // arm give: stopping now could call a real gain `no-change`.
    const o = { ...opts, practicalDelta: 0.02, falseAcceptRate: 1e-6 };
    const look = perLookOptions(o, DEFAULT_SEQUENTIAL_POLICY);
    const a = [5.21, 4.83, 5.52, 5.11, 5.0];
    const b = [3.81, 5.6, 3.75, 5.3, 3.86];
    const now = compareArms(a, b, look);
    expect(now.ci!.hi).toBeLessThan(now.acceptBar!);
    expect(futilityBar(now, look, 15)!).toBeLessThan(now.ci!.hi);
    const d = decideNext(a, b, o);
    expect(d.action).toBe('more');
    expect(d.reason).toMatch(/below the accept bar 1\.\d+, but the bar falls with more runs/);
    // Louder noise in the same place: even 15 runs could not accept a gain at the upper bound.
    const hopeless = decideNext(a, [4.0, 5.6, 3.9, 5.4, 4.1], o);
    expect(hopeless.action).toBe('stop');
    expect(hopeless.reason).toMatch(
      /even a gain at its upper bound would more likely than not miss the accept bar at 15 runs/,
    );
    // The first interval under a fixed MDE (an A/A-calibrated bar no run count moves) is futile.
    const fixed = decideNext(a, b, { ...opts, mde: now.acceptBar! - 1 });
    expect(fixed.action).toBe('stop');
    expect(fixed.reason).toBe(
      'the whole CI is below the accept bar: more runs would not lift its lower bound above it',
    );
  });

  it('stops a no-change interval that pokes over the bar when more runs would not pay off', () => {
    // At the practical floor (bar 1.01) a no-change candidate's interval often reaches over the bar;
    // waiting for nMax would spend 10 more runs per arm on it.
    const a = runs(100, 0.01, 5, 23);
    const b = runs(100, 0.01, 5, 24);
    const d = decideNext(a, b, { ...opts, practicalDelta: 0.01 });
    const c = d.comparison!;
    expect(c.acceptBar).toBe(1.01);
    expect(c.ci!.hi).toBeGreaterThan(c.acceptBar!);
    expect(d.action).toBe('stop');
    expect(c.verdict).toBe('no-change');
    expect(d.reason).toMatch(/^the whole CI is below 1\.0\d+: even a gain at its upper bound/);
  });

  it('stops as futile only where a gain at the upper bound would clear the bar at nMax less than half the time', () => {
    // Find futile stops at 5 runs, then measure: a true gain equal to the interval's upper bound, at
    // the same noise and 15 runs per arm, is accepted at most about half the time.
    const rng = createRng(11);
    const checked: number[] = [];
    for (let trial = 0; trial < 400 && checked.length < 3; trial++) {
      const cv = 0.01 + 0.04 * rng.uniform();
      const a = runs(100, cv, 5, 1000 + trial);
      const b = runs(100 / (1 + 0.02 * rng.uniform()), cv, 5, 2000 + trial);
      const d = decideNext(a, b, opts);
      const c = d.comparison!;
      if (d.action !== 'stop' || c.verdict !== 'no-change') continue;
      expect(c.ci!.hi).toBeLessThanOrEqual(
        futilityBar(c, perLookOptions(opts, DEFAULT_SEQUENTIAL_POLICY), 15)!,
      );
      const scenario = {
        cv: c.noiseCv!,
        trueRatio: c.ci!.hi,
        direction: 'lower' as const,
        shape: 'lognormal' as const,
      };
      const look = perLookOptions(opts, DEFAULT_SEQUENTIAL_POLICY);
      const r = simulate(fixedRunsRule(15, look), scenario, { trials: 300, seed: trial });
      // 300 trials: 3 standard errors of a rate at 50% are 8.7 points.
      expect(r.acceptRate).toBeLessThan(0.5 + 0.087);
      checked.push(r.acceptRate);
    }
    expect(checked).toHaveLength(3);
  });

  it('rejects an inconsistent policy', () => {
    expect(() => decideNext([], [], opts, { nStart: 5, nMax: 4, step: 1 })).toThrow(RangeError);
    expect(() => decideNext([], [], opts, { nStart: 5, nMax: 9, step: 0 })).toThrow(/step/);
  });
});
