/**
 * Sequential stopping: after each batch of interleaved runs, decide whether more runs could change the
 * verdict. Fixed in the harness, never chosen by the agent (reference/evaluation.md §5.5).
 *
 *   fewer than nStart runs in an arm           → more (up to nStart)
 *   inputs invalid (NaN, non-positive)         → stop: `invalid` stays invalid
 *   needs-human, or improved (lo > accept bar) → stop
 *   hi ≤ the futility bar (a clear loss, or too small to ever clear the bar; includes `regressed`) → stop
 *   otherwise, n < nMax                        → more (step runs per arm, capped at nMax)
 *   n ≥ nMax                                   → stop with the verdict at nMax
 *
 * The futility bar asks whether more runs could pay off: if the true gain were as large as the
 * interval's upper bound, would nMax runs per arm at this noise more likely than not lift the lower
 * bound over the bar those runs give? That gain is barₙₘₐₓ · exp(expected half-width at nMax); an
 * interval wholly under it stops as no-change. It can lie below today's bar (a noisy comparison's bar
 * falls as runs are added, so a real gain seen through a burst of load gets more runs) or above it
 * (at the practical floor, a no-change interval that pokes over the bar stops at 5 runs instead of
 * running to nMax; the simulation shows the same power at a third fewer runs). With a fixed margin it
 * is the accept bar.
 *
 * Looking repeatedly raises the false-accept rate: each look is another chance for noise to clear the
 * bar. Each look therefore holds the false-accept target divided by the number of looks
 * (perLookOptions); the simulation (tests and `npm run bench:stats`) measures the rate over all looks.
 */
import { MEASURE_DEFAULTS } from '../config/index.js';
import {
  type CompareOptions,
  type Comparison,
  compareArms,
  DEFAULT_POLICY,
  inputProblems,
  resolvePolicy,
} from './compare-arms.js';
import { acceptBarFor, expectedLogHalfWidth } from './noise.js';

export interface SequentialPolicy {
  /** Runs per arm before the first look: `measure.runs_per_arm`. */
  nStart: number;
  /** Most runs per arm: `measure.max_runs_per_arm`. */
  nMax: number;
  /** Runs per arm added per look: SEQUENTIAL_STEP (fixed in the harness, not a config key). */
  step: number;
}

/** Runs added per arm at each look after the first. */
export const SEQUENTIAL_STEP = 2;

export const DEFAULT_SEQUENTIAL_POLICY: SequentialPolicy = {
  nStart: MEASURE_DEFAULTS.runs_per_arm,
  nMax: MEASURE_DEFAULTS.max_runs_per_arm,
  step: SEQUENTIAL_STEP,
};

export type SequentialAction = 'stop' | 'more';

export interface SequentialDecision {
  action: SequentialAction;
  /** Runs to add to each arm before the next look (0 when stopping). */
  addRuns: { a: number; b: number };
  /** Why, in one line. */
  reason: string;
  /** The comparison at this look; null while an arm has fewer than nStart runs. */
  comparison: Comparison | null;
}

function checkPolicy(p: SequentialPolicy): void {
  const ok =
    Number.isInteger(p.nStart) &&
    Number.isInteger(p.nMax) &&
    Number.isInteger(p.step) &&
    p.nStart >= 2 &&
    p.nMax >= p.nStart &&
    p.step >= 1;
  if (!ok) {
    throw new RangeError(
      `sequential policy needs integers 2 ≤ nStart ≤ nMax and step ≥ 1, got nStart ${p.nStart}, nMax ${p.nMax}, step ${p.step}`,
    );
  }
}

/** Runs each arm needs to reach `target`. */
function topUp(a: readonly number[], b: readonly number[], target: number): { a: number; b: number } {
  return { a: Math.max(0, target - a.length), b: Math.max(0, target - b.length) };
}

/**
 * The bar under which the CI's upper bound makes more runs futile (see the module comment): a true
 * gain that large would, more likely than not, still leave the lower bound under the accept bar after
 * nMax runs per arm at this noise.
 */
