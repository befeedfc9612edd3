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
  type Interval,
  type SequentialPolicy,
} from '../stats/index.js';
import { type RaceArm, type RaceDrop, type RaceEnding, type RaceStanding, replayRace } from './race.js';

/** The screening measurement's knobs. */
export interface ScreenPolicy {
  /**
   * Rounds of the first screening session, and of every later one of the race: each round times the
   * champion and every candidate once, call by call.
   */
  rounds: number;
  /**
   * The race's round budget (./race.ts): while the leader is not separated from the others, the
   * contenders get another session of `rounds` rounds until they have been timed this many. Absent:
   * `rounds` (one session, no race).
   */
  maxRounds?: number;
  /**
   * A candidate survives when its screening estimate (geometric mean of its per-round improvement
   * ratios) is at least 1 + bar, and the race drops it early when its interval lies wholly below. A
   * fraction: 0.02 = +2%. The default is the practical floor (`measure.practical_delta`): a candidate
   * whose screen does not even show the smallest gain worth a PR does not get the full comparison. The
   * screen only ranks and filters; it never accepts.
   */
  bar: number;
  /** The race's bound on dropping the best candidate (./race.ts); absent: RACE_FALSE_DROP_RATE. */
  falseDropRate?: number;
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
  screen: { rounds: 3, maxRounds: 3, bar: 0.02 },
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
  /**
   * Geometric mean over its rounds of the improvement ratio (> 1 better); null when the values cannot
   * be used.
   */
  estimate: number | null;
  /** Its paired t interval against the champion at the race's per-look confidence; null under 2 rounds. */
  interval: Interval | null;
  /** Rounds it was timed (a candidate the race dropped has fewer than the ones it kept). */
  rounds: number;
  /**
   * How the race dropped it, by an interval: against the champion wholly below the bar, or the leader's
   * against it wholly above 1 (that leader's id). Null when no interval dropped it.
   */
  droppedBy: { kind: 'below-bar' } | { kind: 'behind'; leader: string } | null;
  survived: boolean;
  /** Why it survived or was dropped, in one line. */
  reason: string;
}

