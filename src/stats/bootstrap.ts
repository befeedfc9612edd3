/**
 * Bootstrap of the ratio of medians, median(num) / median(den), with percentile and BCa confidence
 * intervals (Efron & Tibshirani 1993, ch. 13–14), for independent runs: each resample draws both arms
 * independently with replacement, keeping each arm's size. Paired rounds take the t interval of their
 * log ratios instead (paired.ts). Deterministic for a given seed.
 */
import { MEASURE_DEFAULTS } from '../config/index.js';
import { medianOfSorted, quantileOfSorted, sortedCopy } from './describe.js';
import { normalCdf, normalQuantile } from './normal.js';
import { createRng, type Rng } from './random.js';

/** The harness never bootstraps with fewer resamples than this. */
export const MIN_RESAMPLES = 2000;

export type CiMethod = 'bca' | 'percentile';

/** A closed interval [lo, hi]. */
export interface Interval {
  lo: number;
  hi: number;
}

export interface BootstrapOptions {
  /** Two-sided confidence level in (0, 1). Default `measure.confidence`'s (0.95). */
  confidence?: number;
  /** Bootstrap resamples; at least MIN_RESAMPLES. Default `measure.resamples`'s (2000). */
  resamples?: number;
  /** PRNG seed; the same inputs and seed give the same intervals. */
  seed: number;
}

export interface RatioBootstrap {
  /** median(num) / median(den) of the observed data. */
  estimate: number;
  /** Percentile interval: the α/2 and 1 − α/2 quantiles of the bootstrap ratios. */
  percentile: Interval;
  /**
   * Bias-corrected and accelerated interval. Equals `percentile` when the bootstrap distribution is
   * degenerate (all resamples equal) or the BCa adjustment is undefined; `bcaFallback` says so.
   */
  bca: Interval;
  bcaFallback: boolean;
  /** BCa bias correction z0 = Φ⁻¹(share of bootstrap ratios below the estimate, ties counted half). */
  biasZ0: number;
  /** BCa acceleration from the two-sample jackknife. */
  acceleration: number;
  confidence: number;
  resamples: number;
  seed: number;
}

/**
 * Median of one bootstrap resample of `sorted`, in O(n) without sorting: draw n indices, count how
 * often each is drawn, and walk the counts to the middle rank(s). Because `sorted` is ascending, the
 * resample's order statistics are `sorted` at the order statistics of the drawn indices.
 */
function resampledMedian(sorted: Float64Array, rng: Rng, counts: Int32Array): number {
  const n = sorted.length;
  counts.fill(0);
  for (let i = 0; i < n; i++) counts[rng.int(n)]! += 1;
  const lowRank = (n - 1) >> 1;
  const highRank = n >> 1;
  let seen = 0;
  let low = Number.NaN;
  for (let j = 0; j < n; j++) {
    seen += counts[j]!;
    if (Number.isNaN(low) && seen > lowRank) low = sorted[j]!;
    if (seen > highRank) return (low + sorted[j]!) / 2;
  }
  return low; // unreachable: the counts sum to n > highRank
}

/** Median of `sorted` with element `skip` left out (jackknife), without copying. */
function medianWithout(sorted: Float64Array, skip: number): number {
  const m = sorted.length - 1;
  const at = (rank: number): number => sorted[rank < skip ? rank : rank + 1]!;
  const mid = m >> 1;
  return m % 2 === 1 ? at(mid) : (at(mid - 1) + at(mid)) / 2;
}

/**
 * BCa acceleration for a two-sample statistic: jackknife each sample separately and combine the
 * empirical influence values, as scipy.stats.bootstrap does for multi-sample statistics.
 * â = Σ_j Σ_i U³_ji / n_j³ / (6 · (Σ_j Σ_i U²_ji / n_j²)^{3/2}), U_ji = (n_j − 1)(θ̄_j − θ_(i)).
 */
