import { describe, expect, it } from 'vitest';
import { fitSessionCost, overheadArmRounds, type SessionCost } from '../../bench/shared-session-overhead.js';

const TRUTH = { fixedSeconds: 9, perArmSeconds: 4.5, perArmRoundSeconds: 1.2 };
const cost = (arms: number, rounds: number, error = 0): SessionCost => ({
  arms,
  rounds,
  seconds: TRUTH.fixedSeconds + TRUTH.perArmSeconds * arms + TRUTH.perArmRoundSeconds * arms * rounds + error,
});
/** The bench's grid: 2 to 5 arms at 1 and 5 rounds. */
const GRID = [2, 3, 4, 5].flatMap((arms) => [cost(arms, 1), cost(arms, 5)]);

describe('fitSessionCost', () => {
  it('recovers the three costs from exact sessions, with zero residuals', () => {
    const fit = fitSessionCost(GRID);
    expect(fit.fixedSeconds).toBeCloseTo(9, 9);
    expect(fit.perArmSeconds).toBeCloseTo(4.5, 9);
    expect(fit.perArmRoundSeconds).toBeCloseTo(1.2, 9);
    for (const r of fit.residuals) expect(Math.abs(r)).toBeLessThan(1e-9);
  });

  it('is the least-squares fit: residuals sum to zero and are orthogonal to arms and arm-rounds', () => {
    const errors = [0.4, -0.3, 0.1, 0.9, -0.6, 0.2, -0.5, 0.05];
    const sessions = GRID.map((s, i) => ({ ...s, seconds: s.seconds + errors[i]! }));
    const fit = fitSessionCost(sessions);
    const dot = (f: (s: SessionCost) => number) =>
      fit.residuals.reduce((sum, r, i) => sum + r * f(sessions[i]!), 0);
    expect(dot(() => 1)).toBeCloseTo(0, 9);
    expect(dot((s) => s.arms)).toBeCloseTo(0, 9);
    expect(dot((s) => s.arms * s.rounds)).toBeCloseTo(0, 9);
    expect(fit.residuals.some((r) => Math.abs(r) > 0.05)).toBe(true);
  });

  it('refuses sessions that cannot separate the terms, naming what to measure', () => {
    const oneArmCount = [cost(2, 1), cost(2, 5), cost(2, 10)];
    expect(() => fitSessionCost(oneArmCount)).toThrow(/two arm counts and two round counts/);
  });
});

describe('overheadArmRounds', () => {
  it('is (fixed/arms + perArm)/perArmRound: the fixed start shared by more arms costs each less', () => {
    expect(overheadArmRounds(TRUTH, 2)).toBeCloseTo((9 / 2 + 4.5) / 1.2, 12);
    expect(overheadArmRounds(TRUTH, 5)).toBeCloseTo((9 / 5 + 4.5) / 1.2, 12);
  });

  it('charges a session what it measured: arms·(overhead + rounds) arm-rounds at perArmRound seconds', () => {
    for (const { arms, rounds, seconds } of GRID) {
      const armRounds = arms * (overheadArmRounds(TRUTH, arms) + rounds);
      expect(armRounds * TRUTH.perArmRoundSeconds).toBeCloseTo(seconds, 9);
    }
  });
});
