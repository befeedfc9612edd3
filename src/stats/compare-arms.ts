/**
 * The A/B verdict: compare per-run values of the champion (A) and a candidate (B) and return exactly
 * one stats verdict with the numbers behind it. Pure and deterministic for a given seed.
 *
 * Rule (docs/statistics.md, reference/evaluation.md §5), with r = the improvement ratio oriented so
 * that r > 1 is better — of medians for independent runs, with a bootstrap confidence interval [lo, hi];
 * for paired rounds the geometric mean of the rounds' ratios, with the t interval of paired.ts:
 *   invalid      inputs cannot support a verdict: a value that is not finite and positive, or fewer
 *                than `minRuns` runs in an arm;
 *   needs-human  r > implausibleSpeedup (never accepted automatically);
 *   improved     lo > 1 + max(practicalDelta, noise margin)  (the accept bar; noise.ts);
 *   regressed    hi < 1 − regressionDelta                     (the regression bar);
 *   no-change    otherwise ("~").
 * The noise margin holds false accepts at no change to `falseAcceptRate` (1%); the MDE reported with
 * the verdict is the true gain the bar lets through with probability `power` (80%) at this n, computed
 * at an upper confidence bound of the CV (noise.ts `noiseUpperBound`) so that it has that power at the
 * true noise, not only at the estimate.
 */
import { MEASURE_DEFAULTS } from '../config/index.js';
import { bootstrapRatioOfMedians, type CiMethod, type Interval } from './bootstrap.js';
import { median } from './describe.js';
import {
  acceptMargin,
  armCv,
  DEFAULT_CONFIDENCE,
  DEFAULT_FALSE_ACCEPT_RATE,
  DEFAULT_POWER,
  DEFAULT_PRACTICAL_DELTA,
  MDE_NOISE_CONFIDENCE,
  minimumDetectableEffect,
  type NoiseEstimate,
  noiseUpperBound,
  pairedNoise,
  pooledLogNoise,
  robustNoise,
} from './noise.js';
import { pairedLogRatio } from './paired.js';

/**
 * The verdicts this rule can reach. The loop adds its own two, `error` and `no-op`, to make the full
 * list every iteration ends with (evidence/verdicts.ts).
 */
export const STATS_VERDICTS = ['improved', 'no-change', 'regressed', 'invalid', 'needs-human'] as const;

export type StatsVerdict = (typeof STATS_VERDICTS)[number];

/** Which way is better: 'higher' (MFU, throughput) or 'lower' (time). */
export type Direction = 'higher' | 'lower';

/** Knobs of the rule. The harness fixes them per target; the agent never chooses them. */
export interface ComparePolicy {
  /**
   * Two-sided confidence level of the interval. Default 0.95; the accept bar's constants are measured for
   * 0.95 (noise.ts), so another level changes the false-accept rate (`npm run bench:stats` says by how much).
   */
  confidence?: number;
  /** Bootstrap resamples, ≥ MIN_RESAMPLES. Default `measure.resamples`'s. */
  resamples?: number;
  /** Interval method. Default 'percentile' (see docs/statistics.md for why not BCa). */
  ciMethod?: CiMethod;
  /** Smallest relative improvement worth accepting, whatever the noise (0.02 = 2%). Default `measure.practical_delta`'s. */
  practicalDelta?: number;
  /** Relative loss the upper CI bound must clear to say `regressed`. Default: practicalDelta. */
  regressionDelta?: number;
  /**
   * A fixed accept margin (fraction): the bar is then 1 + max(mde, practicalDelta) and no CV is
   * estimated (`calibratedCv` is ignored).
   */
  mde?: number;
  /**
   * Per-run CV from an A/A calibration (noise.ts `calibrateNoise`). The MDE then uses
   * max(calibratedCv, the CV observed in this comparison), so a quiet calibration never hides a noisy
   * day and a lucky quiet comparison never lowers the floor below the calibrated noise.
   */
  calibratedCv?: number;
  /** Power the MDE is defined for. Default 0.8. */
  power?: number;
  /** Largest share of no-change candidates the accept bar may let through. Default 0.01. */
  falseAcceptRate?: number;
  /** Improvement ratios above this are `needs-human`. Default `measure.implausible_speedup`'s. */
  implausibleSpeedup?: number;
  /** Fewest runs per arm that can support a verdict. Default `measure.runs_per_arm`'s. */
  minRuns?: number;
  /**
   * a[i] and b[i] were measured together, in one round of one process (the verifier times both arms
   * call by call): the estimate and interval are those of the rounds' log ratios (paired.ts) and the
   * noise is that of the per-round ratio (`pairedNoiseCv`), so noise a round's two values share
   * cancels. `ciMethod` and `resamples` do not apply. Default false.
   */
  paired?: boolean;
  /**
   * When this comparison is one look of a sequential design (sequential.ts `perLookOptions`): the
   * whole sequence's false-accept target and its number of looks; `falseAcceptRate` is then this
   * look's share. Only what the verdict says of itself changes: the run's target, not the share.
   */
  sequence?: FalseAcceptSequence;
}

