/**
 * Monte Carlo checks of acceptance rules on synthetic runs with a known true effect. The tests use
 * it to prove the verdict rule (false accepts at zero effect, power at 2×MDE) and to show the seed
 * loop's one-run rule failing; `npm run bench:stats` runs it with many trials. Seeded throughout.
 */
import { bootstrapRatioOfMedians, type CiMethod } from './bootstrap.js';
import {
  type ComparePolicy,
  type Comparison,
  compareArms,
  type Direction,
  type StatsVerdict,
} from './compare-arms.js';
import { minimumDetectableEffect } from './noise.js';
import { createRng, type Rng } from './random.js';
import { DEFAULT_SEQUENTIAL_POLICY, decideNext, type SequentialPolicy } from './sequential.js';

/**
 * Shape of the run-to-run noise.
 * - lognormal: value = typical · exp(σZ) with σ = √ln(1 + CV²), so sd/mean = CV exactly.
 * - contaminated: lognormal, plus with probability 10% a disturbed run (a noisy neighbour, a
 *   throttled clock) that is worse by a factor 1 + U(5%, 50%). In paired rounds both arms are
 *   disturbed alike (the disturbance is the round's).
 * - one-arm: as contaminated, but each value is disturbed on its own: in a paired round one arm can be
 *   hit and the other not (a preemption inside one arm's calls), which pairing does not cancel.
 * - t3: heavy tails: ln(value) has Student's t with 3 degrees of freedom, scaled to the same SD σ.
 * - drift: lognormal, plus a slow shared swing of the machine's speed, ±5% over 20 rounds (a
 *   neighbour's job ramping up and down, thermal throttling): successive rounds are correlated.
 */
export type NoiseShape = 'lognormal' | 'contaminated' | 'one-arm' | 't3' | 'drift';

/** The shapes of the acceptance tables. */
export const NOISE_SHAPES: readonly NoiseShape[] = ['lognormal', 'contaminated'];
/** The shapes a printed number must also hold under (issue 36): heavy tails, one-arm outliers, drift. */
export const HOSTILE_NOISE_SHAPES: readonly NoiseShape[] = ['t3', 'one-arm', 'drift'];

const CONTAMINATION_PROBABILITY = 0.1;
const CONTAMINATION_MIN = 0.05;
const CONTAMINATION_MAX = 0.5;
const DRIFT_AMPLITUDE = 0.05;
const DRIFT_PERIOD_ROUNDS = 20;
/** t with 3 degrees of freedom has variance 3: this scales it to unit variance. */
const T3_SCALE = 1 / Math.sqrt(3);

export interface Scenario {
  /** Per-run coefficient of variation of the undisturbed noise (0.01 = 1%). */
  cv: number;
  /** True improvement ratio of the candidate (> 1 better; 1 = no change), in the verdict's orientation. */
  trueRatio: number;
  direction: Direction;
  shape: NoiseShape;
  /**
   * CV of noise a round's two values share (load on the machine, the clock, cache state while both
   * arms run call by call in one process): paired rules cancel it, unpaired ones see it as more noise.
   * Default 0.
   */
  shared?: number;
}

/** Produces per-run values for an arm, as the engine's interleaved runs would. */
export interface RunSampler {
  draw(arm: 'a' | 'b', count: number): number[];
  /** `count` rounds of both arms measured together: the shared noise and disturbances hit both. */
  rounds(count: number): { a: number[]; b: number[] };
}

