/**
 * A seeded simulation of search strategies with known true effects (`npm run bench:search`,
 * docs/search.md): one lineage (k = 1, one full sequential comparison per iteration: today's loop)
 * against k candidates per iteration (a short screen of every candidate, the best survivor's full
 * comparison), at the same accelerator budget. The screen is the loop's (one session of champion and
 * candidate per candidate) or, for comparison, one shared session of the champion and all k. Every
 * verdict is the paired rule of src/stats, through ./selection.ts; only the measurements are synthetic.
 */
import { type ComparePolicy, type Comparison, createRng, type Rng } from '../stats/index.js';
import {
  biasedJudgeReusingScreen,
  judgeWinner,
  type PairedRounds,
  replaySequential,
  type ScreenArm,
  type ScreenMeasurement,
  type ScreenResult,
  type SearchPolicy,
  type Selection,
  screenCandidates,
  selectWinner,
  type WinnerJudgement,
} from './selection.js';

/**
 * Where candidates' true effects come from (after the guard and the CPU correctness gate: the
 * accelerator never sees the others). Effects are improvement ratios, > 1 better; a gain g is 1 + g, a
 * regression r is 1 − r, each drawn uniformly from its range; the rest are exactly 1 (no change).
 */
export interface EffectPrior {
  gainShare: number;
  gainRange: readonly [number, number];
  regressionShare: number;
  regressionRange: readonly [number, number];
}

/** Most proposals change nothing measurable; a few are real gains of 3–15%, as many regressions. */
export const PLAUSIBLE_PRIOR: EffectPrior = {
  gainShare: 0.15,
  gainRange: [0.03, 0.15],
  regressionShare: 0.15,
  regressionRange: [0.03, 0.15],
};

/** Every candidate is a no-change: what a search accepts here is a false accept. */
export const ALL_NULL_PRIOR: EffectPrior = { ...PLAUSIBLE_PRIOR, gainShare: 0, regressionShare: 0 };

export function drawTrueRatio(prior: EffectPrior, rng: Rng): number {
  const u = rng.uniform();
  const within = ([lo, hi]: readonly [number, number]): number => lo + (hi - lo) * rng.uniform();
  if (u < prior.gainShare) return 1 + within(prior.gainRange);
  if (u < prior.gainShare + prior.regressionShare) return 1 - within(prior.regressionRange);
  return 1;
}

/**
 * Noise of one arm timed once in a round (log scale). `cv`: each timing's own noise; `shared`: a
 * per-round factor every arm of the round shares (load, clocks), which pairing cancels; `disturbance`:
 * with this probability a timing alone is slowed by 1 + U(min, max) (a neighbour busy during one arm's
 * calls), which pairing does not cancel.
 */
export interface RoundNoise {
  cv: number;
  shared: number;
  disturbance?: { probability: number; min: number; max: number };
}

/** As measured by bench:verdict on the gdn target: paired CV 1.0% (per arm; the ratio's is √2 larger). */
export const MEASURED_NOISE: RoundNoise = { cv: 0.01, shared: 0 };

/**
 * The measured noise made worse: a shared per-round slowdown of CV 5%, and 5% of timings disturbed by
 * 5–50% (so about 10% of two-arm rounds, as in bench:stats's contaminated shape, but hitting one arm).
 */
export const CONTAMINATED_NOISE: RoundNoise = {
  cv: 0.01,
  shared: 0.05,
  disturbance: { probability: 0.05, min: 0.05, max: 0.5 },
};

/**
 * A busy machine as issue 36 measured it (load 10–15 on 2 cores): a paired CV near 10% (per arm 7%),
 * on top of the contaminated shape's shared slowdowns and one-arm disturbances.
 */
export const BUSY_NOISE: RoundNoise = { ...CONTAMINATED_NOISE, cv: 0.07 };

const CHAMPION_MS = 100;

/**
 * One verifier session: `rounds` rounds, each timing every arm once (arm 0 the champion). Values are
 * times in ms (lower is better); an arm with improvement ratio r runs at CHAMPION_MS / r.
 */
