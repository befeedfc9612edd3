import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SEARCH_POLICY,
  judgeWinner,
  type PairedRounds,
  replaySequential,
  type ScreenMeasurement,
  screenCandidates,
  selectWinner,
} from '../../src/search/index.js';
import { biasedJudgeReusingScreen } from '../../src/search/selection.js';
import { compareArms, createRng, DEFAULT_SEQUENTIAL_POLICY } from '../../src/stats/index.js';
import { perLookOptions } from '../../src/stats/sequential.js';

const opts = { direction: 'lower' as const, seed: 11 };
const screen = { rounds: 2, bar: 0.02 };

/** Times in ms around `typical`, log-normal with this CV, seeded. */
function times(typical: number, cv: number, n: number, seed: number): number[] {
  const rng = createRng(seed);
  return Array.from({ length: n }, () => typical * Math.exp(cv * rng.normal()));
}

// A screening session where the champion ran 100 ms twice. 'lucky' changes nothing, but both of its
// screening timings came out fast (the winner's curse in miniature); 'modest' looks +1.4%, under the
// bar; 'slow' is a regression; 'broken' returned a NaN.
const measurement: ScreenMeasurement = {
  champion: [100, 100],
  candidates: [
    { id: 'slow', values: [104, 103.5] },
    { id: 'modest', values: [98.5, 98.8] },
    { id: 'lucky', values: [95, 95.5] },
    { id: 'broken', values: [97, Number.NaN] },
  ],
};

describe('screenCandidates', () => {
  it('ranks survivors first, drops what misses the bar, and picks the best survivor', () => {
    const result = screenCandidates(measurement, 'lower', screen);
    expect(result.winner).toBe('lucky');
    expect(result.threshold).toBe(1.02);
    expect(result.ranked.map((c) => [c.id, c.survived])).toEqual([
      ['lucky', true],
      ['modest', false],
      ['slow', false],
      ['broken', false],
    ]);
    // The estimate is the geometric mean of the per-round ratios A / B.
    expect(result.ranked[0]!.estimate).toBeCloseTo(Math.sqrt((100 / 95) * (100 / 95.5)), 12);
    expect(result.ranked[1]!.reason).toMatch(/< 1\.0200: dropped$/);
    expect(result.ranked[3]).toMatchObject({ estimate: null, reason: expect.stringMatching(/not a finite/) });
  });

  it('drops every candidate under a higher bar: no winner, no full comparison', () => {
    const result = screenCandidates(measurement, 'lower', { rounds: 2, bar: 0.06 });
    expect(result.winner).toBeNull();
    expect(result.ranked.every((c) => !c.survived)).toBe(true);
    expect(selectWinner(measurement, result)).toBeNull();
  });

  it('orients ratios for higher-is-better metrics', () => {
    const mfu: ScreenMeasurement = {
      champion: [0.5, 0.5, 0.5],
      candidates: [
        { id: 'up', values: [0.55, 0.54, 0.56] },
        { id: 'down', values: [0.45, 0.46, 0.44] },
      ],
    };
    const result = screenCandidates(mfu, 'higher', { rounds: 3, bar: 0.02 });
    expect(result.winner).toBe('up');
    expect(result.ranked[0]!.estimate).toBeCloseTo(Math.cbrt(1.1 * 1.08 * 1.12), 12);
  });

  it('drops a candidate with too few rounds, and refuses a bad policy or duplicate ids', () => {
    const short = screenCandidates(measurement, 'lower', { rounds: 3, bar: 0.02 });
    expect(short.winner).toBeNull();
    expect(short.ranked[0]!.reason).toMatch(/2 screening rounds; the screen needs 3/);
    expect(() => screenCandidates(measurement, 'lower', { rounds: 0, bar: 0.02 })).toThrow(RangeError);
    const twice = { ...measurement, candidates: [measurement.candidates[0]!, measurement.candidates[0]!] };
    expect(() => screenCandidates(twice, 'lower', screen)).toThrow(/unique/);
  });
});