/** Synthetic runs for `scenario`: champion values around 100 ms (lower) or 0.5 MFU (higher). */
export function scenarioSampler(scenario: Scenario, rng: Rng): RunSampler {
  const sigma = Math.sqrt(Math.log1p(scenario.cv ** 2));
  const better = scenario.direction === 'higher' ? 1 : -1;
  const typical = scenario.direction === 'higher' ? 0.5 : 100;
  const sharedSigma = Math.sqrt(Math.log1p((scenario.shared ?? 0) ** 2));
  const shape = scenario.shape;
  let round = 0; // rounds drawn so far: the drift's phase
  const disturbance = (): number => {
    if (rng.uniform() >= CONTAMINATION_PROBABILITY) return 0;
    const slowdown = CONTAMINATION_MIN + (CONTAMINATION_MAX - CONTAMINATION_MIN) * rng.uniform();
    return -better * Math.log1p(slowdown);
  };
  // A round's shared part: its load (log scale), the drift, and whether a disturbance hit it.
  const roundState = (): number => {
    let shift = sharedSigma * rng.normal();
    if (shape === 'contaminated') shift += disturbance();
    if (shape === 'drift') {
      shift += -better * Math.log1p(DRIFT_AMPLITUDE * Math.sin((2 * Math.PI * round) / DRIFT_PERIOD_ROUNDS));
    }
    round += 1;
    return shift;
  };
  const noise = (): number => {
    if (shape !== 't3') return sigma * rng.normal();
    const chi2 = rng.normal() ** 2 + rng.normal() ** 2 + rng.normal() ** 2;
    return sigma * T3_SCALE * (rng.normal() / Math.sqrt(chi2 / 3));
  };
  const one = (arm: 'a' | 'b', shift: number): number => {
    let logValue = Math.log(typical) + noise() + shift;
    if (shape === 'one-arm') logValue += disturbance();
    if (arm === 'b') logValue += better * Math.log(scenario.trueRatio);
    return Math.exp(logValue);
  };
  return {
    // Unpaired: every run has a round of its own.
    draw: (arm, count) => Array.from({ length: count }, () => one(arm, roundState())),
    rounds(count) {
      const a: number[] = [];
      const b: number[] = [];
      for (let i = 0; i < count; i++) {
        const shift = roundState();
        a.push(one('a', shift));
        b.push(one('b', shift));
      }
      return { a, b };
    },
  };
}

export interface RuleOutcome {
  verdict: StatsVerdict;
  /** Runs each arm used (the larger arm when they differ). */
  runsPerArm: number;
  /** The comparison the verdict came from (hillclimb's rules), with the MDE it prints. */
  comparison?: Comparison | null;
}

/** An acceptance rule under test. */
export interface Rule {
  name: string;
  decide(sampler: RunSampler, direction: Direction, seed: number): RuleOutcome;
}

/** hillclimb's verdict on a fixed number of runs per arm. */
export function fixedRunsRule(n: number, policy: ComparePolicy = {}): Rule {
  return {
    name: `hillclimb, n = ${n}`,
    decide(sampler, direction, seed) {
      const c = compareArms(sampler.draw('a', n), sampler.draw('b', n), { ...policy, direction, seed });
      return { verdict: c.verdict, runsPerArm: n, comparison: c };
    },
  };
}

/** hillclimb's verdict with sequential stopping (sequential.ts). */
export function sequentialRule(
  seq: SequentialPolicy = DEFAULT_SEQUENTIAL_POLICY,
  policy: ComparePolicy = {},
): Rule {
  return {
    name: `hillclimb, n = ${seq.nStart}→${seq.nMax} sequential`,
    decide(sampler, direction, seed) {
      const a: number[] = [];
      const b: number[] = [];
      for (;;) {
        const d = decideNext(a, b, { ...policy, direction, seed }, seq);
        if (d.action === 'stop') {
          return {
            verdict: d.comparison?.verdict ?? 'invalid',
            runsPerArm: Math.max(a.length, b.length),
            comparison: d.comparison,
          };
        }
        a.push(...sampler.draw('a', d.addRuns.a));
        b.push(...sampler.draw('b', d.addRuns.b));
      }
    },
  };
}

/** hillclimb's verdict on `n` paired rounds (both arms timed call by call in one process). */
export function pairedRoundsRule(n: number, policy: ComparePolicy = {}): Rule {
  return {
    name: `hillclimb paired, n = ${n}`,
    decide(sampler, direction, seed) {
      const { a, b } = sampler.rounds(n);
      const c = compareArms(a, b, { ...policy, paired: true, direction, seed });
      return { verdict: c.verdict, runsPerArm: n, comparison: c };
    },
  };
}

/** hillclimb's paired verdict with sequential stopping (rounds added in pairs, as the loop does). */
export function pairedSequentialRule(
  seq: SequentialPolicy = DEFAULT_SEQUENTIAL_POLICY,
  policy: ComparePolicy = {},
): Rule {
  return {
    name: `hillclimb paired, n = ${seq.nStart}→${seq.nMax} sequential`,
    decide(sampler, direction, seed) {
      const a: number[] = [];
      const b: number[] = [];
      for (;;) {
        const d = decideNext(a, b, { ...policy, paired: true, direction, seed }, seq);
        if (d.action === 'stop') {
          return {
            verdict: d.comparison?.verdict ?? 'invalid',
            runsPerArm: a.length,
            comparison: d.comparison,
          };
        }
        const r = sampler.rounds(Math.max(d.addRuns.a, d.addRuns.b));
        a.push(...r.a);
        b.push(...r.b);
      }
    },
  };
}