export function measureSession(
  trueRatios: readonly number[],
  rounds: number,
  noise: RoundNoise,
  rng: Rng,
): number[][] {
  const sigma = Math.sqrt(Math.log1p(noise.cv ** 2));
  const sharedSigma = Math.sqrt(Math.log1p(noise.shared ** 2));
  const values = trueRatios.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) {
    const shift = sharedSigma * rng.normal();
    trueRatios.forEach((ratio, arm) => {
      let logValue = Math.log(CHAMPION_MS / ratio) + shift + sigma * rng.normal();
      const d = noise.disturbance;
      if (d && rng.uniform() < d.probability) logValue += Math.log1p(d.min + (d.max - d.min) * rng.uniform());
      values[arm]!.push(Math.exp(logValue));
    });
  }
  return values;
}

/**
 * How the k candidates of an iteration are screened. 'per-candidate' (the loop, src/loop/steps/screen.ts):
 * each candidate in a verifier session of its own, champion against candidate, so each has its own
 * champion timings and the sessions can run as parallel jobs; k sessions of 2 arms. 'shared': one
 * session of the champion and all k candidates, the champion timed once per round for all of them
 * (a verifier the loop does not have yet); one session of k + 1 arms.
 */
export type ScreenSessions = 'per-candidate' | 'shared';

/**
 * Accelerator cost in arm-rounds (one arm timed once in a round, its repeats included). A verifier
 * session costs, per arm it loads, `overheadPerArm` (export, verification, loading) plus its rounds.
 */
export interface CostModel {
  overheadPerArm: number;
  /**
   * The per-arm overhead of a session of `arms` arms, where it was measured as a function of them
   * (bench:verdict --overhead-only: a session's start is shared by its arms); absent: overheadPerArm.
   */
  overheadFor?: (arms: number) => number;
  /** Accelerator seconds of one arm-round, to print per hour. */
  armRoundSeconds: number;
  /** How the screen is measured and paid for; absent: 'per-candidate', the loop's. */
  screenSessions?: ScreenSessions;
}

/**
 * The equivalent of 2 rounds per arm per session; 10 s an arm-round; the loop's per-candidate screen.
 * docs/search.md says why.
 */
export const DEFAULT_COST: CostModel = {
  overheadPerArm: 2,
  armRoundSeconds: 10,
  screenSessions: 'per-candidate',
};

export function sessionCost(cost: CostModel, arms: number, rounds: number): number {
  return rounds === 0 ? 0 : arms * ((cost.overheadFor?.(arms) ?? cost.overheadPerArm) + rounds);
}

/**
 * What screening `candidates` candidates for `rounds` rounds costs: k two-arm sessions (per-candidate,
 * the loop's: 2k(overhead + rounds)) or one session of k + 1 arms (shared: (k + 1)(overhead + rounds)).
 * Parallel per-candidate sessions save wall time, not accelerator time.
 */
export function screenCost(cost: CostModel, candidates: number, rounds: number): number {
  return (cost.screenSessions ?? 'per-candidate') === 'shared'
    ? sessionCost(cost, candidates + 1, rounds)
    : candidates * sessionCost(cost, 2, rounds);
}

/**
 * The screen's measurement of candidates with these true ratios: one shared session (the champion's
 * rounds shared by all), or one session per candidate (each arm carries its own champion rounds, as the
 * loop hands them to `screenCandidates`).
 */
export function measureScreen(
  trueRatios: readonly number[],
  rounds: number,
  noise: RoundNoise,
  sessions: ScreenSessions,
  rng: Rng,
): ScreenMeasurement {
  if (sessions === 'shared') {
    const [champion, ...arms] = measureSession([1, ...trueRatios], rounds, noise, rng);
    return { champion: champion!, candidates: arms.map((values, i) => ({ id: String(i), values })) };
  }
  return {
    champion: [],
    candidates: trueRatios.map((ratio, i) => {
      const [champion, values] = measureSession([1, ratio], rounds, noise, rng);
      return { id: String(i), values: values!, champion: champion! };
    }),
  };
}

