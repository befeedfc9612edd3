/**
 * Run-to-run noise and the minimum detectable effect (MDE).
 *
 *   MDE = exp((t_{1−α/2, ν} + t_{power, ν}) · √(π/2) · F · CV · √(1/n_A + 1/n_B)) − 1,   ν = n_A + n_B − 2
 *
 * - CV: per-run coefficient of variation, the SD of ln(value) pooled over both arms after dropping
 *   each arm's outliers (`robustNoiseCv`), or the A/A calibration's if that is larger.
 * - √(1/n_A + 1/n_B) (= √(2/n) for equal arms) turns per-run noise into the noise of the comparison.
 * - √(π/2) ≈ 1.2533: a median's standard error relative to a mean's under Gaussian noise
 *   (asymptotic efficiency 2/π). The verdict compares medians, not means.
 * - Student t instead of normal quantiles: the interval's width is itself estimated from the
 *   comparison's n_A + n_B runs (ν = 8 at 5 runs per arm raises the constant by 14%).
 * - exp(…) − 1: CV is measured in log units and the verdict compares ratios, so the detectable
 *   log-ratio is turned into a relative change (≈ the bracket itself for small values).
 * - F = 1.1 (BOOTSTRAP_WIDTH_FACTOR): at 5–15 runs per arm the percentile bootstrap interval of a
 *   ratio of medians covers 96–97% instead of the nominal 95% (the bootstrap distribution of a
 *   small-sample median is discrete), i.e. it is about 1.1× as wide as normal theory says.
 *
 * With α = 0.05, power 0.8 and 5 runs per arm the constant is (2.306 + 0.889) · 1.2533 · 1.1 ≈ 4.40,
 * so CV 1% gives an MDE of 2.8%; at 15 runs per arm it is 4.00 and 1.5%. The textbook
 * (z_{1−α/2} + z_power) · CV · √(2/n) of evaluation.md §5 is the large-sample limit for means.
 *
 * Meaning: the verdict accepts only when the interval's lower bound clears 1 + max(MDE, δ). At a true
 * improvement of 2×MDE that happens with probability ≥ power (the simulation measures 82–88% for
 * n = 5…15 and CV 1–5%; with the textbook formula 61–65%); at no change essentially never (≤ 0.1%).
 * tests/evidence/stats/simulation.test.ts and `npm run bench:stats` check both claims.
 */
import { logCv, sampleVariance, withoutOutliers } from './describe.js';
import { studentTQuantile } from './student.js';

/** Standard error of a median relative to a mean for Gaussian noise, √(π/2). */
export const MEDIAN_SE_FACTOR = Math.sqrt(Math.PI / 2);

/** Width of the small-sample percentile bootstrap interval of a ratio of medians relative to normal theory. */
export const BOOTSTRAP_WIDTH_FACTOR = 1.1;

export const DEFAULT_CONFIDENCE = 0.95;
export const DEFAULT_POWER = 0.8;

export interface MdeOptions {
  /** Two-sided confidence level 1 − α. Default 0.95. */
  confidence?: number;
  /** Probability of accepting a true change of 2×MDE (of detecting one MDE against no change). Default 0.8. */
  power?: number;
}

/** The MDE in units of CV · √(1/n_A + 1/n_B) for ν = n_A + n_B − 2 degrees of freedom. */
export function mdeMultiplier(dof: number, opts: MdeOptions = {}): number {
  const confidence = opts.confidence ?? DEFAULT_CONFIDENCE;
  const power = opts.power ?? DEFAULT_POWER;
  if (!(confidence > 0 && confidence < 1))
    throw new RangeError(`confidence must be in (0, 1), got ${confidence}`);
  if (!(power > 0 && power < 1)) throw new RangeError(`power must be in (0, 1), got ${power}`);
  if (!(dof >= 1)) throw new RangeError(`degrees of freedom must be ≥ 1, got ${dof}`);
  const t = studentTQuantile(1 - (1 - confidence) / 2, dof) + studentTQuantile(power, dof);
  return t * MEDIAN_SE_FACTOR * BOOTSTRAP_WIDTH_FACTOR;
}

/**
 * Minimum detectable relative effect (a fraction: 0.02 = 2%) for per-run noise `cv` with `nA` and
 * `nB` runs per arm. See the module comment for the formula.
 */
export function minimumDetectableEffect(cv: number, nA: number, nB: number, opts: MdeOptions = {}): number {
  if (!(cv >= 0 && Number.isFinite(cv))) throw new RangeError(`cv must be a finite number ≥ 0, got ${cv}`);
  if (!(Number.isInteger(nA) && Number.isInteger(nB) && nA >= 1 && nB >= 1 && nA + nB >= 3)) {
    throw new RangeError(`run counts must be integers ≥ 1 with at least 3 runs in all, got ${nA} and ${nB}`);
  }
  // The noise is in log units (CV = SD of ln(value)); exp turns the log-scale effect into a ratio.
  return Math.expm1(mdeMultiplier(nA + nB - 2, opts) * cv * Math.sqrt(1 / nA + 1 / nB));
}

/**
 * Expected half-width, in log units, of the interval of the ratio of medians with `nA` and `nB` runs
 * per arm at per-run noise `cv`: t_{1−α/2, ν} · √(π/2) · F · CV · √(1/nA + 1/nB), the first term of the MDE.
 */
export function expectedLogHalfWidth(
  cv: number,
  nA: number,
  nB: number,
  confidence: number = DEFAULT_CONFIDENCE,
): number {
  const t = studentTQuantile(1 - (1 - confidence) / 2, nA + nB - 2);
  return t * MEDIAN_SE_FACTOR * BOOTSTRAP_WIDTH_FACTOR * cv * Math.sqrt(1 / nA + 1 / nB);
}

/**
 * Pooled within-group CV on the log scale: √(Σ_g (n_g − 1)·s²_g / Σ_g (n_g − 1)) with s_g the SD of
 * ln(value) in group g. Pooling within groups keeps a shift between groups (two builds, two jobs)
 * out of the run-to-run noise. Groups with fewer than two values contribute nothing; NaN when no
 * group has two values.
 */
export function pooledLogCv(groups: readonly (readonly number[])[]): number {
  let weighted = 0;
  let dof = 0;
  for (const group of groups) {
    if (group.length < 2) continue;
    weighted += (group.length - 1) * sampleVariance(group.map(Math.log));
    dof += group.length - 1;
  }
  return dof === 0 ? Number.NaN : Math.sqrt(weighted / dof);
}

/**
 * The run-to-run noise that sets the noise floor: `pooledLogCv` after dropping each group's outliers
 * (Tukey's fences on ln(value), `withoutOutliers`). The verdict compares medians, which a disturbed
 * run barely moves; an SD that such a run inflates tenfold would raise the bar tenfold and hide real
 * improvements. NaN when no group keeps two values.
 */
export function robustNoiseCv(groups: readonly (readonly number[])[]): number {
  return pooledLogCv(groups.map(withoutOutliers));
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
