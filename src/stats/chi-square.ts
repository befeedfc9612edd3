/**
 * The chi-square distribution: CDF through the regularized lower incomplete gamma function, quantile
 * by bisection on the CDF. Used for the upper confidence bound of a CV estimated from few runs (the
 * MDE's noise, noise.ts); accurate to about 1e-12.
 */
import { invertCdf, logGamma } from './student.js';

const MAX_TERMS = 500;
const EPSILON = 1e-15;
const TINY = 1e-300;

/** Series for P(a, x), good for x < a + 1 (Numerical Recipes gser). */
function gammaSeries(a: number, x: number): number {
  let term = 1 / a;
  let sum = term;
  for (let n = 1; n <= MAX_TERMS; n++) {
    term *= x / (a + n);
    sum += term;
    if (Math.abs(term) < Math.abs(sum) * EPSILON) break;
  }
  return sum * Math.exp(-x + a * Math.log(x) - logGamma(a));
}

/** Continued fraction for Q(a, x) = 1 − P(a, x), good for x ≥ a + 1 (modified Lentz; gcf). */
function gammaContinuedFraction(a: number, x: number): number {
  let b = x + 1 - a;
  let c = 1 / TINY;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i <= MAX_TERMS; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < TINY) d = TINY;
    c = b + an / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < EPSILON) break;
  }
  return h * Math.exp(-x + a * Math.log(x) - logGamma(a));
}

/** Regularized lower incomplete gamma P(a, x) for a > 0, x ≥ 0. */
export function regularizedLowerGamma(a: number, x: number): number {
  if (x <= 0) return 0;
  if (x === Number.POSITIVE_INFINITY) return 1;
  return x < a + 1 ? gammaSeries(a, x) : 1 - gammaContinuedFraction(a, x);
}

/** P(X ≤ x) for a chi-square variable with `dof` > 0 degrees of freedom. */
export function chiSquareCdf(x: number, dof: number): number {
  if (Number.isNaN(x) || !(dof > 0)) return Number.NaN;
  return regularizedLowerGamma(dof / 2, x / 2);
}

const quantileCache = new Map<string, number>();

/** The p-quantile of the chi-square distribution with `dof` > 0 degrees of freedom; NaN outside (0, 1). */
export function chiSquareQuantile(p: number, dof: number): number {
  if (!(p > 0 && p < 1) || !(dof > 0)) return Number.NaN;
  const key = `${p}:${dof}`;
  const cached = quantileCache.get(key);
  if (cached !== undefined) return cached;
  const q = invertCdf((x) => chiSquareCdf(x, dof), p, 0, Math.max(1, dof), 1e-13);
  quantileCache.set(key, q);
  return q;
}