export interface FalseAcceptSequence {
  /** The false-accept target of the whole run, every look together. */
  falseAcceptRate: number;
  looks: number;
}

export interface CompareOptions extends ComparePolicy {
  direction: Direction;
  /** Seed of the bootstrap; record it with the verdict so the interval can be reproduced. */
  seed: number;
}

/**
 * The policy with every default filled in. The knobs hillclimb.yml sets (`measure.*`) take their defaults
 * from its schema (config/schema.ts); `regressionDelta` is `practicalDelta` unless given (resolvePolicy).
 */
export type ResolvedPolicy = Required<Omit<ComparePolicy, 'mde' | 'calibratedCv' | 'paired' | 'sequence'>> &
  Pick<ComparePolicy, 'mde' | 'calibratedCv' | 'paired' | 'sequence'>;

export const DEFAULT_POLICY: ResolvedPolicy = {
  confidence: DEFAULT_CONFIDENCE,
  resamples: MEASURE_DEFAULTS.resamples,
  ciMethod: 'percentile',
  practicalDelta: DEFAULT_PRACTICAL_DELTA,
  regressionDelta: DEFAULT_PRACTICAL_DELTA,
  power: DEFAULT_POWER,
  falseAcceptRate: DEFAULT_FALSE_ACCEPT_RATE,
  implausibleSpeedup: MEASURE_DEFAULTS.implausible_speedup,
  minRuns: MEASURE_DEFAULTS.runs_per_arm,
};

export interface ArmSummary {
  /** Runs given for the arm (including unusable ones). */
  n: number;
  /** Median of the runs; null when the arm is unusable. */
  median: number | null;
  /** SD of ln(value) over the runs; null when unusable or fewer than two runs. */
  cv: number | null;
}

/** How a comparison's interval was made: a bootstrap (`CiMethod`), or paired rounds' t interval. */
export type IntervalMethod = CiMethod | 'paired-t';

/** Where the MDE came from. */
export type MdeSource = 'fixed' | 'calibrated' | 'observed';

