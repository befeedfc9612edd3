/**
 * Does the profile agree with the measurement? The profiled run and the timed runs ran the same code,
 * but a profiler adds overhead per op: on XLA:CPU a program of many small ops can trace at ten times its
 * timed median. When the traced step time and the measured median differ by more than AGREEMENT_FACTOR
 * on either side, absolute times from the trace say nothing about speed; reports then show the measured
 * change as the headline, call trace times profiler-inflated, and compare hotspots by their share of
 * op time instead of their times.
 */
import type { TraceSummary } from './types.js';

/** Traced over measured step time beyond this (or below its inverse) means the profile does not agree. */
export const AGREEMENT_FACTOR = 1.5;

export interface SideAgreement {
  /** The traced step time (median), ms; null when the trace marks no comparable step. */
  tracedMs: number | null;
  /** The measured median of the same call, ms. */
  measuredMs: number | null;
  /** tracedMs / measuredMs. */
  ratio: number | null;
  /** Which steps were compared: `host annotation "hillclimb_fwd_bwd"`, `executions of jit_f`, … */
  steps: string;
}

export interface ProfileAgreement {
  factor: number;
  candidate: SideAgreement;
  champion: SideAgreement;
  /**
   * True when every side that can be compared is within the factor; false when one is not; null when
   * neither side can be compared (no step times in the trace, or no time metric).
   */
  agrees: boolean | null;
  /** One line for people: why they agree or not, or why it could not be checked. */
  detail: string;
}

export interface AgreementInput {
  candidate: TraceSummary | undefined;
  champion: TraceSummary | undefined;
  /** The metric's path, e.g. `measurements.fwd_bwd.median_ms`. */
  metricPath: string;
  /** Measured medians of the champion (A) and the candidate (B), in the metric's unit. */
  measured: { a: number | null; b: number | null };
  /** The metric's unit; only times (`ms`) can be compared with a trace. */
  unit: string;
}

/** The measurement a metric path names: `measurements.fwd_bwd.median_ms` → `fwd_bwd`. */
export function measurementOf(metricPath: string): string | undefined {
  return /^measurements\.([^.]+)\./.exec(metricPath)?.[1];
}

/**
 * The traced step time that corresponds to a measurement: the median of its step annotations
 * (`hillclimb_<measurement>`, written by the bench), else the steps the summary found.
 */
export function tracedStep(
  s: TraceSummary,
  measurement: string | undefined,
): { ms: number | null; steps: string } {
  const named = s.steps.annotations?.find((a) => a.name === `hillclimb_${measurement}`);
  if (named !== undefined) return { ms: named.medianMs, steps: `host annotation "${named.name}"` };
  if (s.steps.timeMs !== null && s.steps.detector !== 'whole-trace')
    return { ms: s.steps.timeMs.median, steps: `${s.steps.detector}: ${s.steps.detail}` };
  return { ms: null, steps: 'no step times in the trace' };
}

export function profileAgreement(input: AgreementInput): ProfileAgreement {
  const measurement = measurementOf(input.metricPath);
  const side = (s: TraceSummary | undefined, measured: number | null): SideAgreement => {
    const traced = s === undefined ? { ms: null, steps: 'no trace' } : tracedStep(s, measurement);
    const usable = input.unit === 'ms' && traced.ms !== null && measured !== null && measured > 0;
    return {
      tracedMs: traced.ms,
      measuredMs: input.unit === 'ms' ? measured : null,
      ratio: usable ? round(traced.ms! / measured!) : null,
      steps: traced.steps,
    };
  };
  const candidate = side(input.candidate, input.measured.b);
  const champion = side(input.champion, input.measured.a);
  const factor = AGREEMENT_FACTOR;
  const off = (r: number | null) => r !== null && (r > factor || r < 1 / factor);
  const ratios = [champion, candidate].map((x) => x.ratio).filter((r) => r !== null);
  let agrees: boolean | null;
  let detail: string;
  if (input.unit !== 'ms') {
    agrees = null;
    detail = `the metric is not a time (${input.unit}): the trace's step times cannot be compared with it`;
  } else if (ratios.length === 0) {
    agrees = null;
    detail = `the trace has no step time to compare with the measured ${measurement ?? 'metric'} (${candidate.steps})`;
  } else {
    agrees = !off(champion.ratio) && !off(candidate.ratio);
    const sides = [
      champion.ratio === null
        ? undefined
        : `champion ${fmt(champion.tracedMs!)} traced vs ${fmt(champion.measuredMs!)} measured (${champion.ratio}×)`,
      candidate.ratio === null
        ? undefined
        : `candidate ${fmt(candidate.tracedMs!)} traced vs ${fmt(candidate.measuredMs!)} measured (${candidate.ratio}×)`,
    ].filter((x) => x !== undefined);
    detail = agrees
      ? `the traced step agrees with the measured median within ${factor}×: ${sides.join('; ')}`
      : `the traced step is not the measured time (more than ${factor}× apart): ${sides.join('; ')}; the profiler's overhead inflates trace times`;
  }
  return { factor, candidate, champion, agrees, detail };
}

function fmt(ms: number): string {
  return ms >= 1 ? `${ms.toFixed(3)} ms` : `${(ms * 1e3).toFixed(1)} µs`;
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}
