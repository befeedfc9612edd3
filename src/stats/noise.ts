/**
 * Run-to-run noise, the accept bar and the minimum detectable effect (MDE).
 *
 * The verdict accepts when the lower bound `lo` of the interval of the improvement ratio (95%,
 * percentile bootstrap of the ratio of medians) clears the accept bar:
 *
 *   accept bar = 1 + max(δ, noise margin)
 *   noise margin = exp((μ + z_{1−f} · σ) · s) − 1                  (0 when negative)
 *   MDE = accept bar · exp((−μ + z_{power} · σ) · s) − 1
 *   s = √(π/2) · F · CV · √(1/n_A + 1/n_B)
 *
 * - s is the standard error of ln(ratio of medians) as normal theory gives it: CV is the per-run
 *   coefficient of variation (the SD of ln(value) pooled over both arms after dropping each arm's
 *   outliers, `robustNoiseCv`, or the A/A calibration's if larger), √(1/n_A + 1/n_B) turns per-run
 *   noise into the noise of the comparison, √(π/2) is a median's standard error relative to a mean's,
 *   and F = 1.1 (BOOTSTRAP_WIDTH_FACTOR) is how much wider the small-sample percentile bootstrap
 *   interval is than normal theory.
 * - μ and σ describe where the interval's lower bound falls: at no change, ln(lo) / s is close to
 *   normal with mean μ = −1.85 and SD σ = 0.95 (LOWER_BOUND_MEAN, LOWER_BOUND_SD), measured by the
 *   simulation for 5–15 runs per arm (`npm run bench:stats` prints the quantiles it is fitted to).
 *   A true change shifts it by ln(true ratio) / s, so both error rates follow from the same two
 *   numbers.
 * - The noise margin is the false-accept control: at no change, lo clears 1 + margin with probability
 *   f (the false-accept target, 1% for one comparison; the sequential rule divides it by its looks).
 * - δ (practicalDelta, 2% by default: `measure.practical_delta`) is a floor: a smaller gain is not
 *   worth a PR however quiet the machine. Where it is above the noise margin, false accepts fall
 *   below f.
 * - The MDE is what the bar means for detection: the true improvement accepted with probability
 *   `power` (80%) at this n and CV. The verdict reports it at an upper confidence bound of the CV it
 *   estimated (`noiseUpperBound`), not at the estimate: at 5 runs per arm the estimate is low more
 *   often than not, and an MDE computed from it had 52–60% power at 5 runs per arm and 46–53% at 5
 *   paired rounds, not 80% (`npm run bench:stats`, "Power at the printed MDE").
 *
 * At 5 runs per arm (s = 0.872 · CV): margin 0.31% at CV 1% and 1.58% at CV 5%, so the default bar is
 * 1.02 up to CV ≈ 6.3%; the MDE is 4.38% at CV 1%, 6.82% at CV 2% and 14.5% at CV 5% (3.36%, 5.78%
 * and 14.0% at δ = 1%).
 *
 * Paired rounds (`paired`: both arms timed call by call in one verifier session) use no fitted
 * constants: the interval is Student's t on the rounds' log ratios d_i (paired.ts), whose lower bound
 * at no change is exactly −t_{c} · SE with SE = SD(d) / √n = √2 · CV / √n, so
 *
 *   noise margin = exp((t_{1−f} − t_{c}) · SE) − 1       (t with n − 1 degrees of freedom, c = (1 + confidence) / 2)
 *   MDE = accept bar · exp((t_{c} + z_{power} · √(1 + t_{c}² / (2(n − 1)))) · SE) − 1
 *
 * and at no change lo > 1 + margin exactly when the one-sided (1 − f) bound is above 1: f of the time
 * for normal log ratios, less for heavier tails (`npm run bench:stats`). The MDE's shift is the
 * noncentral t's for that power by its normal approximation (the SD is estimated as well as the mean),
 * which overshoots the exact one a little: 83.6% power at 5 rounds at a known CV, 81.0% at 15
 * (tests/stats/noise.unit.test.ts computes it with `noncentralTUpperTail`).
 */
import { MEASURE_DEFAULTS } from '../config/index.js';
import { chiSquareQuantile } from './chi-square.js';
import { logCv, sampleVariance, withoutOutliers } from './describe.js';
import { normalQuantile } from './normal.js';
import { studentTQuantile } from './student.js';

/** Standard error of a median relative to a mean for Gaussian noise, √(π/2). */
export const MEDIAN_SE_FACTOR = Math.sqrt(Math.PI / 2);

/** Width of the small-sample percentile bootstrap interval of a ratio of medians relative to normal theory. */
export const BOOTSTRAP_WIDTH_FACTOR = 1.1;