export interface Comparison {
  verdict: StatsVerdict;
  /** Human-readable lines explaining the verdict, most important first. */
  reasons: string[];
  direction: Direction;
  /** Champion. */
  a: ArmSummary;
  /** Candidate. */
  b: ArmSummary;
  /**
   * Improvement ratio, > 1 means better: median B / median A for 'higher', median A / median B (the
   * speedup) for 'lower'; for paired rounds the geometric mean of the rounds' ratios in that
   * orientation. Null when invalid.
   */
  ratio: number | null;
  /** Confidence interval of `ratio` (`ciMethod` says which). */
  ci: Interval | null;
  /** (ratio − 1) · 100: the improvement in percent (for 'lower', the speedup minus one). */
  deltaPct: number | null;
  deltaCiPct: Interval | null;
  /**
   * Minimum detectable effect (fraction): the true improvement the accept bar lets through with
   * probability `power` at this comparison's n, computed at `mdeCv`. For a fixed policy margin, that
   * margin.
   */
  mde: number | null;
  /**
   * The MDE is at or beyond the plausibility ceiling (1 + mde ≥ implausibleSpeedup): no true gain
   * this comparison could accept exists, since a ratio that large is `needs-human`. Reports say so
   * instead of printing the number. Absent otherwise.
   */
  mdeBeyondCeiling?: true;
  mdeSource: MdeSource | null;
  /** The per-run CV the bar was computed from (null for a fixed margin). */
  noiseCv: number | null;
  /**
   * The per-run CV the MDE was computed at: max(noiseCv, the observed CV's upper confidence bound,
   * noise.ts `noiseUpperBound`). Null for a fixed margin; absent in records written before it existed,
   * whose MDE was computed at `noiseCv`.
   */
  mdeCv?: number | null;
  /** The noise part of the bar: false accepts at no change ≤ falseAcceptRate (null when fixed). */
  acceptMargin: number | null;
  /** 1 + max(practicalDelta, acceptMargin) (or the fixed margin): `improved` needs ci.lo above it. */
  acceptBar: number | null;
  /** The false-accept target the bar holds at no change (at this look, in a sequential run). */
  falseAcceptRate: number;
  /** In a sequential run: the whole run's target and its looks (`falseAcceptRate` is a look's share). */
  sequence?: FalseAcceptSequence;
  /** The power the MDE is defined for. */
  power: number;
  /** The floor of the bar. */
  practicalDelta: number;
  /** 1 − regressionDelta: `regressed` needs ci.hi below it. */
  regressBar: number;
  confidence: number;
  ciMethod: IntervalMethod;
  /** Bootstrap resamples; 0 for a paired t interval. */
  resamples: number;
  seed: number;
}

function checkPolicy(p: ResolvedPolicy): void {
  const fail = (what: string, v: unknown): never => {
    throw new RangeError(`compare policy: ${what}, got ${v}`);
  };
  if (!(p.practicalDelta >= 0 && p.practicalDelta < 1))
    fail('practicalDelta must be in [0, 1)', p.practicalDelta);
  if (!(p.regressionDelta >= 0 && p.regressionDelta < 1))
    fail('regressionDelta must be in [0, 1)', p.regressionDelta);
  if (!(p.implausibleSpeedup > 1)) fail('implausibleSpeedup must be > 1', p.implausibleSpeedup);
  if (!(Number.isInteger(p.minRuns) && p.minRuns >= 2)) fail('minRuns must be an integer ≥ 2', p.minRuns);
  if (p.mde !== undefined && !(p.mde >= 0 && Number.isFinite(p.mde)))
    fail('mde must be a finite number ≥ 0', p.mde);
  if (p.calibratedCv !== undefined && !(p.calibratedCv >= 0 && Number.isFinite(p.calibratedCv))) {
    fail('calibratedCv must be a finite number ≥ 0', p.calibratedCv);
  }
  if (!(p.falseAcceptRate > 0 && p.falseAcceptRate < 0.5))
    fail('falseAcceptRate must be in (0, 0.5)', p.falseAcceptRate);
  if (p.ciMethod !== 'bca' && p.ciMethod !== 'percentile')
    fail("ciMethod must be 'bca' or 'percentile'", p.ciMethod);
}

/**
 * `≤ 1.00% false accepts at no change`, or in a sequential run the run's target first:
 * `≤ 1.00% false accepts at no change over the run's 6 looks (0.17% at each)`.
 */
export function falseAcceptText(
  rate: number,
  sequence: FalseAcceptSequence | undefined,
  percent: (x: number) => string,
): string {
  if (!sequence) return `≤ ${percent(rate)} false accepts at no change`;
  return `≤ ${percent(sequence.falseAcceptRate)} false accepts at no change over the run's ${sequence.looks} looks (${percent(rate)} at each)`;
}

