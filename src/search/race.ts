/**
 * The screen as a race (issue 36): on a busy machine one screening round cannot tell a 1.23× change
 * from a null one, so the screen looks at the rounds after every session and drops a candidate only
 * when the noise resolves it; the others get another session of rounds until the leader is separated
 * from every other candidate or the round budget is spent. docs/search.md has the rule and what
 * `npm run bench:search` measured of it.
 *
 * Every comparison is the paired t interval of log ratios (src/stats/paired.ts): a candidate against
 * the champion's values of the same rounds, and the leader against another candidate on the same
 * rounds (in a shared session the champion cancels and this is the two candidates' own paired ratio;
 * across sessions of their own it is the difference of two independent samples, matched by index,
 * which the t interval also covers).
 *
 * Pure and synchronous: the caller measures, and replays the whole race from every round so far.
 */
import { type PairedLogRatio, pairedLogRatio } from '../stats/index.js';

/** The family-wise rate of wrongly dropping the best candidate the race allows (a bound: Bonferroni). */
export const RACE_FALSE_DROP_RATE = 0.05;

/** What the race needs of the screen's policy. */
export interface RaceSchedule {
  /** Rounds of the first session, and of every later one (the last capped at the budget). */
  rounds: number;
  /** The round budget: no contender is timed for more rounds than this. */
  maxRounds: number;
  /** 1 + bar: a candidate whose interval lies wholly below it is dropped. */
  threshold: number;
  /** The bound on dropping the best candidate over the race; absent: RACE_FALSE_DROP_RATE. */
  falseDropRate?: number;
}

/** One candidate's per-round improvement ratios against the champion (> 1 better), usable values only. */
export interface RaceArm {
  id: string;
  ratios: readonly number[];
}

/** How a candidate left the race. */
export type RaceDrop =
  | { kind: 'below-bar'; look: number; vsChampion: PairedLogRatio }
  | { kind: 'behind'; look: number; leader: string; vsLeader: PairedLogRatio };

export interface RaceStanding {
  id: string;
  /** Its last look's comparison with the champion over the rounds it was timed (null before 2 rounds). */
  vsChampion: PairedLogRatio | null;
  /** Geometric mean of its per-round ratios: the ranking's estimate. */
  estimate: number;
  rounds: number;
  dropped: RaceDrop | null;
}

/**
 * Why the race ended: every other contender dropped by an interval (`separated`), the round budget
 * spent with several left (`budget`: the leader is chosen on its estimate), no contender's estimate at
 * the bar at a look (`below-bar`: more rounds would not make a winner likely), or one candidate to
 * screen (`alone`).
 */
export type RaceEnding = 'separated' | 'budget' | 'below-bar' | 'alone';

export interface RaceState {
  standings: RaceStanding[];
  /** The contenders left, best estimate first. */
  contenders: string[];
  /** Another session of the champion and the contenders for this many rounds; null once the race ended. */
  next: { rounds: number } | null;
  ending: RaceEnding | null;
  /** The confidence of every interval at a look: Bonferroni over the looks and the comparisons. */
  confidence: number;
  looks: number;
}

/** The rounds at which the race looks: every session's end, up to the budget. */
export function lookSchedule(schedule: RaceSchedule): number[] {
  const looks: number[] = [];
  for (let n = schedule.rounds; ; n = Math.min(n + schedule.rounds, schedule.maxRounds)) {
    looks.push(n);
    if (n >= schedule.maxRounds) return looks;
  }
}

/**
 * The per-look confidence. A candidate can be dropped at every look in two ways: its own interval
 * below the bar, or one of the k − 1 others as leader above it. A one-sided miss of a (1 − α')
 * two-sided interval has probability α'/2, so α' = α / (looks · k) bounds the best candidate's false
 * drops over the race by α / 2 (Bonferroni; selecting the leader among the others is inside the bound).
 */
export function perLookConfidence(
  looks: number,
  candidates: number,
  falseDropRate = RACE_FALSE_DROP_RATE,
): number {
  return 1 - falseDropRate / (looks * Math.max(1, candidates));
}

const logMean = (ratios: readonly number[]): number =>
  Math.exp(ratios.reduce((s, r) => s + Math.log(r), 0) / ratios.length);

/** An SD of log ratios at or below this is rounds that all read the same (floating point's rounding). */
const SAME_ROUNDS_SD = 1e-9;

const ones = (n: number): number[] => Array.from({ length: n }, () => 1);