/** Mean of ln(lower bound of the 95% interval) / s at no change (simulation, 5–15 runs per arm). */
export const LOWER_BOUND_MEAN = -1.85;
/** SD of ln(lower bound of the 95% interval) / s at no change (simulation, 5–15 runs per arm). */
export const LOWER_BOUND_SD = 0.95;

/** The confidence level μ and σ were measured for: `measure.confidence`'s default. */
export const DEFAULT_CONFIDENCE = MEASURE_DEFAULTS.confidence;
export const DEFAULT_POWER = 0.8;
/** The false-accept target at no change, for one comparison. */
export const DEFAULT_FALSE_ACCEPT_RATE = 0.01;
/** The smallest improvement worth accepting, whatever the noise: `measure.practical_delta`'s default. */
export const DEFAULT_PRACTICAL_DELTA = MEASURE_DEFAULTS.practical_delta;

export interface MdeOptions {
  /** Two-sided confidence level of the interval the bar is for (paired rounds). Default 0.95. */
  confidence?: number;
  /** Probability of accepting a true change of one MDE. Default 0.8. */
  power?: number;
  /** Largest share of no-change candidates the bar may let through. Default 0.01. */
  falseAcceptRate?: number;
  /** The floor of the accept bar (0.02 = 2%). Default DEFAULT_PRACTICAL_DELTA. */
  practicalDelta?: number;
  /**
   * The comparison is of n paired rounds, judged by the t interval of their log ratios (paired.ts):
   * the margin and the MDE are the t interval's, with n − 1 degrees of freedom (see the module comment).
   */
  paired?: boolean;
}

function checked(opts: MdeOptions): Required<Omit<MdeOptions, 'paired'>> {
  const confidence = opts.confidence ?? DEFAULT_CONFIDENCE;
  if (!(confidence > 0 && confidence < 1))
    throw new RangeError(`confidence must be in (0, 1), got ${confidence}`);
  const power = opts.power ?? DEFAULT_POWER;
  const falseAcceptRate = opts.falseAcceptRate ?? DEFAULT_FALSE_ACCEPT_RATE;
  const practicalDelta = opts.practicalDelta ?? DEFAULT_PRACTICAL_DELTA;
  if (!(power > 0 && power < 1)) throw new RangeError(`power must be in (0, 1), got ${power}`);
  if (!(falseAcceptRate > 0 && falseAcceptRate < 0.5))
    throw new RangeError(`falseAcceptRate must be in (0, 0.5), got ${falseAcceptRate}`);
  if (!(practicalDelta >= 0 && practicalDelta < 1))
    throw new RangeError(`practicalDelta must be in [0, 1), got ${practicalDelta}`);
  return { confidence, power, falseAcceptRate, practicalDelta };
}

/** SE of the mean log ratio of `rounds` paired rounds at per-run CV `cv`: √2 · cv / √rounds. */
export function pairedLogRatioSe(cv: number, rounds: number): number {
  if (!(cv >= 0 && Number.isFinite(cv))) throw new RangeError(`cv must be a finite number ≥ 0, got ${cv}`);
  if (!(Number.isInteger(rounds) && rounds >= 2))
    throw new RangeError(`paired rounds must be an integer ≥ 2, got ${rounds}`);
  return (Math.SQRT2 * cv) / Math.sqrt(rounds);
}

/** Student's t quantile p with the paired rounds' n − 1 degrees of freedom. */
function pairedT(p: number, rounds: number): number {
  return studentTQuantile(p, rounds - 1);
}

/** s: the standard error of ln(ratio of medians) for per-run noise `cv` and `nA`, `nB` runs. */
export function logRatioScale(cv: number, nA: number, nB: number): number {
  if (!(cv >= 0 && Number.isFinite(cv))) throw new RangeError(`cv must be a finite number ≥ 0, got ${cv}`);
  if (!(Number.isInteger(nA) && Number.isInteger(nB) && nA >= 1 && nB >= 1 && nA + nB >= 3)) {
    throw new RangeError(`run counts must be integers ≥ 1 with at least 3 runs in all, got ${nA} and ${nB}`);
  }
  return MEDIAN_SE_FACTOR * BOOTSTRAP_WIDTH_FACTOR * cv * Math.sqrt(1 / nA + 1 / nB);
}

/** The unpaired MDE's exponent over s above the bar: −μ + z_{power} · σ. */
export function mdeMultiplier(opts: MdeOptions = {}): number {
  return -LOWER_BOUND_MEAN + normalQuantile(checked(opts).power) * LOWER_BOUND_SD;
}

/**
 * The noise part of the accept bar (a fraction): how far above 1 the interval's lower bound must be so
 * that no more than `falseAcceptRate` of no-change candidates are accepted.
 */
