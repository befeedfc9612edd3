// The verdict rule proved on synthetic runs with known effects (docs/statistics.md "Simulation").
// Seeded, so every run gives the same numbers. `npm run bench:stats` runs the same simulation with
// many more trials and prints the table.
//
// Tolerance: with T trials a rule whose true rate sits exactly on a claimed bound (1% false accepts,
// 80% power at one MDE) lands within 3 binomial standard errors of it with probability 99.9%, so the
// assertions allow 3·√(p(1−p)/T). The broken rules below are 10+ standard errors outside, so the same
// assertions catch them.
import { describe, expect, it } from 'vitest';
import { type Comparison, compareArms } from '../../src/stats/compare-arms.js';
import { median } from '../../src/stats/describe.js';
import { minimumDetectableEffect } from '../../src/stats/noise.js';
import {
  fixedRunsRule,
  gdnctlRule,
  pairedRoundsRule,
  pairedSequentialRule,
  powerAtPrintedMde,
  type Rule,
  type Scenario,
  sequentialRule,
  simulate,
  trueMde,
} from '../../src/stats/simulation.js';

const CVS = [0.01, 0.02, 0.05];
const N = 5;
const TRIALS = 250;
const MAX_FALSE_ACCEPT = 0.01;
const MIN_POWER = 0.8;

const tolerance = (p: number, trials: number): number => 3 * Math.sqrt((p * (1 - p)) / trials);

interface Check {
  falseAccepts?: boolean;
  power?: boolean;
  trials?: number;
  /** Paired rounds: the MDE is the paired rule's, and this much noise is shared by a round's two runs. */
  paired?: { shared: number };
}

/** Violations of the two claims by `rule` at CV 1%, 2%, 5%; an empty list means the rule passes. */
function violations(rule: Rule, check: Check = { falseAccepts: true, power: true }): string[] {
  const trials = check.trials ?? TRIALS;
  const found: string[] = [];
  for (const [i, cv] of CVS.entries()) {
    const mde = trueMde(cv, N, { paired: check.paired !== undefined });
    const scenario = (trueRatio: number): Scenario => ({
      cv,
      trueRatio,
      direction: 'lower',
      shape: 'lognormal',
      shared: check.paired?.shared ?? 0,
    });
    if (check.falseAccepts) {
      const r = simulate(rule, scenario(1), { trials, seed: 100 + i });
      if (r.acceptRate > MAX_FALSE_ACCEPT + tolerance(MAX_FALSE_ACCEPT, trials)) {
        found.push(`CV ${cv}: false accepts ${r.acceptRate}`);
      }
    }
    if (check.power) {
      const r = simulate(rule, scenario(1 + mde), { trials, seed: 200 + i });
      if (r.acceptRate < MIN_POWER - tolerance(MIN_POWER, trials))
        found.push(`CV ${cv}: power ${r.acceptRate}`);
    }
  }
  return found;
}

