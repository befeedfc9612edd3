/**
 * A small seeded pseudo-random generator, so every bootstrap and simulation is reproducible from its
 * seed. xoshiro128** (Blackman & Vigna) seeded through splitmix32; `Math.random` is never used.
 */

export interface Rng {
  /** Uniform double in [0, 1) with 53 random bits. */
  uniform(): number;
  /** Uniform integer in [0, n), for n up to 2^20 or so (bias ≤ n / 2^32). */
  int(n: number): number;
  /** Standard normal variate (Box–Muller; the second value of each pair is kept for the next call). */
  normal(): number;
}

const TWO_POW_32 = 4294967296;
const TWO_POW_53 = 9007199254740992;

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/** One splitmix32 step: returns [next state, output]. Spreads a small integer seed over 32 bits. */
function splitmix32(state: number): [number, number] {
  const next = (state + 0x9e3779b9) | 0;
  let z = next;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  z ^= z >>> 16;
  return [next, z >>> 0];
}

/**
 * A generator for `seed`, any safe integer. The same seed always gives the same sequence.
 * @throws RangeError when the seed is not a safe integer.
 */
export function createRng(seed: number): Rng {
  if (!Number.isSafeInteger(seed)) throw new RangeError(`seed must be a safe integer, got ${seed}`);
  // Mix both 32-bit halves of the seed so seeds above 2^32 differ from their low halves.
  let state = (seed % TWO_POW_32) ^ Math.imul(Math.floor(seed / TWO_POW_32), 0x27d4eb2d);
  const words: number[] = [];
  for (let i = 0; i < 4; i++) {
    const [next, out] = splitmix32(state);
    state = next;
    words.push(out | 0);
  }
  // State in a typed array: 32-bit words kept in closure variables would be boxed as heap numbers.
  const s = Int32Array.from(words);
  if ((s[0]! | s[1]! | s[2]! | s[3]!) === 0) s[0] = 1; // the all-zero state is a fixed point

  const nextUint32 = (): number => {
    const result = Math.imul(rotl(Math.imul(s[1]!, 5), 7), 9);
    const t = s[1]! << 9;
    s[2]! ^= s[0]!;
    s[3]! ^= s[1]!;
    s[1]! ^= s[2]!;
    s[0]! ^= s[3]!;
    s[2]! ^= t;
    s[3] = rotl(s[3]!, 11);
    return result >>> 0;
  };

  const uniform = (): number => ((nextUint32() >>> 5) * 67108864 + (nextUint32() >>> 6)) / TWO_POW_53;

  let spareNormal: number | undefined;
  const normal = (): number => {
    if (spareNormal !== undefined) {
      const z = spareNormal;
      spareNormal = undefined;
      return z;
    }
    // 1 - uniform() is in (0, 1], so the log is finite.
    const radius = Math.sqrt(-2 * Math.log(1 - uniform()));
    const angle = 2 * Math.PI * uniform();
    spareNormal = radius * Math.sin(angle);
    return radius * Math.cos(angle);
  };

  return {
    uniform,
    // One 32-bit draw scaled to [0, n): the bias, at most n / 2^32, is far below anything we measure.
    int: (n: number): number => Math.floor((nextUint32() / TWO_POW_32) * n),
    normal,
  };
}
