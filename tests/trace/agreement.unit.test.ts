import { describe, expect, it } from 'vitest';
import { measurementOf, profileAgreement, tracedStep } from '../../src/trace/agreement.js';
import type { TraceSummary } from '../../src/trace/types.js';
import { summaryOf } from './summary-builder.js';

function withSteps(medianMs: number, annotations = true): TraceSummary {
  const s = summaryOf([['fusion', 'loop fusion', medianMs / 2, 1]], { detector: 'host-annotations' });
  s.steps.timeMs = { mean: medianMs * 1.1, median: medianMs * 1.05, min: medianMs, max: medianMs * 2 };
  s.steps.annotations = annotations
    ? [
        { name: 'hillclimb_fwd_bwd', count: 5, meanMs: medianMs, medianMs },
        { name: 'hillclimb_fwd', count: 5, meanMs: medianMs / 3, medianMs: medianMs / 3 },
      ]
    : [];
  return s;
}

const input = (a: TraceSummary | undefined, b: TraceSummary | undefined, unit = 'ms') => ({
  champion: a,
  candidate: b,
  metricPath: 'measurements.fwd_bwd.median_ms',
  measured: { a: 2, b: 1.5 },
  unit,
});

describe('does the profile agree with the measurement', () => {
  it('compares the step annotations of the measured call with the measured medians', () => {
    expect(measurementOf('measurements.fwd_bwd.median_ms')).toBe('fwd_bwd');
    expect(measurementOf('throughput')).toBeUndefined();
    expect(tracedStep(withSteps(2.2), 'fwd_bwd')).toEqual({
      ms: 2.2,
      steps: 'host annotation "hillclimb_fwd_bwd"',
    });
    // Without the bench's annotations: the steps the summary found.
    expect(tracedStep(withSteps(2.2, false), 'fwd_bwd').ms).toBeCloseTo(2.31, 10);
    const ok = profileAgreement(input(withSteps(2.2), withSteps(1.4)));
    expect(ok.agrees).toBe(true);
    expect(ok.champion.ratio).toBe(1.1);
    expect(ok.detail).toMatch(/agrees with the measured median within 1\.5×/);
  });

  it('says no when either side is more than 1.5× off, in either direction', () => {
    expect(profileAgreement(input(withSteps(20), withSteps(1.4))).agrees).toBe(false);
    expect(profileAgreement(input(withSteps(2.2), withSteps(0.9))).agrees).toBe(false);
    expect(profileAgreement(input(withSteps(2.9), withSteps(2.2))).agrees).toBe(true);
  });

  it('cannot say for metrics that are not times, or traces without step times', () => {
    const mfu = profileAgreement(input(withSteps(2), withSteps(1.5), 'fraction'));
    expect(mfu.agrees).toBeNull();
    expect(mfu.detail).toMatch(/not a time/);
    const whole = withSteps(2, false);
    whole.steps = { ...whole.steps, detector: 'whole-trace' };
    const none = profileAgreement(input(undefined, whole));
    expect(none.agrees).toBeNull();
    expect(none.candidate.tracedMs).toBeNull();
  });
});
