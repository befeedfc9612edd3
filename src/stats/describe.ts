/** Descriptive statistics of one arm's per-run values. Pure; inputs are never mutated. */

/** Ascending copy of `values`. */
export function sortedCopy(values: readonly number[]): Float64Array {
  return Float64Array.from(values).sort();
}

/** Median of already-sorted values (mean of the two middle ones for an even count); NaN when empty. */
export function medianOfSorted(sorted: ArrayLike<number>): number {
  const n = sorted.length;
  if (n === 0) return Number.NaN;
  const mid = n >> 1;
  return n % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Median; NaN when empty. */
export function median(values: readonly number[]): number {
  return medianOfSorted(sortedCopy(values));
}

/**
 * Quantile p ∈ [0, 1] of already-sorted values by linear interpolation between order statistics
 * (Hyndman–Fan type 7, the default of R and NumPy); NaN when empty.
 */
export function quantileOfSorted(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length;
  if (n === 0 || Number.isNaN(p)) return Number.NaN;
  const h = (n - 1) * Math.min(1, Math.max(0, p));
  const lo = Math.floor(h);
  const hi = Math.min(n - 1, lo + 1);
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!);
}

export function mean(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/** Sample variance with n − 1 in the denominator; NaN for fewer than two values. */
export function sampleVariance(values: readonly number[]): number {
  if (values.length < 2) return Number.NaN;
  const m = mean(values);
  let ss = 0;
  for (const v of values) ss += (v - m) ** 2;
  return ss / (values.length - 1);
}

/**
 * Coefficient of variation estimated on the log scale: the sample standard deviation of ln(value).
 * For log-normal noise this is √ln(1 + CV²), within 0.1% of sd/mean for CV ≤ 5%, and it treats
 * ratios symmetrically (a run 2% slow and one 2% fast count the same). Values must be positive;
 * NaN for fewer than two values.
 */
export function logCv(values: readonly number[]): number {
  return Math.sqrt(sampleVariance(values.map(Math.log)));
}

/** Tukey's fences: 1.5 interquartile ranges beyond the quartiles. */
export const TUKEY_FENCE_IQRS = 1.5;

/**
 * The values inside Tukey's fences [Q1 − 1.5·IQR, Q3 + 1.5·IQR] of ln(value) (type-7 quartiles), in
 * their original order. Drops a run disturbed by a noisy neighbour or a throttled clock before the
 * run-to-run noise is estimated; the medians never need it. Values must be positive.
 */
export function withoutOutliers(values: readonly number[]): number[] {
  if (values.length < 4) return [...values];
  const logs = sortedCopy(values.map(Math.log));
  const q1 = quantileOfSorted(logs, 0.25);
  const q3 = quantileOfSorted(logs, 0.75);
  const reach = TUKEY_FENCE_IQRS * (q3 - q1);
  return values.filter((v) => {
    const x = Math.log(v);
    return x >= q1 - reach && x <= q3 + reach;
  });
}
