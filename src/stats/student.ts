/**
 * Student's t distribution: CDF through the regularized incomplete beta function, quantile by
 * bisection on the CDF. Used for the small-sample minimum detectable effect, where the noise is
 * estimated from few runs; accurate to about 1e-10, far beyond what a noise floor needs.
 */
import { normalCdf, normalQuantile } from './normal.js';

const LANCZOS = [
  0.9999999999998099, 676.5203681218851, -1259.1392167224028, 771.3234287776531, -176.6150291621406,
  12.507343278686905, -0.13857109526572012, 0.000009984369578019572, 1.5056327351493116e-7,
];

/** ln Γ(x) for x > 0 (Lanczos approximation, g = 7). */
export function logGamma(x: number): number {
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const z = x - 1;
  let sum = LANCZOS[0]!;
  for (let i = 1; i < LANCZOS.length; i++) sum += LANCZOS[i]! / (z + i);
  const t = z + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(sum);
}

/** Continued fraction of the incomplete beta function (modified Lentz; Numerical Recipes betacf). */
function betaContinuedFraction(x: number, a: number, b: number): number {
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 300; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < 1e-15) break;
  }
  return h;
}

/** Regularized incomplete beta I_x(a, b) for x ∈ [0, 1], a, b > 0. */
export function regularizedBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log1p(-x));
  // The continued fraction converges fast for x < (a + 1) / (a + b + 2); use the symmetry otherwise.
  return x < (a + 1) / (a + b + 2)
    ? (front * betaContinuedFraction(x, a, b)) / a
    : 1 - (front * betaContinuedFraction(1 - x, b, a)) / b;
}

/** P(T ≤ t) for Student's t with `dof` > 0 degrees of freedom. */
export function studentTCdf(t: number, dof: number): number {
  if (Number.isNaN(t) || !(dof > 0)) return Number.NaN;
  if (t === Number.POSITIVE_INFINITY) return 1;
  if (t === Number.NEGATIVE_INFINITY) return 0;
  const tail = 0.5 * regularizedBeta(dof / (dof + t * t), dof / 2, 0.5);
  return t > 0 ? 1 - tail : tail;
}

const quantileCache = new Map<string, number>();

/** The p-quantile of Student's t with `dof` > 0 degrees of freedom; NaN outside (0, 1). */
export function studentTQuantile(p: number, dof: number): number {
  if (!(p > 0 && p < 1) || !(dof > 0)) return Number.NaN;
  if (p === 0.5) return 0;
  if (p < 0.5) return -studentTQuantile(1 - p, dof);
  const key = `${p}:${dof}`;
  const cached = quantileCache.get(key);
  if (cached !== undefined) return cached;
  // The t quantile is above the normal one.
  const lo = normalQuantile(p);
  const q = invertCdf((x) => studentTCdf(x, dof), p, lo, Math.max(2 * lo, 1), 1e-12);
  quantileCache.set(key, q);
  return q;
}

/**
 * The x where an increasing `cdf` reaches `p`, from `lo` (below it): double `hi` until it brackets,
 * then bisect to a relative width `relTol`.
 */
export function invertCdf(
  cdf: (x: number) => number,
  p: number,
  lo: number,
  hi: number,
  relTol: number,
): number {
  while (cdf(hi) < p) {
    lo = hi;
    hi *= 2;
  }
  for (let i = 0; i < 200 && hi - lo > relTol * hi; i++) {
    const mid = (lo + hi) / 2;
    if (cdf(mid) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/**
 * P(T′ > c) for the noncentral t with `dof` ≥ 1 degrees of freedom and noncentrality `ncp`: the power of a
 * one-sided t test at critical value c when the true mean is ncp standard errors above the null. By
 * Simpson's rule over W = √V, V ~ χ²(dof), of Φ(ncp − c · W / √dof); within 1e-8 of scipy's nct.sf.
 */
export function noncentralTUpperTail(c: number, dof: number, ncp: number): number {
  // dof ≥ 1 keeps the density of W finite at 0, which Simpson's rule needs.
  if (!(dof >= 1) || !Number.isFinite(c) || !Number.isFinite(ncp)) return Number.NaN;
  const intervals = 2000; // even, for Simpson's rule
  const top = Math.sqrt(dof + 12 * Math.sqrt(2 * dof) + 40); // χ²(dof) has < 1e-12 above top²
  const h = top / intervals;
  const logNorm = (dof / 2 - 1) * Math.log(2) + logGamma(dof / 2);
  // The density of W = √V is 2^{1 − dof/2} w^{dof − 1} e^{−w²/2} / Γ(dof/2).
  const f = (w: number): number =>
    w === 0
      ? dof === 1
        ? Math.exp(-logNorm) * normalCdf(ncp)
        : 0
      : Math.exp((dof - 1) * Math.log(w) - (w * w) / 2 - logNorm) * normalCdf(ncp - (c * w) / Math.sqrt(dof));
  let sum = f(0) + f(top);
  for (let i = 1; i < intervals; i++) sum += (i % 2 === 1 ? 4 : 2) * f(i * h);
  return (sum * h) / 3;
}