export function acceptMargin(cv: number, nA: number, nB: number, opts: MdeOptions = {}): number {
  const { falseAcceptRate, confidence } = checked(opts);
  if (opts.paired) {
    const n = Math.min(nA, nB);
    const k = pairedT(1 - falseAcceptRate, n) - pairedT((1 + confidence) / 2, n);
    return Math.max(0, Math.expm1(k * pairedLogRatioSe(cv, n)));
  }
  const k = LOWER_BOUND_MEAN + normalQuantile(1 - falseAcceptRate) * LOWER_BOUND_SD;
  return Math.max(0, Math.expm1(k * logRatioScale(cv, nA, nB)));
}

/** The accept bar: 1 + max(practical δ, noise margin). */
export function acceptBarFor(cv: number, nA: number, nB: number, opts: MdeOptions = {}): number {
  return 1 + Math.max(checked(opts).practicalDelta, acceptMargin(cv, nA, nB, opts));
}

/**
 * Minimum detectable effect (a fraction: 0.04 = 4%): the true improvement the verdict accepts with
 * probability `power` at per-run noise `cv` with `nA` and `nB` runs per arm. See the module comment.
 */
export function minimumDetectableEffect(cv: number, nA: number, nB: number, opts: MdeOptions = {}): number {
  const bar = acceptBarFor(cv, nA, nB, opts);
  if (opts.paired) {
    const { confidence, power } = checked(opts);
    const n = Math.min(nA, nB);
    // The noncentral t's shift for this power, by its normal approximation: the SD is estimated too,
    // which widens the spread of the bound by √(1 + t²/(2ν)).
    const t = pairedT((1 + confidence) / 2, n);
    const shift = t + normalQuantile(power) * Math.sqrt(1 + (t * t) / (2 * (n - 1)));
    return bar * Math.exp(shift * pairedLogRatioSe(cv, n)) - 1;
  }
  return bar * Math.exp(mdeMultiplier(opts) * logRatioScale(cv, nA, nB)) - 1;
}

/**
 * Expected distance, in log units, from the estimate down to the interval's lower bound: −μ · s, or
 * for paired rounds the t interval's half-width t_{c} · SE.
 */
export function expectedLogHalfWidth(cv: number, nA: number, nB: number, opts: MdeOptions = {}): number {
  if (opts.paired) {
    const n = Math.min(nA, nB);
    return pairedT((1 + checked(opts).confidence) / 2, n) * pairedLogRatioSe(cv, n);
  }
  return -LOWER_BOUND_MEAN * logRatioScale(cv, nA, nB);
}

/** A CV estimated from runs, with the degrees of freedom its variance has. */
export interface NoiseEstimate {
  /** SD of ln(value) (NaN when nothing could be estimated). */
  cv: number;
  /** Runs (or rounds) used minus the means estimated; 0 when nothing could be estimated. */
  degreesOfFreedom: number;
}

/**
 * Pooled within-group CV on the log scale: √(Σ_g (n_g − 1)·s²_g / Σ_g (n_g − 1)) with s_g the SD of
 * ln(value) in group g, and its degrees of freedom Σ_g (n_g − 1). Pooling within groups keeps a shift
 * between groups (two builds, two jobs) out of the run-to-run noise. Groups with fewer than two values
 * contribute nothing; the CV is NaN when no group has two values.
 */
export function pooledLogNoise(groups: readonly (readonly number[])[]): NoiseEstimate {
  let weighted = 0;
  let dof = 0;
  for (const group of groups) {
    if (group.length < 2) continue;
    weighted += (group.length - 1) * sampleVariance(group.map(Math.log));
    dof += group.length - 1;
  }
  return { cv: dof === 0 ? Number.NaN : Math.sqrt(weighted / dof), degreesOfFreedom: dof };
}

/** `pooledLogNoise`'s CV alone. */
export function pooledLogCv(groups: readonly (readonly number[])[]): number {
  return pooledLogNoise(groups).cv;
}

/**
 * The run-to-run noise that sets the noise floor: `pooledLogNoise` after dropping each group's outliers
 * (Tukey's fences on ln(value), `withoutOutliers`). The verdict compares medians, which a disturbed
 * run barely moves; an SD that such a run inflates tenfold would raise the bar tenfold and hide real
 * improvements. The CV is NaN when no group keeps two values.
 */
export function robustNoise(groups: readonly (readonly number[])[]): NoiseEstimate {
  return pooledLogNoise(groups.map(withoutOutliers));
}

/** `robustNoise`'s CV alone. */
export function robustNoiseCv(groups: readonly (readonly number[])[]): number {
  return robustNoise(groups).cv;
}

/**
 * The noise of a paired comparison (A[i] and B[i] measured in one round of one process), as the
 * per-run CV the formulas above take: SD(ln(B[i] / A[i])) / √2 over every round, with the rounds minus
 * one as its degrees of freedom. Noise both arms share in a round (load, clock, cache state) cancels in
 * the ratio; for independent noise it equals the per-arm CV. No round is dropped: the t interval the
 * paired verdict prints takes the same SD, and its coverage holds only with every round in it (dropping
 * Tukey's outliers took 95% to 84–91%, `npm run bench:stats`). The CV is NaN for fewer than two pairs.
 */