/**
 * Replay the race over the rounds measured so far. At each scheduled look n, the contenders timed for
 * at least n rounds are compared on their first n: (a) a candidate whose interval against the champion
 * lies wholly below the threshold is dropped; (b) the leader (best estimate among the rest) drops every
 * candidate it beats with its pairwise interval wholly above 1. No look happens before 2 rounds, so one
 * round drops nothing, nor do rounds whose ratios are all the same (an interval of zero width says
 * nothing of the noise: a coarse clock, not a certain ratio). The race ends when one contender is left, when no contender's estimate reaches
 * the threshold at a look (futility), or when the budget is spent.
 * @throws RangeError on a bad schedule (a caller bug).
 */
export function replayRace(arms: readonly RaceArm[], schedule: RaceSchedule): RaceState {
  if (!(Number.isInteger(schedule.rounds) && schedule.rounds >= 1))
    throw new RangeError(`race rounds must be an integer ≥ 1, got ${schedule.rounds}`);
  if (!(Number.isInteger(schedule.maxRounds) && schedule.maxRounds >= schedule.rounds))
    throw new RangeError(
      `the race's round budget must be an integer ≥ its first session's ${schedule.rounds} rounds, got ${schedule.maxRounds}`,
    );
  const looks = lookSchedule(schedule);
  const confidence = perLookConfidence(looks.length, arms.length, schedule.falseDropRate);
  const standings = new Map<string, RaceStanding>(
    arms.map((arm) => [
      arm.id,
      {
        id: arm.id,
        vsChampion: null,
        estimate: logMean(arm.ratios),
        rounds: arm.ratios.length,
        dropped: null,
      },
    ]),
  );
  const alive = () => arms.filter((a) => standings.get(a.id)!.dropped === null);
  const ratiosOf = new Map(arms.map((a) => [a.id, a.ratios]));
  let lastLook = 0;
  let futile = false;
  for (const [j, n] of looks.entries()) {
    const timed = alive().filter((a) => a.ratios.length >= n);
    if (timed.length === 0 || timed.length < alive().length) break; // the rounds of this look are not all in
    lastLook = n;
    if (n < 2) continue;
    const look = j + 1;
    for (const arm of timed) {
      const vs = pairedLogRatio(arm.ratios.slice(0, n), ones(n), confidence);
      const standing = standings.get(arm.id)!;
      standing.vsChampion = vs;
      if (vs.logSd > SAME_ROUNDS_SD && vs.ci.hi < schedule.threshold)
        standing.dropped = { kind: 'below-bar', look, vsChampion: vs };
    }
    const rest = timed.filter((a) => standings.get(a.id)!.dropped === null);
    const leader = bestOf(rest, (a) => logMean(a.ratios.slice(0, n)));
    if (!leader) break;
    for (const arm of rest) {
      if (arm === leader) continue;
      const vs = pairedLogRatio(leader.ratios.slice(0, n), arm.ratios.slice(0, n), confidence);
      if (vs.logSd > SAME_ROUNDS_SD && vs.ci.lo > 1)
        standings.get(arm.id)!.dropped = { kind: 'behind', look, leader: leader.id, vsLeader: vs };
    }
    if (alive().length <= 1) break;
    // Futility: more rounds pay only while some contender's estimate reaches the bar (the winner needs
    // it); a look with intervals where none does ends the race, never one round.
    if (!alive().some((a) => logMean(a.ratios.slice(0, n)) >= schedule.threshold)) {
      futile = true;
      break;
    }
  }
  const contenders = alive()
    .map((a) => a.id)
    .sort((x, y) => standings.get(y)!.estimate - standings.get(x)!.estimate);
  const budgetLeft = schedule.maxRounds - lastLook;
  const racing = contenders.length >= 2 && budgetLeft > 0 && !futile;
  return {
    standings: arms.map((a) => {
      const s = standings.get(a.id)!;
      // The estimate and interval over every round it was timed (a dropped one: up to its drop).
      const r = ratiosOf.get(a.id)!;
      return {
        ...s,
        vsChampion:
          s.dropped === null && r.length >= 2 ? pairedLogRatio(r, ones(r.length), confidence) : s.vsChampion,
      };
    }),
    contenders,
    next: racing ? { rounds: Math.min(schedule.rounds, budgetLeft) } : null,
    ending: racing
      ? null
      : arms.length <= 1
        ? 'alone'
        : contenders.length === 0
          ? 'below-bar'
          : contenders.length === 1
            ? 'separated'
            : futile
              ? 'below-bar'
              : 'budget',
    confidence,
    looks: looks.length,
  };
}

function bestOf<T>(items: readonly T[], score: (item: T) => number): T | undefined {
  let best: T | undefined;
  let bestScore = Number.NEGATIVE_INFINITY;
  for (const item of items) {
    const s = score(item);
    if (s > bestScore) {
      best = item;
      bestScore = s;
    }
  }
  return best;
}
