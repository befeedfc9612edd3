/**
 * Selection among k candidates of one iteration (issue 25): a short screening measurement ranks them
 * against the champion, a bar drops the ones that do not look worth a full comparison, and the best
 * survivor alone gets the full A/B. Its verdict and the effect its PR reports come only from rounds
 * measured after the selection (`judgeWinner`): the best of k noisy screens is biased upward (the
 * winner's curse), so a screening round never counts as evidence. docs/search.md has the rule and the
 * simulation behind its defaults (`npm run bench:search`).
 *
 * Pure and synchronous, like src/stats: the caller measures (one screening session, then at most two
 * fresh sessions of champion and winner) and hands the rounds in.
 */
import {
  type CompareOptions,
  type Comparison,
  DEFAULT_SEQUENTIAL_POLICY,
  type Direction,
  decideNext,
  median,
  type SequentialPolicy,
} from '../stats/index.js';

/** The screening measurement's knobs. */
export interface ScreenPolicy {
  /** Rounds of the screening session: each times the champion and every candidate once, call by call. */
  rounds: number;
  /**
   * A candidate survives when its screening estimate (median per-round improvement ratio) is at least
   * 1 + bar. A fraction: 0.02 = +2%. The default is the practical floor (`measure.practical_delta`):
   * a candidate whose screen does not even show the smallest gain worth a PR does not get the full
   * comparison. The screen only ranks and filters; it never accepts.
   */
  bar: number;
}

/** How an iteration searches: k proposals, one screen, one full comparison of the best survivor. */
export interface SearchPolicy {
  /** Candidates proposed per iteration (k). 1 is today's loop: no screen, one full comparison. */
  candidates: number;
  screen: ScreenPolicy;
  /** The full comparison of the winner: the paired sequential rule (src/stats/sequential.ts). */
  full: SequentialPolicy;
}

/** The design `npm run bench:search` measures (docs/search.md says what else was tried). */
export const DEFAULT_SEARCH_POLICY: SearchPolicy = {
  candidates: 4,
  screen: { rounds: 1, bar: 0.02 },
  full: DEFAULT_SEQUENTIAL_POLICY,
};

/** One screening session: per round, the champion's value and each candidate's (same round order). */
export interface ScreenMeasurement {
  champion: readonly number[];
  candidates: readonly ScreenArm[];
}

export interface ScreenArm {
  id: string;
  values: readonly number[];
  /**
   * The champion's values of this candidate's own screening session, when each candidate is screened
   * in a session of its own (the loop: one verifier job per candidate, in parallel where the backend
   * allows); absent, the measurement's shared `champion` rounds.
   */
  champion?: readonly number[];
}

export interface ScreenedCandidate {
  id: string;
  /** Median over rounds of the improvement ratio (> 1 better); null when the values cannot be used. */
  estimate: number | null;
  survived: boolean;
  /** Why it survived or was dropped, in one line. */
  reason: string;
}

export interface ScreenResult {
  /** Survivors first, best estimate first; then the dropped ones, best first, unusable ones last. */
  ranked: ScreenedCandidate[];
  /** The best survivor's id: the one candidate the full comparison measures. Null when none survived. */
  winner: string | null;
  /** 1 + bar: the estimate a candidate needed. */
  threshold: number;
}

/** Paired rounds of champion (a) and one candidate (b): a[i] and b[i] were timed in the same round. */
export interface PairedRounds {
  a: readonly number[];
  b: readonly number[];
}

function checkScreenPolicy(policy: ScreenPolicy): void {
  if (!(Number.isInteger(policy.rounds) && policy.rounds >= 1)) {
    throw new RangeError(`screen.rounds must be an integer ≥ 1, got ${policy.rounds}`);
  }
  if (!(Number.isFinite(policy.bar) && policy.bar > -1)) {
    throw new RangeError(`screen.bar must be a finite fraction > −1, got ${policy.bar}`);
  }
}

const usable = (v: number): boolean => Number.isFinite(v) && v > 0;