export function futilityBar(comparison: Comparison, opts: CompareOptions, nMax: number): number | null {
  const { acceptBar, noiseCv, mdeSource } = comparison;
  if (acceptBar === null || mdeSource === 'fixed' || noiseCv === null) return acceptBar;
  const policy = resolvePolicy(opts);
  const noiseOpts = {
    confidence: policy.confidence,
    falseAcceptRate: policy.falseAcceptRate,
    practicalDelta: policy.practicalDelta,
    paired: policy.paired === true,
  };
  const barAtMax = acceptBarFor(noiseCv, nMax, nMax, noiseOpts);
  return barAtMax * Math.exp(expectedLogHalfWidth(noiseCv, nMax, nMax, noiseOpts));
}

/** How many times the rule may look: at nStart, then every `step` runs up to nMax. */
export function maxLooks(policy: SequentialPolicy): number {
  return 1 + Math.ceil((policy.nMax - policy.nStart) / policy.step);
}

/**
 * The verdict options each look uses: the false-accept target shared out over the looks (Bonferroni),
 * so that accepting at any look of the whole sequence stays under the target.
 */
export function perLookOptions(opts: CompareOptions, policy: SequentialPolicy): CompareOptions {
  const target = opts.falseAcceptRate ?? DEFAULT_POLICY.falseAcceptRate;
  const looks = maxLooks(policy);
  return { ...opts, falseAcceptRate: target / looks, sequence: { falseAcceptRate: target, looks } };
}

/**
 * Decide whether to measure more. `opts` are the verdict options, their falseAcceptRate the target for
 * the whole sequence; each look's comparison uses its share (perLookOptions) and minRuns = nStart, so
 * the verdict at a stop is exactly what `compareArms` says for these runs with those options.
 * @throws RangeError on an inconsistent policy (a caller bug).
 */
export function decideNext(
  a: readonly number[],
  b: readonly number[],
  opts: CompareOptions,
  policy: SequentialPolicy = DEFAULT_SEQUENTIAL_POLICY,
): SequentialDecision {
  checkPolicy(policy);
  // The false-accept target covers the whole sequence; each look gets its share.
  opts = perLookOptions(opts, policy);
  const n = Math.min(a.length, b.length);
  const stop = (reason: string, comparison: Comparison | null): SequentialDecision => ({
    action: 'stop',
    addRuns: { a: 0, b: 0 },
    reason,
    comparison,
  });

  if (n < policy.nStart) {
    // Bad values cannot be repaired by more runs; say so now rather than after spending them.
    const bad = inputProblems(a, b, 0);
    if (bad.length > 0) {
      return stop(`invalid: ${bad.join('; ')}`, compareArms(a, b, { ...opts, minRuns: policy.nStart }));
    }
    return {
      action: 'more',
      addRuns: topUp(a, b, policy.nStart),
      reason: `fewer than ${policy.nStart} runs per arm`,
      comparison: null,
    };
  }

  const comparison = compareArms(a, b, { ...opts, minRuns: policy.nStart });
  const { verdict, ci, acceptBar } = comparison;
  if (verdict === 'invalid') return stop(`invalid: ${comparison.reasons.join('; ')}`, comparison);
  if (verdict === 'needs-human') return stop('implausible speedup: a human decides', comparison);
  if (verdict === 'improved') return stop('the whole CI is above the accept bar', comparison);
  const futile = futilityBar(comparison, opts, policy.nMax);
  if (ci === null || acceptBar === null || futile === null) return stop('no interval', comparison); // unreachable for valid inputs
  if (ci.hi <= futile) {
    const why =
      futile === acceptBar
        ? 'the whole CI is below the accept bar: more runs would not lift its lower bound above it'
        : `the whole CI is below ${futile.toFixed(4)}: even a gain at its upper bound would more likely than not miss the accept bar at ${policy.nMax} runs per arm`;
    return stop(
      verdict === 'regressed' ? 'regressed: the whole CI is below the regression bar' : why,
      comparison,
    );
  }
  if (n >= policy.nMax) return stop(`reached nMax = ${policy.nMax} runs per arm`, comparison);
  const target = Math.min(policy.nMax, n + policy.step);
  const straddles =
    ci.hi > acceptBar
      ? `straddles the accept bar ${acceptBar.toFixed(4)}`
      : `is below the accept bar ${acceptBar.toFixed(4)}, but the bar falls with more runs and a gain at its upper bound could clear it`;
  return {
    action: 'more',
    addRuns: topUp(a, b, target),
    reason: `the CI [${ci.lo.toFixed(4)}, ${ci.hi.toFixed(4)}] ${straddles}`,
    comparison,
  };
}