function twoSampleAcceleration(num: Float64Array, den: Float64Array): number {
  const medNum = medianOfSorted(num);
  const medDen = medianOfSorted(den);
  let cubes = 0;
  let squares = 0;
  for (const [sample, jackknifeRatio] of [
    [num, (i: number) => medianWithout(num, i) / medDen],
    [den, (i: number) => medNum / medianWithout(den, i)],
  ] as const) {
    const n = sample.length;
    if (n < 2) continue;
    const thetas = Array.from({ length: n }, (_, i) => jackknifeRatio(i));
    const thetaBar = thetas.reduce((s, t) => s + t, 0) / n;
    let c = 0;
    let q = 0;
    for (const t of thetas) {
      const u = (n - 1) * (thetaBar - t);
      c += u ** 3;
      q += u ** 2;
    }
    cubes += c / n ** 3;
    squares += q / n ** 2;
  }
  if (squares === 0) return 0;
  return cubes / (6 * squares ** 1.5);
}

function checkOptions(confidence: number, resamples: number): void {
  if (!(confidence > 0 && confidence < 1))
    throw new RangeError(`confidence must be in (0, 1), got ${confidence}`);
  if (!Number.isInteger(resamples) || resamples < MIN_RESAMPLES) {
    throw new RangeError(`resamples must be an integer ≥ ${MIN_RESAMPLES}, got ${resamples}`);
  }
}

/**
 * Bootstrap median(num) / median(den). Both arms need at least one finite positive value; callers
 * (compareArms) check inputs and return `invalid` before getting here.
 * @throws RangeError on an empty arm or bad options (caller bugs, not user input).
 */
export function bootstrapRatioOfMedians(
  num: readonly number[],
  den: readonly number[],
  opts: BootstrapOptions,
): RatioBootstrap {
  const confidence = opts.confidence ?? MEASURE_DEFAULTS.confidence;
  const resamples = opts.resamples ?? MEASURE_DEFAULTS.resamples;
  checkOptions(confidence, resamples);
  if (num.length === 0 || den.length === 0) throw new RangeError('both arms need at least one value');

  const numSorted = sortedCopy(num);
  const denSorted = sortedCopy(den);
  const estimate = medianOfSorted(numSorted) / medianOfSorted(denSorted);

  const rng = createRng(opts.seed);
  const numCounts = new Int32Array(numSorted.length);
  const denCounts = new Int32Array(denSorted.length);
  const ratios = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    const numMedian = resampledMedian(numSorted, rng, numCounts);
    ratios[r] = numMedian / resampledMedian(denSorted, rng, denCounts);
  }
  ratios.sort();

  const alpha = 1 - confidence;
  const percentile: Interval = {
    lo: quantileOfSorted(ratios, alpha / 2),
    hi: quantileOfSorted(ratios, 1 - alpha / 2),
  };

  // Bias correction from the share of resamples below the estimate; ties count half, which matters
  // because medians of small samples repeat the observed value often.
  let below = 0;
  let ties = 0;
  for (const ratio of ratios) {
    if (ratio < estimate) below += 1;
    else if (ratio === estimate) ties += 1;
  }
  const share = (below + ties / 2) / resamples;
  const clampedShare = Math.min(1 - 0.5 / resamples, Math.max(0.5 / resamples, share));
  const biasZ0 = normalQuantile(clampedShare);
  const acceleration = twoSampleAcceleration(numSorted, denSorted);

  const degenerate = ratios[0] === ratios[resamples - 1];
  const adjusted = (z: number): number => {
    const shifted = biasZ0 + z;
    const denominator = 1 - acceleration * shifted;
    return denominator > 0 ? normalCdf(biasZ0 + shifted / denominator) : Number.NaN;
  };
  const pLo = adjusted(normalQuantile(alpha / 2));
  const pHi = adjusted(normalQuantile(1 - alpha / 2));
  const bcaFallback = degenerate || !Number.isFinite(pLo) || !Number.isFinite(pHi) || pLo >= pHi;
  const bca: Interval = bcaFallback
    ? { ...percentile }
    : { lo: quantileOfSorted(ratios, pLo), hi: quantileOfSorted(ratios, pHi) };

  return {
    estimate,
    percentile,
    bca,
    bcaFallback,
    biasZ0,
    acceleration,
    confidence,
    resamples,
    seed: opts.seed,
  };
}