export function pairedNoise(a: readonly number[], b: readonly number[]): NoiseEstimate {
  if (a.length !== b.length)
    throw new RangeError(`paired arms need equal lengths, got ${a.length} and ${b.length}`);
  const ratios = a.map((x, i) => b[i]! / x);
  return ratios.length < 2
    ? { cv: Number.NaN, degreesOfFreedom: 0 }
    : { cv: logCv(ratios) / Math.SQRT2, degreesOfFreedom: ratios.length - 1 };
}

/** `pairedNoise`'s CV alone. */
export function pairedNoiseCv(a: readonly number[], b: readonly number[]): number {
  return pairedNoise(a, b).cv;
}

/**
 * Confidence of the CV's upper bound the reported MDE is computed at. Checked end to end by the
 * simulation (`npm run bench:stats`, "Power at the printed MDE"): at 0.9 a true gain of the printed
 * MDE is accepted 79–84% of the time at 5 runs per arm or 5 paired rounds and 96–98% with sequential
 * stopping (log-normal noise, CV 1–5%); by the normal-theory model of the bound, 0.8 would give about
 * 73% at 5 paired rounds.
 */
export const MDE_NOISE_CONFIDENCE = 0.9;

/**
 * One-sided upper confidence bound of a CV estimated with `degreesOfFreedom`:
 * cv · √(dof / χ²_{1−confidence}(dof)), from (dof · ŝ² / σ²) ~ χ²(dof). Few runs give a CV that is
 * low more often than high (the SD of five runs is under the truth about 60% of the time, and Tukey's
 * fences trim a little more), so an MDE at the estimate overstates what the comparison can detect;
 * at the bound it does not. Infinity when there are no degrees of freedom.
 */
export function noiseUpperBound(
  cv: number,
  degreesOfFreedom: number,
  confidence = MDE_NOISE_CONFIDENCE,
): number {
  if (!(cv >= 0 && Number.isFinite(cv))) throw new RangeError(`cv must be a finite number ≥ 0, got ${cv}`);
  if (!(confidence > 0 && confidence < 1))
    throw new RangeError(`confidence must be in (0, 1), got ${confidence}`);
  if (!(degreesOfFreedom > 0)) return cv === 0 ? 0 : Number.POSITIVE_INFINITY;
  return cv * Math.sqrt(degreesOfFreedom / chiSquareQuantile(1 - confidence, degreesOfFreedom));
}

/** Run-to-run noise measured by an A/A study: identical code run several times in fresh processes. */
export interface NoiseCalibration {
  /** Pooled per-run CV (SD of ln(value)) after dropping each group's outliers (`robustNoiseCv`). */
  cv: number;
  /** Runs used, over all groups, after dropping outliers. */
  runs: number;
  /** Degrees of freedom of the CV estimate: runs minus groups. */
  degreesOfFreedom: number;
  /** Whether the study had at least MIN_CALIBRATION_DOF degrees of freedom (5 runs of one group). */
  sufficient: boolean;
}

/** Below this many degrees of freedom a CV estimate is rougher than ±35% (relative SE ≈ 1/√(2·dof)). */
export const MIN_CALIBRATION_DOF = 4;

/**
 * Estimate run-to-run noise from A/A runs. `groups` holds per-run values of identical code: one group
 * (the champion's runs) or several (e.g. both arms of an A/A comparison, or one group per job).
 * @throws RangeError when a value is not finite and positive, or no group has two values.
 */
export function calibrateNoise(groups: readonly (readonly number[])[]): NoiseCalibration {
  for (const [g, group] of groups.entries()) {
    for (const [i, v] of group.entries()) {
      if (!(Number.isFinite(v) && v > 0)) {
        throw new RangeError(
          `A/A group ${g} run ${i} is ${v}; noise calibration needs finite positive values`,
        );
      }
    }
  }
  const kept = groups.map(withoutOutliers);
  const cv = pooledLogCv(kept);
  if (Number.isNaN(cv)) throw new RangeError('A/A calibration needs a group with at least two runs');
  const usable = kept.filter((g) => g.length >= 2);
  const runs = usable.reduce((s, g) => s + g.length, 0);
  const degreesOfFreedom = runs - usable.length;
  return { cv, runs, degreesOfFreedom, sufficient: degreesOfFreedom >= MIN_CALIBRATION_DOF };
}

/** Per-arm CV of one comparison arm; null for fewer than two runs. */
export function armCv(values: readonly number[]): number | null {
  return values.length < 2 ? null : logCv(values);
}
