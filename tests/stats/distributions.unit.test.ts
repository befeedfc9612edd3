// Reference values from scipy 1.17 (scipy.stats.norm / scipy.stats.t), printed with repr().
import { describe, expect, it } from 'vitest';
import { chiSquareCdf, chiSquareQuantile } from '../../src/stats/chi-square.js';
import { normalCdf, normalQuantile } from '../../src/stats/normal.js';
import { noncentralTUpperTail, studentTCdf, studentTQuantile } from '../../src/stats/student.js';

describe('normal distribution', () => {
  it('matches known quantiles', () => {
    expect(normalQuantile(0.975)).toBeCloseTo(1.959963984540054, 12);
    expect(normalQuantile(0.8)).toBeCloseTo(0.8416212335729143, 12);
    expect(normalQuantile(0.999)).toBeCloseTo(3.090232306167813, 12);
    expect(normalQuantile(1e-10)).toBeCloseTo(-6.361340902404056, 10);
    expect(normalQuantile(0.5)).toBe(0);
    expect(normalQuantile(0)).toBe(Number.NEGATIVE_INFINITY);
    expect(normalQuantile(1)).toBe(Number.POSITIVE_INFINITY);
    expect(normalQuantile(1.5)).toBeNaN();
  });

  it('matches known CDF values and inverts the quantile', () => {
    expect(normalCdf(0)).toBe(0.5);
    expect(normalCdf(-1)).toBeCloseTo(0.15865525393145707, 13);
    expect(normalCdf(1.959963984540054)).toBeCloseTo(0.975, 13);
    for (const p of [1e-8, 0.001, 0.025, 0.3, 0.5, 0.8, 0.99, 0.999999]) {
      expect(normalCdf(normalQuantile(p))).toBeCloseTo(p, 12);
    }
  });
});

describe("Student's t distribution", () => {
  const reference: [number, number, number, number][] = [
    // dof, t_0.975, t_0.8, cdf(1.5)
    [1, 12.706204736174694, 1.3763819204711738, 0.8128329581890011],
    [2, 4.302652729749462, 1.0606601717798214, 0.8638034375544994],
    [8, 2.306004135204166, 0.8888895177670202, 0.9139983540240444],
    [18, 2.1009220402410382, 0.8620486679895989, 0.9245247739078664],
    [28, 2.0484071417952454, 0.8546474855822227, 0.9275965909787972],
    [1000, 1.9623390808264083, 0.8419808221624288, 0.9330349805889568],
  ];

  it.each(reference)('dof %d matches scipy', (dof, q975, q80, cdf15) => {
    expect(studentTQuantile(0.975, dof)).toBeCloseTo(q975, 9);
    expect(studentTQuantile(0.8, dof)).toBeCloseTo(q80, 9);
    expect(studentTQuantile(0.025, dof)).toBeCloseTo(-q975, 9);
    expect(studentTCdf(1.5, dof)).toBeCloseTo(cdf15, 12);
    expect(studentTCdf(-1.5, dof)).toBeCloseTo(1 - cdf15, 12);
  });

  it('returns NaN outside its domain', () => {
    expect(studentTQuantile(0, 5)).toBeNaN();
    expect(studentTQuantile(0.9, 0)).toBeNaN();
    expect(studentTQuantile(0.5, 3)).toBe(0);
  });
});

describe('noncentral t upper tail', () => {
  // c, dof, ncp, scipy.stats.nct.sf(c, dof, ncp)
  const reference: [number, number, number, number][] = [
    [2.776445105, 4, 3.956, 0.835845358889661],
    [2.144786688, 14, 3.053, 0.8101312625213711],
    [1.5, 6, 0, 0.09214036807074101],
    [2, 9, 2.5, 0.6933631169285559],
    [1.5, 1, 0.5, 0.3141729710062164],
  ];

  it.each(reference)('P(T′ > %d; dof %d, ncp %d) matches scipy', (c, dof, ncp, sf) => {
    expect(noncentralTUpperTail(c, dof, ncp)).toBeCloseTo(sf, 8);
  });

  it('is the central t at no shift, rises with the shift and is NaN outside its domain', () => {
    expect(noncentralTUpperTail(2.5, 5, 0)).toBeCloseTo(1 - studentTCdf(2.5, 5), 7);
    expect(noncentralTUpperTail(2.5, 5, 3)).toBeGreaterThan(noncentralTUpperTail(2.5, 5, 2));
    expect(noncentralTUpperTail(2.5, 0.5, 1)).toBeNaN();
  });
});

describe('chi-square distribution', () => {
  it('matches the closed forms for 1, 2 and 4 degrees of freedom', () => {
    for (const x of [0.01, 0.5, 1, 3, 10, 40]) {
      expect(chiSquareCdf(x, 1)).toBeCloseTo(2 * normalCdf(Math.sqrt(x)) - 1, 12);
      expect(chiSquareCdf(x, 2)).toBeCloseTo(-Math.expm1(-x / 2), 12);
      expect(chiSquareCdf(x, 4)).toBeCloseTo(1 - Math.exp(-x / 2) * (1 + x / 2), 12);
    }
    for (const p of [0.001, 0.1, 0.5, 0.9, 0.999]) {
      expect(chiSquareQuantile(p, 1)).toBeCloseTo(normalQuantile((1 + p) / 2) ** 2, 9);
      expect(chiSquareQuantile(p, 2)).toBeCloseTo(-2 * Math.log1p(-p), 9);
    }
  });

  it('matches the printed tables and inverts its CDF', () => {
    // Lower 10% points (Abramowitz & Stegun table 26.8).
    expect(chiSquareQuantile(0.1, 4)).toBeCloseTo(1.06362, 5);
    expect(chiSquareQuantile(0.1, 8)).toBeCloseTo(3.48954, 5);
    expect(chiSquareQuantile(0.1, 28)).toBeCloseTo(18.9392, 4);
    for (const dof of [0.5, 3, 7.5, 100]) {
      for (const p of [0.01, 0.1, 0.5, 0.95])
        expect(chiSquareCdf(chiSquareQuantile(p, dof), dof)).toBeCloseTo(p, 10);
    }
  });

  it('returns NaN outside its domain', () => {
    expect(chiSquareQuantile(0, 5)).toBeNaN();
    expect(chiSquareQuantile(0.5, 0)).toBeNaN();
    expect(chiSquareCdf(1, -1)).toBeNaN();
    expect(chiSquareCdf(-1, 3)).toBe(0);
  });
});