/** How the winner's verdict is reached. 'reused-screen' is the biased contrast (selection.ts). */
export type Evidence = 'fresh' | 'reused-screen';

export interface SearchStrategy {
  policy: SearchPolicy;
  evidence: Evidence;
}

/** What one iteration did. */
export interface IterationOutcome {
  /** Arm-rounds spent. */
  cost: number;
  /** The true improvement ratio of the candidate that got a full comparison; null when none did. */
  judgedTrueRatio: number | null;
  /** The screen's estimate of that candidate (null at k = 1: no screen). */
  screenEstimate: number | null;
  comparison: Comparison | null;
  accepted: boolean;
  /** Arm-rounds the screen spent, and its verifier sessions (0 at k = 1). */
  screenCost: number;
  screenSessions: number;
  /**
   * Whether the candidate judged in full was the best of the k in truth; null when none was judged or
   * none of the k was a real gain (k = 1 too).
   */
  pickedBest: boolean | null;
}

/** What one iteration needs: the strategy, the world it runs in, and the seeded generator it draws from. */
export interface IterationContext {
  strategy: SearchStrategy;
  prior: EffectPrior;
  noise: RoundNoise;
  cost: CostModel;
  compare: ComparePolicy;
  rng: Rng;
}

const seedFrom = (rng: Rng): number => Math.floor(rng.uniform() * 2 ** 31);

/** The full comparison of champion and `trueRatio`, in at most two fresh sessions. */
function fullComparison(
  ctx: IterationContext,
  trueRatio: number,
  selection: Selection | null,
): { cost: number; comparison: Comparison } {
  const opts = { ...ctx.compare, direction: 'lower' as const, seed: seedFrom(ctx.rng), paired: true };
  const { full } = ctx.strategy.policy;
  const judge = (fresh: PairedRounds): WinnerJudgement => {
    // One lineage has no screen: its only candidate's comparison is today's.
    if (selection === null) return replaySequential(fresh, opts, full);
    return ctx.strategy.evidence === 'fresh'
      ? judgeWinner(selection, fresh, opts, full)
      : biasedJudgeReusingScreen(selection, fresh, opts, full);
  };
  const fresh = { a: [] as number[], b: [] as number[] };
  let cost = 0;
  for (;;) {
    const judgement = judge(fresh);
    if (judgement.status === 'done') return { cost, comparison: judgement.comparison };
    const [a, b] = measureSession([1, trueRatio], judgement.rounds, ctx.noise, ctx.rng);
    fresh.a.push(...a!);
    fresh.b.push(...b!);
    cost += sessionCost(ctx.cost, 2, judgement.rounds);
  }
}

/**
 * The screen as the loop runs it: the first session, then — shared sessions only — another session of
 * the champion and the race's contenders while the race asks for one (./race.ts). Per-candidate
 * sessions keep their fixed rounds (the loop's, too), ranked by the same rule at one look.
 */
export function raceScreen(
  ctx: Pick<IterationContext, 'strategy' | 'noise' | 'cost' | 'rng'>,
  trueRatios: readonly number[],
  sessions: ScreenSessions,
): { measurement: ScreenMeasurement; result: ScreenResult; cost: number; sessions: number } {
  const { policy } = ctx.strategy;
  const screen =
    sessions === 'shared' ? policy.screen : { ...policy.screen, maxRounds: policy.screen.rounds };
  let measurement = measureScreen(trueRatios, screen.rounds, ctx.noise, sessions, ctx.rng);
  let cost = screenCost(ctx.cost, policy.candidates, screen.rounds);
  let count = sessions === 'shared' ? 1 : policy.candidates;
  for (;;) {
    const result = screenCandidates(measurement, 'lower', screen);
    if (result.next === null) return { measurement, result, cost, sessions: count };
    const ids = result.next.ids;
    const [champion, ...arms] = measureSession(
      [1, ...ids.map((id) => trueRatios[Number(id)]!)],
      result.next.rounds,
      ctx.noise,
      ctx.rng,
    );
    // Each arm carries its own champion rounds from here on: the dropped keep the rounds they had.
    const shared = measurement.champion;
    measurement = {
      champion: [],
      candidates: measurement.candidates.map((arm: ScreenArm) => {
        const i = ids.indexOf(arm.id);
        const own = arm.champion ?? shared;
        return i < 0
          ? { ...arm, champion: own }
          : { ...arm, values: [...arm.values, ...arms[i]!], champion: [...own, ...champion!] };
      }),
    };
    cost += sessionCost(ctx.cost, ids.length + 1, result.next.rounds);
    count += 1;
  }
}