/** Fill in defaults and check ranges. @throws RangeError on an out-of-range knob (a caller bug). */
export function resolvePolicy(policy: ComparePolicy = {}): ResolvedPolicy {
  const defined = Object.fromEntries(Object.entries(policy).filter(([, v]) => v !== undefined));
  const practicalDelta = policy.practicalDelta ?? DEFAULT_POLICY.practicalDelta;
  const resolved: ResolvedPolicy = {
    ...DEFAULT_POLICY,
    regressionDelta: practicalDelta,
    ...defined,
  };
  checkPolicy(resolved);
  return resolved;
}

const ARM_LABEL = { a: 'A (champion)', b: 'B (candidate)' } as const;
const MAX_LISTED_BAD_RUNS = 3;

/** Problems with one arm's values that rule out a verdict: bad values first, then too few runs. */
function armProblems(arm: 'a' | 'b', values: readonly number[], minRuns: number): string[] {
  const label = ARM_LABEL[arm];
  const bad: string[] = [];
  values.forEach((v, i) => {
    if (!Number.isFinite(v)) bad.push(`run ${i} is ${v}`);
    else if (v <= 0) bad.push(`run ${i} is ${v}, but a ratio of medians needs positive values`);
  });
  const problems: string[] = [];
  if (bad.length > 0) {
    const more = bad.length > MAX_LISTED_BAD_RUNS ? ` (and ${bad.length - MAX_LISTED_BAD_RUNS} more)` : '';
    problems.push(`${label}: ${bad.slice(0, MAX_LISTED_BAD_RUNS).join('; ')}${more}`);
  }
  if (values.length < minRuns) {
    problems.push(
      `${label} has ${values.length} run${values.length === 1 ? '' : 's'}; a verdict needs at least ${minRuns} per arm`,
    );
  }
  return problems;
}

/** Every reason the two arms cannot support a verdict; empty when they can. */
export function inputProblems(a: readonly number[], b: readonly number[], minRuns: number): string[] {
  return [...armProblems('a', a, minRuns), ...armProblems('b', b, minRuns)];
}

/** True when every value is finite and positive (the arm can be summarised even if it is short). */
function usable(values: readonly number[]): boolean {
  return values.length > 0 && values.every((v) => Number.isFinite(v) && v > 0);
}

function summarize(values: readonly number[]): ArmSummary {
  if (!usable(values)) return { n: values.length, median: null, cv: null };
  return { n: values.length, median: median(values), cv: armCv(values) };
}

const pct = (fraction: number): string => `${(fraction * 100).toFixed(2)}%`;
const num = (x: number): string => x.toFixed(4);

function ratioLabel(direction: Direction, paired: boolean): string {
  if (paired) {
    return direction === 'lower'
      ? "speedup (geometric mean of the rounds' A / B)"
      : "gain (geometric mean of the rounds' B / A)";
  }
  return direction === 'lower' ? 'speedup (median A / median B)' : 'gain (median B / median A)';
}

/**
 * Compare champion runs `a` with candidate runs `b` (one value per run, e.g. each run's median time)
 * and return the verdict with its evidence. See the module comment for the rule.
 * @throws RangeError on an out-of-range policy knob (a caller bug); bad measurements give `invalid`.
 */
