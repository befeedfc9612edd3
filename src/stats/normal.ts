/**
 * The standard normal distribution: cumulative distribution Φ and its inverse, in double precision.
 * Used for the BCa interval and for z-values in the minimum detectable effect.
 */

/** Hart's coefficients, highest power first (numerator degree 6, denominator degree 7). */
const HART_NUMERATOR = [
  0.0352624965998911, 0.700383064443688, 6.37396220353165, 33.912866078383, 112.079291497871,
  221.213596169931, 220.206867912376,
];
const HART_DENOMINATOR = [
  0.0883883476483184, 1.75566716318264, 16.064177579207, 86.7807322029461, 296.564248779674, 637.333633378831,
  793.826512519948, 440.413735824752,
];

/** A polynomial at x by Horner's rule; coefficients highest power first. */
function horner(coefficients: readonly number[], x: number): number {
  return coefficients.reduce((acc, c) => acc * x + c, 0);
}

/**
 * Φ(x) = P(Z ≤ x). Hart's 1968 rational approximation as given by G. West, "Better approximations to
 * cumulative normal functions" (2005); absolute error below 1e-14.
 */
export function normalCdf(x: number): number {
  if (Number.isNaN(x)) return Number.NaN;
  const xabs = Math.abs(x);
  let tail: number;
  if (xabs > 37) {
    tail = 0;
  } else {
    const e = Math.exp((-xabs * xabs) / 2);
    if (xabs < 7.07106781186547) {
      const num = horner(HART_NUMERATOR, xabs);
      const den = horner(HART_DENOMINATOR, xabs);
      tail = (e * num) / den;
    } else {
      let cf = xabs + 0.65;
      cf = xabs + 4 / cf;
      cf = xabs + 3 / cf;
      cf = xabs + 2 / cf;
      cf = xabs + 1 / cf;
      tail = e / cf / 2.506628274631;
    }
  }
  return x > 0 ? 1 - tail : tail;
}

/**
 * Φ⁻¹(p), the standard normal quantile. Wichura's algorithm AS 241 (PPND16, Applied Statistics 37,
 * 1988); relative error about 1e-16. Returns ±Infinity at p = 1 and p = 0, NaN outside [0, 1].
 */
export function normalQuantile(p: number): number {
  if (Number.isNaN(p) || p < 0 || p > 1) return Number.NaN;
  if (p === 0) return Number.NEGATIVE_INFINITY;
  if (p === 1) return Number.POSITIVE_INFINITY;
  const q = p - 0.5;
  if (Math.abs(q) <= 0.425) {
    const r = 0.180625 - q * q;
    const num =
      ((((((2509.0809287301227 * r + 33430.57558358813) * r + 67265.7709270087) * r + 45921.95393154987) * r +
        13731.69376550946) *
        r +
        1971.5909503065513) *
        r +
        133.14166789178438) *
        r +
      3.3871328727963665;
    const den =
      ((((((5226.495278852546 * r + 28729.085735721943) * r + 39307.89580009271) * r + 21213.794301586597) *
        r +
        5394.196021424751) *
        r +
        687.1870074920579) *
        r +
        42.31333070160091) *
        r +
      1;
    return (q * num) / den;
  }
  let r = Math.sqrt(-Math.log(q < 0 ? p : 1 - p));
  let value: number;
  if (r <= 5) {
    r -= 1.6;
    const num =
      ((((((0.0007745450142783414 * r + 0.022723844989269184) * r + 0.2417807251774506) * r +
        1.2704582524523684) *
        r +
        3.6478483247632045) *
        r +
        5.769497221460691) *
        r +
        4.630337846156546) *
        r +
      1.4234371107496835;
    const den =
      ((((((1.0507500716444169e-9 * r + 0.0005475938084995345) * r + 0.015198666563616457) * r +
        0.14810397642748008) *
        r +
        0.6897673349851) *
        r +
        1.6763848301838038) *
        r +
        2.053191626637759) *
        r +
      1;
    value = num / den;
  } else {
    r -= 5;
    const num =
      ((((((2.0103343992922881e-7 * r + 0.000027115555687434876) * r + 0.0012426609473880784) * r +
        0.026532189526576124) *
        r +
        0.29656057182850487) *
        r +
        1.7848265399172913) *
        r +
        5.463784911164114) *
        r +
      6.657904643501103;
    const den =
      ((((((2.0442631033899397e-15 * r + 1.421511758316446e-7) * r + 0.000018463183175100548) * r +
        0.0007868691311456133) *
        r +
        0.014875361290850615) *
        r +
        0.1369298809227358) *
        r +
        0.599832206555888) *
        r +
      1;
    value = num / den;
  }
  return q < 0 ? -value : value;
}