/** One iteration: propose k, screen them (k > 1; `cost.screenSessions`), fully compare the best survivor. */
export function runIteration(ctx: IterationContext): IterationOutcome {
  const { policy } = ctx.strategy;
  const trueRatios = Array.from({ length: policy.candidates }, () => drawTrueRatio(ctx.prior, ctx.rng));
  if (policy.candidates === 1) {
    const { cost, comparison } = fullComparison(ctx, trueRatios[0]!, null);
    return { ...outcome(cost, trueRatios[0]!, null, comparison), pickedBest: null };
  }
  const sessions = ctx.cost.screenSessions ?? 'per-candidate';
  const screen = raceScreen(ctx, trueRatios, sessions);
  const selection = selectWinner(screen.measurement, screen.result);
  const screenSpent = { screenCost: screen.cost, screenSessions: screen.sessions };
  if (selection === null) {
    return {
      cost: screen.cost,
      judgedTrueRatio: null,
      screenEstimate: null,
      comparison: null,
      accepted: false,
      ...screenSpent,
      pickedBest: null,
    };
  }
  const trueRatio = trueRatios[Number(selection.winner)]!;
  const estimate = screen.result.ranked[0]!.estimate;
  const full = fullComparison(ctx, trueRatio, selection);
  const best = Math.max(...trueRatios);
  return {
    ...outcome(screen.cost + full.cost, trueRatio, estimate, full.comparison),
    ...screenSpent,
    pickedBest: best > 1 ? trueRatio === best : null,
  };
}

function outcome(
  cost: number,
  trueRatio: number,
  screenEstimate: number | null,
  comparison: Comparison,
): Omit<IterationOutcome, 'pickedBest'> {
  return {
    cost,
    judgedTrueRatio: trueRatio,
    screenEstimate,
    comparison,
    accepted: comparison.verdict === 'improved',
    screenCost: 0,
    screenSessions: 0,
  };
}

/** Mean and its standard error; NaN for no data. */
export interface MeanEstimate {
  mean: number;
  se: number;
  n: number;
}

class Accumulator {
  private sum = 0;
  private sumSq = 0;
  n = 0;
  add(x: number): void {
    this.sum += x;
    this.sumSq += x * x;
    this.n += 1;
  }
  estimate(): MeanEstimate {
    if (this.n === 0) return { mean: Number.NaN, se: Number.NaN, n: 0 };
    const mean = this.sum / this.n;
    const variance = this.n > 1 ? Math.max(0, (this.sumSq - this.n * mean * mean) / (this.n - 1)) : 0;
    return { mean, se: Math.sqrt(variance / this.n), n: this.n };
  }
}

export interface SearchSummary {
  trials: number;
  /** Accelerator hours spent over all trials. */
  hours: number;
  iterations: number;
  /** Iterations whose winner got a full comparison. */
  judged: number;
  accepted: number;
  /** Accepted candidates whose true effect was exactly no change / a regression. */
  acceptedNull: number;
  acceptedRegressions: number;
  /** Σ ln(true ratio) of accepted candidates, in percent, per accelerator hour (all trials pooled). */
  trueGainPctPerHour: number;
  /** Standard error of that rate, from its spread over the trials. */
  trueGainPctPerHourSe: number;
  /** Share of iterations that accepted a no-change candidate (the false-accept rate under ALL_NULL_PRIOR). */
  falseAcceptRate: number;
  /** Reported effect − true effect, percentage points: accepted winners, and every judged winner. */
  biasAccepted: MeanEstimate;
  biasJudged: MeanEstimate;
  /** The winner's screening estimate − its true effect, percentage points (the winner's curse). */
  screenBias: MeanEstimate;
  /** The screen's share of the arm-rounds spent, and its verifier sessions per iteration. */
  screenCostShare: number;
  screenSessionsPerIteration: number;
  /** Of judged iterations with a real gain among the k: the share whose judged candidate was the best. */
  pickedBest: MeanEstimate;
}