describe('the verdict rule on synthetic runs', () => {
  it('false-accepts ≤ 1% at zero effect and has ≥ 80% power at one MDE (n = 5, CV 1–5%)', () => {
    expect(violations(fixedRunsRule(N))).toEqual([]);
  });

  it('keeps both claims with sequential stopping (5→15 runs)', () => {
    expect(violations(sequentialRule(), { falseAccepts: true, power: true, trials: 120 })).toEqual([]);
  });

  it("keeps both claims on paired rounds, with and without noise a round shares (the verifier's sessions)", () => {
    for (const shared of [0, 0.05]) {
      const check = { falseAccepts: true, power: true, paired: { shared } };
      expect(violations(pairedRoundsRule(N), check), `shared ${shared}`).toEqual([]);
      expect(violations(pairedSequentialRule(), { ...check, trials: 120 }), `shared ${shared}`).toEqual([]);
    }
  });

  it('shows the unpaired rule losing its power to noise a round shares, which pairing cancels', () => {
    const check = { power: true, paired: { shared: 0.05 } };
    // With 5% shared beside CV 1–5% of its own, the unpaired rule finds a gain of the paired rule's
    // MDE a fraction of the time.
    const unpaired = violations(fixedRunsRule(N), { ...check, trials: 100 });
    expect(unpaired.map((v) => v.split(':')[0])).toEqual(['CV 0.01', 'CV 0.02', 'CV 0.05']);
    expect(violations(pairedRoundsRule(N), { ...check, trials: 100 })).toEqual([]);
  });

  it("shows gdnctl's one-run +0.25% rule false-accepting 40–50% of no-change candidates", () => {
    const rule = gdnctlRule();
    for (const cv of CVS) {
      const r = simulate(
        rule,
        { cv, trueRatio: 1, direction: 'higher', shape: 'lognormal' },
        { trials: 20_000, seed: 7 },
      );
      // Δ ~ N(0, √2·CV): P(Δ ≥ 0.25%) = 1 − Φ(0.25% / (√2·CV)) = 43% at CV 1%, 48% at CV 5%.
      expect(r.acceptRate).toBeGreaterThan(0.4);
      expect(r.acceptRate).toBeLessThan(0.5);
    }
    expect(violations(rule, { falseAccepts: true })).toHaveLength(CVS.length);
  });

  it('catches broken rules with the same assertions', () => {
    // Accepting whenever the point estimate beats 1 + δ, with no interval: noise passes for signal.
    const pointEstimate: Rule = {
      name: 'point estimate > 1%',
      decide(sampler) {
        const ratio = median(sampler.draw('a', N)) / median(sampler.draw('b', N));
        return { verdict: ratio > 1.01 ? 'improved' : 'no-change', runsPerArm: N };
      },
    };
    expect(violations(pointEstimate, { falseAccepts: true })).not.toEqual([]);

    // The bar at the MDE itself (the rule before issue 12): safe, but it misses most gains of one MDE.
    const tooStrict: Rule = {
      name: 'bar = MDE',
      decide(sampler, direction, seed) {
        const a = sampler.draw('a', N);
        const b = sampler.draw('b', N);
        const mde = compareArms(a, b, { direction, seed }).mde!;
        return { verdict: compareArms(a, b, { direction, seed, mde }).verdict, runsPerArm: N };
      },
    };
    expect(violations(tooStrict, { power: true, trials: 100 })).toHaveLength(CVS.length);

    // Reading a time as higher-is-better turns every speedup into a regression.
    const wrongDirection: Rule = {
      name: 'direction flipped',
      decide: (sampler, _direction, seed) => fixedRunsRule(N).decide(sampler, 'higher', seed),
    };
    expect(violations(wrongDirection, { power: true, trials: 50 })).toHaveLength(CVS.length);
  });
});

describe('the printed MDE on synthetic runs', () => {
  // End to end: a no-change comparison prints its MDE; fresh runs with exactly that true gain are
  // judged by the same rule. The claim is 80% power; 200–300 trials put the bound 0.75 over 2 standard
  // errors below the ~81% the calibrated MDE reaches, and the old MDE (at the estimated CV) misses it
  // by 8 or more.
  const MIN_PRINTED_POWER = 0.75;
  const scenario: Scenario = { cv: 0.02, trueRatio: 1, direction: 'lower', shape: 'lognormal' };
  /** The MDE as printed before issue 23: at the comparison's own CV estimate. */
  const mdeAtEstimate =
    (paired: boolean) =>
    (c: Comparison): number | null =>
      c.noiseCv === null ? null : minimumDetectableEffect(c.noiseCv, c.a.n, c.b.n, { paired });

  it('has the power it claims at 5 runs per arm', () => {
    const opts = { trials: 200, seed: 23 };
    const printed = powerAtPrintedMde(fixedRunsRule(N), scenario, opts);
    expect(printed.power).toBeGreaterThanOrEqual(MIN_PRINTED_POWER);
    const old = powerAtPrintedMde(fixedRunsRule(N), scenario, { ...opts, mdeOf: mdeAtEstimate(false) });
    expect(old.power).toBeLessThan(0.65);
    expect(printed.medianMde).toBeGreaterThan(old.medianMde);
  });

  it('has the power it claims at 5 paired rounds', () => {
    const opts = { trials: 300, seed: 24 };
    const printed = powerAtPrintedMde(pairedRoundsRule(N), scenario, opts);
    expect(printed.power).toBeGreaterThanOrEqual(MIN_PRINTED_POWER);
    const old = powerAtPrintedMde(pairedRoundsRule(N), scenario, { ...opts, mdeOf: mdeAtEstimate(true) });
    expect(old.power).toBeLessThan(MIN_PRINTED_POWER);
  });
});