/**
 * The seed loop's rule (gdnctl.py, reference/seed-loop.md §3.5): one run of each, Δ% = (B − A)/|A|·100
 * in the better direction; promote at Δ ≥ +0.25%, regression at Δ ≤ −1.0%, else within threshold.
 */
export function gdnctlRule(promotePct = 0.25, regressionPct = 1.0): Rule {
  return {
    name: `gdnctl, n = 1, Δ ≥ +${promotePct}%`,
    decide(sampler, direction) {
      const [a] = sampler.draw('a', 1) as [number];
      const [b] = sampler.draw('b', 1) as [number];
      const deltaPct = ((direction === 'higher' ? b - a : a - b) / Math.abs(a)) * 100;
      const verdict: StatsVerdict =
        deltaPct >= promotePct ? 'improved' : deltaPct <= -regressionPct ? 'regressed' : 'no-change';
      return { verdict, runsPerArm: 1 };
    },
  };
}

export interface SimulationResult {
  rule: string;
  scenario: Scenario;
  trials: number;
  /** Share of trials with verdict `improved` (false accepts when trueRatio = 1, power otherwise). */
  acceptRate: number;
  /** Share of trials with verdict `regressed`. */
  regressRate: number;
  /** Share of trials with `invalid` or `needs-human` (expected 0 on these data). */
  otherRate: number;
  meanRunsPerArm: number;
}

/** Run `rule` on `trials` independent synthetic comparisons of `scenario`. Deterministic for a seed. */
export function simulate(
  rule: Rule,
  scenario: Scenario,
  opts: { trials: number; seed: number },
): SimulationResult {
  const rng = createRng(opts.seed);
  const sampler = scenarioSampler(scenario, rng);
  let accepted = 0;
  let regressed = 0;
  let other = 0;
  let runs = 0;
  for (let t = 0; t < opts.trials; t++) {
    const bootstrapSeed = Math.floor(rng.uniform() * 2 ** 31);
    const outcome = rule.decide(sampler, scenario.direction, bootstrapSeed);
    if (outcome.verdict === 'improved') accepted += 1;
    else if (outcome.verdict === 'regressed') regressed += 1;
    else if (outcome.verdict !== 'no-change') other += 1;
    runs += outcome.runsPerArm;
  }
  return {
    rule: rule.name,
    scenario,
    trials: opts.trials,
    acceptRate: accepted / opts.trials,
    regressRate: regressed / opts.trials,
    otherRate: other / opts.trials,
    meanRunsPerArm: runs / opts.trials,
  };
}

/** Which MDE a printed-MDE check reads from a comparison. */
export type PrintedMde = (comparison: Comparison) => number | null;

/** The MDE the verdict prints (`Comparison.mde`). */
export const printedMde: PrintedMde = (c) => c.mde;

export interface PrintedMdePowerResult {
  rule: string;
  /** The scenario of the noise; its trueRatio is ignored (each trial's is the MDE its pilot printed). */
  scenario: Scenario;
  trials: number;
  /** Share of trials whose comparison at a true gain of the pilot's printed MDE was `improved`. */
  power: number;
  /** Median of the printed MDEs (fraction). */
  medianMde: number;
  /** Mean runs per arm of the comparisons at the printed MDE. */
  meanRunsPerArm: number;
}

/**
 * Power at the printed MDE, end to end: each trial runs `rule` on a no-change pilot, reads the MDE
 * the verdict prints (`mdeOf`, default `printedMde`), then runs the rule again on fresh runs whose true
 * gain is exactly that MDE, and counts acceptances. "Detectable with 80% power: +m" is honest when
 * this is ≥ 80%: a true gain of the size a comparison prints is accepted that often by a comparison
 * like it. (For a fixed n the printed MDE depends only on the noise, not on the effect, so the pilot
 * at no change stands for any pilot; for the sequential rule it is the MDE of a no-change verdict.)
 */