describe('judgeWinner', () => {
  const result = screenCandidates(measurement, 'lower', screen);
  const selection = selectWinner(measurement, result)!;
  // Fresh rounds of champion and 'lucky' after the selection: in truth it changes nothing.
  const fresh13: PairedRounds = { a: times(100, 0.01, 13, 1), b: times(100, 0.01, 13, 2) };
  const fresh: PairedRounds = { a: fresh13.a.slice(0, 5), b: fresh13.b.slice(0, 5) };
  const lookOpts = perLookOptions({ ...opts, paired: true }, DEFAULT_SEQUENTIAL_POLICY);

  it('asks for nStart fresh rounds before any look', () => {
    expect(judgeWinner(selection, { a: [], b: [] }, opts)).toMatchObject({ status: 'measure', rounds: 5 });
  });

  it('takes the verdict and the effect from the fresh rounds alone, not the inflated screen', () => {
    const judgement = judgeWinner(selection, fresh, opts);
    expect(judgement.status).toBe('done');
    if (judgement.status !== 'done') return;
    // Exactly the paired rule over the fresh rounds, at the first look's share of the false-accept target.
    const expected = compareArms(fresh.a, fresh.b, { ...lookOpts, minRuns: 5 });
    expect(judgement.comparison.ratio).toBe(expected.ratio);
    expect(judgement.comparison.verdict).toBe('no-change');
    expect(judgement.roundsUsed).toBe(5);
    // The screen said +5%; the fresh rounds say about nothing.
    expect(result.ranked[0]!.estimate!).toBeGreaterThan(1.04);
    expect(Math.abs(judgement.comparison.deltaPct!)).toBeLessThan(1.5);
  });

  it('differs from the biased variant, which counts the screening rounds as evidence', () => {
    const fair = judgeWinner(selection, fresh13, opts);
    const biased = biasedJudgeReusingScreen(selection, fresh13, opts);
    if (fair.status !== 'done' || biased.status !== 'done') throw new Error('both should reach a verdict');
    expect(fair.roundsUsed).toBe(5);
    // The inflated screen keeps the biased comparison going past its first look, and sits in its estimate.
    expect(biased.roundsUsed).toBeGreaterThan(5);
    const pooled = (arm: 'a' | 'b') =>
      [...selection.screenRounds[arm], ...fresh13[arm]].slice(0, biased.roundsUsed);
    const expected = compareArms(pooled('a'), pooled('b'), { ...lookOpts, minRuns: 5 });
    expect(biased.comparison.ratio).toBe(expected.ratio);
    expect(biased.comparison.ratio!).toBeGreaterThan(fair.comparison.ratio!);
  });

  it('refuses fresh rounds that begin with the winner screening rounds', () => {
    const reused: PairedRounds = {
      a: [...selection.screenRounds.a, ...fresh.a],
      b: [...selection.screenRounds.b, ...fresh.b],
    };
    expect(() => judgeWinner(selection, reused, opts)).toThrow(/screening runs are never evidence/);
  });

  it('reuses nothing it was not given: the biased variant tops up only to nStart', () => {
    expect(biasedJudgeReusingScreen(selection, { a: [], b: [] }, opts)).toMatchObject({
      status: 'measure',
      rounds: 3,
    });
  });
});

describe('replaySequential', () => {
  // Seed 1 of a 3% gain at CV 1%: the first look straddles the bar (checked against decideNext).
  const rng = createRng(1);
  const a = Array.from({ length: 5 }, () => 100 * Math.exp(0.01 * rng.normal()));
  const b = Array.from({ length: 5 }, () => (100 / 1.03) * Math.exp(0.01 * rng.normal()));

  it('asks for every round up to nMax at once when the first look wants more (two sessions at most)', () => {
    const judgement = replaySequential({ a, b }, { ...opts, seed: 1 }, DEFAULT_SEQUENTIAL_POLICY);
    expect(judgement).toMatchObject({ status: 'measure', rounds: 10 });
  });

  it('stops at the look that decides and sets the later rounds aside', () => {
    const more = { a: [...a, ...times(100, 0.01, 10, 3)], b: [...b, ...times(100 / 1.03, 0.01, 10, 4)] };
    const judgement = replaySequential(more, { ...opts, seed: 1 }, DEFAULT_SEQUENTIAL_POLICY);
    expect(judgement.status).toBe('done');
    if (judgement.status !== 'done') return;
    expect(judgement.roundsUsed + judgement.roundsSetAside).toBe(15);
    expect(judgement.comparison.a.n).toBe(judgement.roundsUsed);
  });

  it('refuses unpaired rounds', () => {
    expect(() => replaySequential({ a: [1, 2], b: [1] }, opts, DEFAULT_SEQUENTIAL_POLICY)).toThrow(
      RangeError,
    );
  });
});

describe('DEFAULT_SEARCH_POLICY', () => {
  it('is the design bench:search measures: k = 4, one 3-round screening session at +2% (no race), the loop rule for the winner', () => {
    expect(DEFAULT_SEARCH_POLICY).toEqual({
      candidates: 4,
      screen: { rounds: 3, maxRounds: 3, bar: 0.02 },
      full: DEFAULT_SEQUENTIAL_POLICY,
    });
  });
});