export function compareArms(a: readonly number[], b: readonly number[], opts: CompareOptions): Comparison {
  const policy = resolvePolicy(opts);
  const { direction, seed } = opts;
  if (direction !== 'higher' && direction !== 'lower') {
    throw new RangeError(`direction must be 'higher' or 'lower', got ${String(direction)}`);
  }
  const regressBar = 1 - policy.regressionDelta;
  const empty: Comparison = {
    verdict: 'invalid',
    reasons: [],
    direction,
    a: summarize(a),
    b: summarize(b),
    ratio: null,
    ci: null,
    deltaPct: null,
    deltaCiPct: null,
    mde: null,
    mdeSource: null,
    noiseCv: null,
    mdeCv: null,
    acceptMargin: null,
    acceptBar: null,
    falseAcceptRate: policy.falseAcceptRate,
    ...(policy.sequence ? { sequence: { ...policy.sequence } } : {}),
    power: policy.power,
    practicalDelta: policy.practicalDelta,
    regressBar,
    confidence: policy.confidence,
    ciMethod: policy.ciMethod,
    resamples: policy.resamples,
    seed,
  };

  const problems = inputProblems(a, b, policy.minRuns);
  const paired = policy.paired === true;
  if (paired && a.length !== b.length) {
    problems.push(`paired arms need one value each per round, got ${a.length} and ${b.length}`);
  }
  if (problems.length > 0) return { ...empty, reasons: problems };

  const [numerator, denominator] = direction === 'higher' ? [b, a] : [a, b];
  const interval = paired
    ? pairedLogRatio(numerator, denominator, policy.confidence)
    : intervalOfMedians(numerator, denominator, policy, seed);
  const ratio = interval.estimate;
  const ci = interval.ci;
  if (!Number.isFinite(ratio) || !Number.isFinite(ci.lo) || !Number.isFinite(ci.hi)) {
    return {
      ...empty,
      reasons: [`the ratio is ${ratio} (values span too many orders of magnitude)`],
    };
  }
  const ciMethod: IntervalMethod = paired ? 'paired-t' : policy.ciMethod;

  // The noise floor. Tukey's fences always keep the middle half of an arm, so the robust estimate
  // exists whenever an arm has two runs; the plain one is only a guard.
  const robust: NoiseEstimate = paired ? pairedNoise(a, b) : robustNoise([a, b]);
  const observed = Number.isNaN(robust.cv) ? pooledLogNoise([a, b]) : robust;
  const observedCv = observed.cv;
  let mde: number;
  let mdeSource: MdeSource;
  let noiseCv: number | null;
  let mdeCv: number | null;
  let margin: number | null;
  let acceptBar: number;
  const noiseNotes: string[] = [];
  if (policy.mde !== undefined) {
    mde = policy.mde;
    mdeSource = 'fixed';
    noiseCv = null;
    mdeCv = null;
    margin = null;
    acceptBar = 1 + Math.max(mde, policy.practicalDelta);
  } else {
    const calibrated = policy.calibratedCv;
    mdeSource = calibrated !== undefined && calibrated >= observedCv ? 'calibrated' : 'observed';
    noiseCv = mdeSource === 'calibrated' ? calibrated! : observedCv;
    const opts = {
      confidence: policy.confidence,
      power: policy.power,
      falseAcceptRate: policy.falseAcceptRate,
      practicalDelta: policy.practicalDelta,
      paired,
    };
    margin = acceptMargin(noiseCv, a.length, b.length, opts);
    acceptBar = 1 + Math.max(policy.practicalDelta, margin);
    // The bar takes the estimate (its false-accept rate is measured that way); the MDE takes the
    // estimate's upper bound, so that a true gain of the printed size has the power it claims.
    mdeCv = Math.max(noiseCv, noiseUpperBound(observedCv, observed.degreesOfFreedom));
    mde = minimumDetectableEffect(mdeCv, a.length, b.length, opts);
    if (calibrated !== undefined && observedCv > 2 * calibrated) {
      noiseNotes.push(
        `noise in this comparison (CV ${pct(observedCv)}) is more than twice the A/A calibration (CV ${pct(calibrated)}); the bar uses this comparison's noise`,
      );
    }
  }

  const beyondCeiling = 1 + mde >= policy.implausibleSpeedup;
  const detectable = beyondCeiling
    ? `detectable with ${Math.round(policy.power * 100)}% power: nothing below the plausibility ceiling ${policy.implausibleSpeedup}× (MDE ${pct(mde)})`
    : `detectable with ${Math.round(policy.power * 100)}% power: ${pct(mde)}`;
  const confLabel = `${Math.round(policy.confidence * 1000) / 10}% ${INTERVAL_LABEL[ciMethod]}`;
  const pairing = paired ? ', paired by round' : '';
  const estimateLine = `${ratioLabel(direction, paired)} ${num(ratio)} [${num(ci.lo)}, ${num(ci.hi)}] (${confLabel}${pairing}, n = ${a.length}/${b.length})`;
  const mdeCvLabel =
    mdeSource === 'calibrated'
      ? `the larger of that CV and the observed CV's ${Math.round(MDE_NOISE_CONFIDENCE * 100)}% upper bound`
      : `its ${Math.round(MDE_NOISE_CONFIDENCE * 100)}% upper bound`;
  const barLine =
    mdeSource === 'fixed'
      ? `accept bar ${num(acceptBar)} = 1 + max(margin ${pct(mde)} fixed by policy, practical δ ${pct(policy.practicalDelta)}); regression bar ${num(regressBar)}`
      : `accept bar ${num(acceptBar)} = 1 + max(practical δ ${pct(policy.practicalDelta)}, noise margin ${pct(margin ?? 0)} for ${falseAcceptText(policy.falseAcceptRate, policy.sequence, pct)}); ${detectable} (${mdeSource}${paired ? ' paired' : ''} CV ${pct(noiseCv ?? 0)}, n = ${a.length}/${b.length}; MDE at CV ${pct(mdeCv ?? 0)}, ${mdeCvLabel}); regression bar ${num(regressBar)}`;

  let verdict: StatsVerdict;
  let decision: string;
  if (ratio > policy.implausibleSpeedup) {
    verdict = 'needs-human';
    decision = `${num(ratio)}× exceeds the plausibility ceiling ${policy.implausibleSpeedup}×: a human must confirm it before it counts`;
  } else if (ci.lo > acceptBar) {
    verdict = 'improved';
    decision = `lower CI bound ${num(ci.lo)} > accept bar ${num(acceptBar)}`;
  } else if (ci.hi < regressBar) {
    verdict = 'regressed';
    decision = `upper CI bound ${num(ci.hi)} < regression bar ${num(regressBar)}`;
  } else {
    verdict = 'no-change';
    decision = `CI [${num(ci.lo)}, ${num(ci.hi)}] is neither wholly above the accept bar ${num(acceptBar)} nor wholly below the regression bar ${num(regressBar)}: no significant change`;
  }

  return {
    ...empty,
    verdict,
    reasons: [decision, estimateLine, barLine, ...noiseNotes],
    ratio,
    ci: { ...ci },
    deltaPct: (ratio - 1) * 100,
    deltaCiPct: { lo: (ci.lo - 1) * 100, hi: (ci.hi - 1) * 100 },
    mde,
    mdeSource,
    noiseCv,
    mdeCv,
    ...(beyondCeiling ? { mdeBeyondCeiling: true as const } : {}),
    acceptMargin: margin,
    acceptBar,
    ciMethod,
    resamples: paired ? 0 : policy.resamples,
  };
}

/** How each interval is named in a verdict's reasons. */
export const INTERVAL_LABEL: Readonly<Record<IntervalMethod, string>> = {
  percentile: 'percentile CI',
  bca: 'BCa CI',
  'paired-t': "t interval of the rounds' log ratios",
};

/** The ratio of medians of independent runs and its bootstrap interval (the policy's method). */
function intervalOfMedians(
  num: readonly number[],
  den: readonly number[],
  policy: ResolvedPolicy,
  seed: number,
): { estimate: number; ci: Interval } {
  const boot = bootstrapRatioOfMedians(num, den, {
    confidence: policy.confidence,
    resamples: policy.resamples,
    seed,
  });
  return { estimate: boot.estimate, ci: policy.ciMethod === 'bca' ? boot.bca : boot.percentile };
}