export function powerAtPrintedMde(
  rule: Rule,
  scenario: Scenario,
  opts: { trials: number; seed: number; mdeOf?: PrintedMde },
): PrintedMdePowerResult {
  const mdeOf = opts.mdeOf ?? printedMde;
  const rng = createRng(opts.seed);
  const pilot = scenarioSampler({ ...scenario, trueRatio: 1 }, rng);
  const seed = (): number => Math.floor(rng.uniform() * 2 ** 31);
  const mdes: number[] = [];
  let accepted = 0;
  let runs = 0;
  for (let t = 0; t < opts.trials; t++) {
    const comparison = rule.decide(pilot, scenario.direction, seed()).comparison;
    const mde = comparison ? mdeOf(comparison) : null;
    if (mde === null || !Number.isFinite(mde)) continue; // counts as a miss
    mdes.push(mde);
    const atMde = scenarioSampler({ ...scenario, trueRatio: 1 + mde }, rng);
    const outcome = rule.decide(atMde, scenario.direction, seed());
    if (outcome.verdict === 'improved') accepted += 1;
    runs += outcome.runsPerArm;
  }
  mdes.sort((x, y) => x - y);
  return {
    rule: rule.name,
    scenario,
    trials: opts.trials,
    power: accepted / opts.trials,
    medianMde: mdes.length === 0 ? Number.NaN : mdes[mdes.length >> 1]!,
    meanRunsPerArm: mdes.length === 0 ? Number.NaN : runs / mdes.length,
  };
}

/** The MDE the verdict would report at `n` runs per arm if it knew the true CV. */
export function trueMde(cv: number, n: number, policy: ComparePolicy = {}): number {
  return minimumDetectableEffect(cv, n, n, {
    power: policy.power,
    falseAcceptRate: policy.falseAcceptRate,
    practicalDelta: policy.practicalDelta,
    paired: policy.paired === true,
  });
}

export interface CoverageResult {
  method: CiMethod;
  n: number;
  trials: number;
  /** Share of intervals entirely above the true ratio. */
  missLow: number;
  /** Share of intervals entirely below the true ratio. */
  missHigh: number;
  coverage: number;
}

/** How often the bootstrap interval of the ratio of medians misses the true ratio, per side. */
export function intervalCoverage(
  scenario: Scenario,
  n: number,
  method: CiMethod,
  opts: { trials: number; seed: number; confidence?: number },
): CoverageResult {
  const rng = createRng(opts.seed);
  const sampler = scenarioSampler(scenario, rng);
  let missLow = 0;
  let missHigh = 0;
  for (let t = 0; t < opts.trials; t++) {
    const a = sampler.draw('a', n);
    const b = sampler.draw('b', n);
    const [numerator, denominator] = scenario.direction === 'higher' ? [b, a] : [a, b];
    const boot = bootstrapRatioOfMedians(numerator, denominator, {
      seed: Math.floor(rng.uniform() * 2 ** 31),
      confidence: opts.confidence,
    });
    const ci = method === 'bca' ? boot.bca : boot.percentile;
    if (ci.lo > scenario.trueRatio) missLow += 1;
    else if (ci.hi < scenario.trueRatio) missHigh += 1;
  }
  return {
    method,
    n,
    trials: opts.trials,
    missLow: missLow / opts.trials,
    missHigh: missHigh / opts.trials,
    coverage: 1 - (missLow + missHigh) / opts.trials,
  };
}

/**
 * How often the interval a verdict prints (`Comparison.ci`) holds the true ratio, for any rule that
 * returns its comparison: the check behind the "95%" in every printed interval, paired ones included.
 */
export function printedIntervalCoverage(
  rule: Rule,
  scenario: Scenario,
  opts: { trials: number; seed: number },
): Omit<CoverageResult, 'method'> & { rule: string } {
  const rng = createRng(opts.seed);
  const sampler = scenarioSampler(scenario, rng);
  let missLow = 0;
  let missHigh = 0;
  let n = 0;
  for (let t = 0; t < opts.trials; t++) {
    const outcome = rule.decide(sampler, scenario.direction, Math.floor(rng.uniform() * 2 ** 31));
    n = Math.max(n, outcome.runsPerArm);
    const ci = outcome.comparison?.ci;
    if (!ci || ci.lo > scenario.trueRatio) missLow += 1;
    else if (ci.hi < scenario.trueRatio) missHigh += 1;
  }
  return {
    rule: rule.name,
    n,
    trials: opts.trials,
    missLow: missLow / opts.trials,
    missHigh: missHigh / opts.trials,
    coverage: 1 - (missLow + missHigh) / opts.trials,
  };
}