export interface ScreenResult {
  /** Survivors first, best estimate first; then the dropped ones, best first, unusable ones last. */
  ranked: ScreenedCandidate[];
  /**
   * The best survivor's id: the one candidate the full comparison measures. Null when none survived,
   * and while the race goes on (`next`).
   */
  winner: string | null;
  /** 1 + bar: the estimate a candidate needed. */
  threshold: number;
  /**
   * While the race goes on: another session of the champion and these contenders for this many rounds.
   * Null once the ranking is final.
   */
  next: { rounds: number; ids: string[] } | null;
  /** How the race ended (null while it goes on); ./race.ts. */
  ending: RaceEnding | null;
  /** The confidence of the intervals (per look: Bonferroni over the looks and the candidates). */
  confidence: number;
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
  const max = policy.maxRounds ?? policy.rounds;
  if (!(Number.isInteger(max) && max >= policy.rounds)) {
    throw new RangeError(
      `screen.maxRounds must be an integer ≥ screen.rounds (${policy.rounds}), got ${max}`,
    );
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

/** Why a candidate cannot be ranked at all, or null: its ratios then enter the race. */
function unusable(champion: readonly number[], arm: ScreenArm, policy: ScreenPolicy): string | null {
  if (arm.values.length !== champion.length) {
    return `${arm.values.length} screening values for ${champion.length} rounds`;
  }
  if (champion.length < policy.rounds) {
    return `${champion.length} screening rounds; the screen needs ${policy.rounds}`;
  }
  if (!arm.values.every(usable) || !champion.every(usable)) {
    return 'a screening value is not a finite positive number';
  }
  return null;
}

const roundsText = (n: number): string => `${n} round${n === 1 ? '' : 's'}`;

/** "screen 1.0810 [1.0102, 1.1567] over 6 rounds" (no interval under 2 rounds). */
function screenText(standing: RaceStanding): string {
  const ci = standing.vsChampion?.ci;
  const interval = ci ? ` [${ci.lo.toFixed(4)}, ${ci.hi.toFixed(4)}]` : '';
  return `screen ${standing.estimate.toFixed(4)}${interval} over ${roundsText(standing.rounds)}`;
}

function dropText(drop: RaceDrop, threshold: number): string {
  if (drop.kind === 'below-bar') {
    return `interval wholly below ${threshold.toFixed(4)} at look ${drop.look}: dropped`;
  }
  const ci = drop.vsLeader.ci;
  return (
    `candidate ${drop.leader} ahead by ${drop.vsLeader.estimate.toFixed(4)} [${ci.lo.toFixed(4)}, ${ci.hi.toFixed(4)}] ` +
    `over the same ${roundsText(drop.vsLeader.rounds)}, wholly above 1, at look ${drop.look}: dropped`
  );
}

/**
 * Survivors before the dropped; among survivors, the ones the race kept before the ones a leader was
 * separated from (whose estimates are over fewer rounds); then by estimate (unusable last); ties keep
 * the proposal order.
 */
function byRank(x: ScreenedCandidate, y: ScreenedCandidate): number {
  if (x.survived !== y.survived) return x.survived ? -1 : 1;
  const behind = (c: ScreenedCandidate) => Number(c.droppedBy?.kind === 'behind');
  if (x.survived && behind(x) !== behind(y)) return behind(x) - behind(y);
  return (y.estimate ?? Number.NEGATIVE_INFINITY) - (x.estimate ?? Number.NEGATIVE_INFINITY);
}

/**
 * Rank the candidates of the screen so far (./race.ts): say whether the race needs another session,
 * and once it has ended, pick the best survivor — a contender the race kept whose estimate reaches
 * 1 + bar. The estimates rank; they are never evidence: the winner's estimate is the maximum of k
 * noisy ones and sits above its true effect on average.
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
  const threshold = 1 + policy.bar;
  const refused: ScreenedCandidate[] = [];
  const racing: RaceArm[] = [];
  for (const arm of measurement.candidates) {
    const champion = arm.champion ?? measurement.champion;
    const why = unusable(champion, arm, policy);
    if (why === null)
      racing.push({ id: arm.id, ratios: roundRatios({ a: champion, b: arm.values }, direction) });
    else
      refused.push({
        id: arm.id,
        estimate: null,
        interval: null,
        rounds: champion.length,
        droppedBy: null,
        survived: false,
        reason: why,
      });
  }
  const race = replayRace(racing, {
    rounds: policy.rounds,
    maxRounds: policy.maxRounds ?? policy.rounds,
    threshold,
    ...(policy.falseDropRate === undefined ? {} : { falseDropRate: policy.falseDropRate }),
  });
  const final = race.next === null;
  const ranked = race.standings.map((standing): ScreenedCandidate => {
    const shown = screenText(standing);
    const kept = standing.dropped === null;
    // One the leader separated from still cleared the bar: it survives, ranked behind the kept ones,
    // and is measured in full should the winner's comparison end before it says anything.
    const survived = final && standing.dropped?.kind !== 'below-bar' && standing.estimate >= threshold;
    const reason = !kept
      ? `${shown}: ${dropText(standing.dropped!, threshold)}`
      : !final
        ? `${shown}: still racing`
        : survived
          ? `${shown} ≥ ${threshold.toFixed(4)}`
          : `${shown} < ${threshold.toFixed(4)}: dropped`;
    return {
      id: standing.id,
      estimate: standing.estimate,
      interval: standing.vsChampion?.ci ?? null,
      rounds: standing.rounds,
      droppedBy:
        standing.dropped === null
          ? null
          : standing.dropped.kind === 'below-bar'
            ? { kind: 'below-bar' }
            : { kind: 'behind', leader: standing.dropped.leader },
      survived,
      reason,
    };
  });
  ranked.push(...refused);
  ranked.sort(byRank);
  const best = ranked[0];
  return {
    ranked,
    winner: final && best?.survived ? best.id : null,
    threshold,
    next: race.next && { rounds: race.next.rounds, ids: race.contenders },
    ending: race.ending,
    confidence: race.confidence,
  };
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