/** Per-round improvement ratios of a candidate against the champion (> 1 better). */
export function roundRatios(rounds: PairedRounds, direction: Direction): number[] {
  return rounds.a.map((a, i) => (direction === 'lower' ? a / rounds.b[i]! : rounds.b[i]! / a));
}

/**
 * The screening estimate: the median of the per-round ratios. A ratio within a round cancels whatever
 * slowed both arms of it (load, clocks); the median shrugs off a round one arm lost to a disturbance.
 */
function screenEstimate(rounds: PairedRounds, direction: Direction): number {
  return median(roundRatios(rounds, direction));
}

function screenOne(
  champion: readonly number[],
  arm: ScreenArm,
  direction: Direction,
  policy: ScreenPolicy,
): ScreenedCandidate {
  const drop = (reason: string): ScreenedCandidate => ({
    id: arm.id,
    estimate: null,
    survived: false,
    reason,
  });
  if (arm.values.length !== champion.length) {
    return drop(`${arm.values.length} screening values for ${champion.length} rounds`);
  }
  if (champion.length < policy.rounds) {
    return drop(`${champion.length} screening rounds; the screen needs ${policy.rounds}`);
  }
  if (!arm.values.every(usable) || !champion.every(usable)) {
    return drop('a screening value is not a finite positive number');
  }
  const estimate = screenEstimate({ a: champion, b: arm.values }, direction);
  const threshold = 1 + policy.bar;
  const survived = estimate >= threshold;
  const shown = `screen ${estimate.toFixed(4)} over ${champion.length} round${champion.length === 1 ? '' : 's'}`;
  return {
    id: arm.id,
    estimate,
    survived,
    reason: survived ? `${shown} ≥ ${threshold.toFixed(4)}` : `${shown} < ${threshold.toFixed(4)}: dropped`,
  };
}

/** Survivors before the dropped, then by estimate (unusable last); ties keep the proposal order. */
function byRank(x: ScreenedCandidate, y: ScreenedCandidate): number {
  if (x.survived !== y.survived) return x.survived ? -1 : 1;
  return (y.estimate ?? Number.NEGATIVE_INFINITY) - (x.estimate ?? Number.NEGATIVE_INFINITY);
}

/**
 * Rank the candidates of one screening session and pick the best survivor. The estimates rank; they
 * are never evidence: the winner's estimate is the maximum of k noisy ones and sits above its true
 * effect on average.
 * @throws RangeError on a bad screen policy (a caller bug); bad values only drop their candidate.
 */
export function screenCandidates(
  measurement: ScreenMeasurement,
  direction: Direction,
  policy: ScreenPolicy,
): ScreenResult {
  checkScreenPolicy(policy);
  const ids = new Set(measurement.candidates.map((c) => c.id));
  if (ids.size !== measurement.candidates.length)
    throw new RangeError('screen: candidate ids must be unique');
  const ranked = measurement.candidates
    .map((arm) => screenOne(arm.champion ?? measurement.champion, arm, direction, policy))
    .sort(byRank);
  const best = ranked[0];
  return { ranked, winner: best?.survived ? best.id : null, threshold: 1 + policy.bar };
}

/** The winner of a screen and its own screening rounds (kept to refuse them as evidence). */
export interface Selection {
  winner: string;
  screenRounds: PairedRounds;
}

/** The screen's winner with its screening rounds, or null when no candidate survived. */
export function selectWinner(measurement: ScreenMeasurement, result: ScreenResult): Selection | null {
  if (result.winner === null) return null;
  const arm = measurement.candidates.find((c) => c.id === result.winner);
  if (!arm) throw new RangeError(`screen winner ${result.winner} is not among the measured candidates`);
  return { winner: arm.id, screenRounds: { a: arm.champion ?? measurement.champion, b: arm.values } };
}