export interface SearchSimulation {
  strategy: SearchStrategy;
  prior: EffectPrior;
  noise: RoundNoise;
  cost?: CostModel;
  /** The verdict rule's knobs (defaults: the loop's). */
  compare?: ComparePolicy;
  /** Accelerator hours per trial: iterations run until it is spent (the last one may overrun). */
  budgetHours: number;
  trials: number;
  seed: number;
}

const deltaPct = (ratio: number): number => (ratio - 1) * 100;

/** Run `trials` searches of `budgetHours` each. Deterministic for a seed. */
export function simulateSearch(sim: SearchSimulation): SearchSummary {
  const cost = sim.cost ?? DEFAULT_COST;
  const rng = createRng(sim.seed);
  const ctx: IterationContext = {
    strategy: sim.strategy,
    prior: sim.prior,
    noise: sim.noise,
    cost,
    compare: sim.compare ?? {},
    rng,
  };
  const budget = (sim.budgetHours * 3600) / cost.armRoundSeconds;
  const biasAccepted = new Accumulator();
  const biasJudged = new Accumulator();
  const screenBias = new Accumulator();
  const pickedBest = new Accumulator();
  let screenSpent = 0;
  let screenSessions = 0;
  let spent = 0;
  let iterations = 0;
  let judged = 0;
  let accepted = 0;
  let acceptedNull = 0;
  let acceptedRegressions = 0;
  let logGain = 0;
  const perTrialRate = new Accumulator();
  for (let t = 0; t < sim.trials; t++) {
    const gainBefore = logGain;
    let trialSpent = 0;
    while (trialSpent < budget) {
      const it = runIteration(ctx);
      trialSpent += it.cost;
      spent += it.cost;
      screenSpent += it.screenCost;
      screenSessions += it.screenSessions;
      iterations += 1;
      if (it.pickedBest !== null) pickedBest.add(Number(it.pickedBest));
      if (it.judgedTrueRatio === null || it.comparison?.ratio == null) continue;
      judged += 1;
      const trueDelta = deltaPct(it.judgedTrueRatio);
      const bias = deltaPct(it.comparison.ratio) - trueDelta;
      biasJudged.add(bias);
      if (it.screenEstimate !== null) screenBias.add(deltaPct(it.screenEstimate) - trueDelta);
      if (!it.accepted) continue;
      accepted += 1;
      biasAccepted.add(bias);
      logGain += Math.log(it.judgedTrueRatio);
      if (it.judgedTrueRatio === 1) acceptedNull += 1;
      if (it.judgedTrueRatio < 1) acceptedRegressions += 1;
    }
    const trialHours = (trialSpent * cost.armRoundSeconds) / 3600;
    perTrialRate.add(((logGain - gainBefore) * 100) / trialHours);
  }
  const hours = (spent * cost.armRoundSeconds) / 3600;
  return {
    trials: sim.trials,
    hours,
    iterations,
    judged,
    accepted,
    acceptedNull,
    acceptedRegressions,
    trueGainPctPerHour: (logGain * 100) / hours,
    trueGainPctPerHourSe: perTrialRate.estimate().se,
    falseAcceptRate: acceptedNull / iterations,
    biasAccepted: biasAccepted.estimate(),
    biasJudged: biasJudged.estimate(),
    screenBias: screenBias.estimate(),
    screenCostShare: screenSpent / spent,
    screenSessionsPerIteration: screenSessions / iterations,
    pickedBest: pickedBest.estimate(),
  };
}
