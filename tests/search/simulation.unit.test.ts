import { describe, expect, it } from 'vitest';
import { DEFAULT_SEARCH_POLICY } from '../../src/search/index.js';
import {
  ALL_NULL_PRIOR,
  DEFAULT_COST,
  drawTrueRatio,
  type EffectPrior,
  type IterationContext,
  MEASURED_NOISE,
  measureScreen,
  measureSession,
  PLAUSIBLE_PRIOR,
  runIteration,
  type SearchSimulation,
  screenCost,
  sessionCost,
  simulateSearch,
} from '../../src/search/simulation.js';
import { createRng } from '../../src/stats/index.js';

describe('the simulation model', () => {
  it('draws true effects in the stated shares and ranges', () => {
    const rng = createRng(5);
    const draws = Array.from({ length: 4000 }, () => drawTrueRatio(PLAUSIBLE_PRIOR, rng));
    const gains = draws.filter((r) => r > 1);
    const losses = draws.filter((r) => r < 1);
    expect(gains.length / draws.length).toBeCloseTo(0.15, 1);
    expect(losses.length / draws.length).toBeCloseTo(0.15, 1);
    expect(Math.min(...gains)).toBeGreaterThanOrEqual(1.03);
    expect(Math.max(...gains)).toBeLessThanOrEqual(1.15);
    expect(Math.min(...losses)).toBeGreaterThanOrEqual(0.85);
    expect(draws.every((r) => r === 1 || Math.abs(r - 1) >= 0.03)).toBe(true);
  });

  it('times arms at their true ratio with the stated per-arm noise', () => {
    const [a, b] = measureSession([1, 1.1], 2000, MEASURED_NOISE, createRng(6));
    const logRatios = a!.map((x, i) => Math.log(x / b![i]!));
    const mean = logRatios.reduce((s, x) => s + x, 0) / logRatios.length;
    const sd = Math.sqrt(logRatios.reduce((s, x) => s + (x - mean) ** 2, 0) / (logRatios.length - 1));
    expect(mean).toBeCloseTo(Math.log(1.1), 2);
    expect(sd / Math.SQRT2).toBeCloseTo(0.01, 3); // the paired CV bench:verdict measured
  });

  it('prices a session at the overhead per arm plus its rounds, and an empty one at nothing', () => {
    expect(sessionCost(DEFAULT_COST, 5, 2)).toBe(5 * (2 + 2));
    expect(sessionCost(DEFAULT_COST, 2, 0)).toBe(0);
  });

  it("prices the loop's screen as one two-arm session per candidate, the shared one as k + 1 arms", () => {
    expect(DEFAULT_COST.screenSessions).toBe('per-candidate');
    expect(screenCost(DEFAULT_COST, 4, 2)).toBe(4 * 2 * (2 + 2)); // 32 arm-rounds, not 20
    expect(screenCost({ ...DEFAULT_COST, screenSessions: undefined }, 4, 2)).toBe(32);
    expect(screenCost({ ...DEFAULT_COST, screenSessions: 'shared' }, 4, 2)).toBe(5 * (2 + 2));
  });

  it('gives each candidate its own champion rounds per candidate, one shared champion otherwise', () => {
    const own = measureScreen([1, 1.1, 0.9], 2, MEASURED_NOISE, 'per-candidate', createRng(8));
    expect(own.champion).toEqual([]);
    expect(own.candidates.map((c) => c.champion?.length)).toEqual([2, 2, 2]);
    expect(own.candidates[0]!.champion).not.toEqual(own.candidates[1]!.champion);
    const shared = measureScreen([1, 1.1, 0.9], 2, MEASURED_NOISE, 'shared', createRng(8));
    expect(shared.champion).toHaveLength(2);
    expect(shared.candidates.every((c) => c.champion === undefined && c.values.length === 2)).toBe(true);
  });

  it('charges an iteration whose screen drops every candidate exactly the screen, per the cost model', () => {
    // Every candidate a 50% regression: none survives a +2% bar, so the screen is all the iteration costs.
    const allLosers: EffectPrior = {
      ...PLAUSIBLE_PRIOR,
      gainShare: 0,
      regressionShare: 1,
      regressionRange: [0.5, 0.5],
    };
    const ctx = (screenSessions: 'per-candidate' | 'shared'): IterationContext => ({
      strategy: { policy: DEFAULT_SEARCH_POLICY, evidence: 'fresh' },
      prior: allLosers,
      noise: MEASURED_NOISE,
      cost: { ...DEFAULT_COST, screenSessions },
      compare: {},
      rng: createRng(9),
    });
    const { candidates: k, screen } = DEFAULT_SEARCH_POLICY;
    const perCandidate = runIteration(ctx('per-candidate'));
    expect(perCandidate.judgedTrueRatio).toBeNull();
    expect(perCandidate.cost).toBe(k * 2 * (DEFAULT_COST.overheadPerArm + screen.rounds));
    expect(runIteration(ctx('shared')).cost).toBe((k + 1) * (DEFAULT_COST.overheadPerArm + screen.rounds));
  });
});

describe('simulateSearch', () => {
  // A one-round screen: the noisiest, so the winner's curse shows in a few iterations.
  const base: SearchSimulation = {
    strategy: { policy: { ...DEFAULT_SEARCH_POLICY, screen: { rounds: 1, bar: 0.02 } }, evidence: 'fresh' },
    prior: ALL_NULL_PRIOR,
    noise: MEASURED_NOISE,
    budgetHours: 4,
    trials: 2,
    seed: 3,
  };

  it('is deterministic for a seed', () => {
    expect(simulateSearch(base)).toEqual(simulateSearch(base));
  });

  it('at no change, reports the winner unbiased on fresh rounds while its screen is inflated', () => {
    const fresh = simulateSearch(base);
    expect(fresh.accepted).toBe(0);
    expect(fresh.judged).toBeGreaterThan(5);
    expect(fresh.screenBias.mean).toBeGreaterThan(1.5); // the best of 4 noisy screens clears a +2% bar
    expect(Math.abs(fresh.biasJudged.mean)).toBeLessThan(4 * fresh.biasJudged.se + 0.1);
    const reused = simulateSearch({ ...base, strategy: { ...base.strategy, evidence: 'reused-screen' } });
    expect(reused.biasJudged.mean).toBeGreaterThan(fresh.biasJudged.mean + 0.2);
  });

  it('accepts real gains under the plausible prior and accumulates their true gain', () => {
    const s = simulateSearch({ ...base, prior: PLAUSIBLE_PRIOR });
    expect(s.accepted).toBeGreaterThan(0);
    expect(s.acceptedNull + s.acceptedRegressions).toBe(0);
    expect(s.trueGainPctPerHour).toBeGreaterThan(0);
    expect(s.hours).toBeGreaterThanOrEqual(2 * 4);
  });
});