/** What the full comparison of the winner needs next, or its verdict. */
export type WinnerJudgement =
  | {
      status: 'measure';
      /** Fresh rounds of champion and winner to measure in one more verifier session. */
      rounds: number;
      reason: string;
    }
  | {
      status: 'done';
      /** The verdict and the effect to report: compareArms over the rounds up to the stopping look. */
      comparison: Comparison;
      /** Rounds the comparison used (the look that stopped). */
      roundsUsed: number;
      /** Measured rounds after that look: evidence kept aside, never part of the comparison. */
      roundsSetAside: number;
      reason: string;
    };

/**
 * Replay the sequential rule over paired rounds in order, as the loop's measure step does: looks at
 * nStart, nStart + step, … up to the rounds available; when a look asks for rounds not yet measured,
 * say how many to measure (nStart at first, then every round up to nMax at once: at most two sessions).
 */
export function replaySequential(
  rounds: PairedRounds,
  opts: CompareOptions,
  policy: SequentialPolicy,
): WinnerJudgement {
  if (rounds.a.length !== rounds.b.length) {
    throw new RangeError(
      `paired rounds need one value per arm, got ${rounds.a.length} and ${rounds.b.length}`,
    );
  }
  const measured = rounds.a.length;
  const pairedOpts: CompareOptions = { ...opts, paired: true };
  for (let n = 0; ; ) {
    const decision = decideNext(rounds.a.slice(0, n), rounds.b.slice(0, n), pairedOpts, policy);
    if (decision.action === 'stop') {
      if (decision.comparison === null) throw new Error('a stop without a comparison'); // decideNext never does
      return {
        status: 'done',
        comparison: decision.comparison,
        roundsUsed: n,
        roundsSetAside: measured - n,
        reason: decision.reason,
      };
    }
    const next = n + Math.max(decision.addRuns.a, decision.addRuns.b);
    if (next > measured) {
      const target = n === 0 ? next : policy.nMax;
      return { status: 'measure', rounds: target - measured, reason: decision.reason };
    }
    n = next;
  }
}

/** True when `fresh` starts with the winner's screening rounds: the same numbers, in order. */
function startsWithScreen(fresh: PairedRounds, screen: PairedRounds): boolean {
  const n = screen.a.length;
  if (n === 0 || fresh.a.length < n) return false;
  for (let i = 0; i < n; i++) {
    if (fresh.a[i] !== screen.a[i] || fresh.b[i] !== screen.b[i]) return false;
  }
  return true;
}

/**
 * The winner's verdict, from fresh rounds only: rounds of champion and winner measured after the
 * selection, in new verifier sessions. Call with no rounds first; measure what it asks for; call again
 * with all fresh rounds so far. The verdict and its effect are then unbiased by the selection (the
 * fresh noise is independent of the screen that picked the winner).
 * @throws RangeError when the fresh rounds begin with the winner's screening rounds (a caller bug:
 *   that is `biasedJudgeReusingScreen`), or on a bad policy.
 */
export function judgeWinner(
  selection: Selection,
  fresh: PairedRounds,
  opts: CompareOptions,
  policy: SequentialPolicy = DEFAULT_SEQUENTIAL_POLICY,
): WinnerJudgement {
  if (startsWithScreen(fresh, selection.screenRounds)) {
    throw new RangeError(
      `the rounds given as fresh for ${selection.winner} begin with its screening rounds: screening runs are never evidence`,
    );
  }
  return replaySequential(fresh, opts, policy);
}

/**
 * BIASED — for the benchmark's contrast only, never for a verdict: the winner's screening rounds count
 * as the first rounds of its full comparison, and the fresh ones are appended. It saves rounds, and it
 * carries the winner's curse into the verdict and the reported effect (`npm run bench:search` measures
 * by how much).
 */
export function biasedJudgeReusingScreen(
  selection: Selection,
  fresh: PairedRounds,
  opts: CompareOptions,
  policy: SequentialPolicy = DEFAULT_SEQUENTIAL_POLICY,
): WinnerJudgement {
  const rounds: PairedRounds = {
    a: [...selection.screenRounds.a, ...fresh.a],
    b: [...selection.screenRounds.b, ...fresh.b],
  };
  return replaySequential(rounds, opts, policy);
}
