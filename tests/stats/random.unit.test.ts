import { describe, expect, it } from 'vitest';
import { createRng } from '../../src/stats/random.js';

describe('createRng', () => {
  it('repeats its sequence for a seed and differs between seeds', () => {
    const draw = (seed: number): number[] => {
      const rng = createRng(seed);
      return Array.from({ length: 5 }, () => rng.uniform());
    };
    expect(draw(42)).toEqual(draw(42));
    expect(draw(42)).not.toEqual(draw(43));
    // Seeds above 2^32 are not folded onto their low 32 bits.
    expect(draw(2 ** 32 + 7)).not.toEqual(draw(7));
  });

  it('draws uniforms in [0, 1) with the right mean and integers in range', () => {
    const rng = createRng(1);
    let sum = 0;
    let min = 1;
    let max = 0;
    const counts = [0, 0, 0, 0, 0];
    const n = 50_000;
    for (let i = 0; i < n; i++) {
      const u = rng.uniform();
      min = Math.min(min, u);
      max = Math.max(max, u);
      sum += u;
      counts[rng.int(5)]! += 1;
    }
    expect(min).toBeGreaterThanOrEqual(0);
    expect(max).toBeLessThan(1);
    // Mean of U(0,1) has SE 0.29/√n ≈ 0.0013; 4 SE.
    expect(Math.abs(sum / n - 0.5)).toBeLessThan(0.006);
    for (const c of counts) expect(Math.abs(c / n - 0.2)).toBeLessThan(0.01);
  });

  it('draws standard normals', () => {
    const rng = createRng(7);
    const n = 50_000;
    let s = 0;
    let ss = 0;
    for (let i = 0; i < n; i++) {
      const z = rng.normal();
      s += z;
      ss += z * z;
    }
    expect(Math.abs(s / n)).toBeLessThan(0.02);
    expect(Math.abs(ss / n - 1)).toBeLessThan(0.03);
  });

  it('rejects seeds that are not safe integers', () => {
    expect(() => createRng(1.5)).toThrow(RangeError);
    expect(() => createRng(Number.NaN)).toThrow(/safe integer/);
  });
});
