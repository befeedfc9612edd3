import { describe, expect, it } from 'vitest';
import {
  formatCv,
  formatDuration,
  formatMetricChange,
  formatMfu,
  formatMfuDelta,
  formatPercentWithCi,
  formatRatio,
  formatSignedPercent,
  formatSignedValue,
  formatSignificant,
  formatTime,
  formatValue,
  iterationTag,
  metricChangePct,
  shortSha,
  truncateText,
} from '../../src/report/format.js';

describe('metric values', () => {
  it('keep four significant digits without exponents', () => {
    expect(formatValue(12.3149, 'ms')).toBe('12.31 ms');
    expect(formatValue(0.51234, 'ms')).toBe('0.5123 ms');
    expect(formatValue(123.44, 'ms')).toBe('123.4 ms');
    expect(formatValue(12345.6, 'ms')).toBe('12346 ms');
    expect(formatValue(0.00001234, 'ms')).toBe('0.000012 ms');
    expect(formatValue(2.5, '')).toBe('2.500');
    expect(formatValue(1.5, 'TFLOP/s')).toBe('1.500 TFLOP/s');
  });

  it('round across a power of ten without gaining a digit', () => {
    expect(formatSignificant(9.99996)).toBe('10.00');
    expect(formatSignificant(99.996)).toBe('100.0');
  });

  it('sign deltas with a real minus and no negative zero', () => {
    expect(formatSignedValue(-1.31, 'ms')).toBe('−1.310 ms');
    expect(formatSignedValue(0.2, 'ms')).toBe('+0.2000 ms');
    expect(formatSignedValue(0, 'ms')).toBe('0.000 ms');
    expect(formatSignedPercent(-0.04)).toBe('0.0%');
    expect(formatSignedPercent(12.345)).toBe('+12.3%');
  });
});

describe('percentages and ratios', () => {
  it('MFU as a percent with two decimals, deltas in points', () => {
    expect(formatMfu(0.3833)).toBe('38.33%');
    expect(formatMfuDelta(0.312, 0.3833)).toBe('+7.13 pp');
    expect(formatMfuDelta(0.3833, 0.312)).toBe('−7.13 pp');
  });

  it('deltas with their CI as in the brief', () => {
    expect(formatPercentWithCi(12.34, { lo: 10.06, hi: 14.41 })).toBe('+12.3% [+10.1%, +14.4%]');
    expect(formatRatio(1.22854)).toBe('1.229×');
    expect(formatCv(0.0214)).toBe('2.1%');
  });

  it('turns an improvement ratio into the metric’s own change, swapping the interval for time', () => {
    // Time 12.31 → 10.02 ms: speedup 1.2285, the time fell 18.6%.
    expect(formatMetricChange(12.31 / 10.02, { lo: 1.2048, hi: 1.2516 }, 'lower')).toBe(
      '−18.6% [−20.1%, −17.0%]',
    );
    expect(formatMetricChange(1.1, { lo: 1.05, hi: 1.15 }, 'higher')).toBe('+10.0% [+5.0%, +15.0%]');
    const c = metricChangePct(2, { lo: 1.5, hi: 4 }, 'lower');
    expect(c.pct).toBeCloseTo(-50);
    expect(c.ci.lo).toBeCloseTo(-75);
    expect(c.ci.hi).toBeCloseTo(-100 / 3);
  });
});

describe('other values', () => {
  it('durations pick their unit', () => {
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(41_200)).toBe('41.2 s');
    expect(formatDuration(252_000)).toBe('4 min 12 s');
    expect(formatDuration(3_725_000)).toBe('1 h 02 min');
    expect(formatDuration(-1)).toBe('—');
  });

  it('commits, times, tags and shortened text', () => {
    expect(shortSha('1a2b3c4d5e6f708192a3')).toBe('1a2b3c4d5e');
    expect(formatTime('2026-11-21T23:58:12.000Z')).toBe('2026-11-21 23:58 UTC');
    expect(formatTime('not a time')).toBe('not a time');
    expect(iterationTag(3)).toBe('i003');
    expect(truncateText('abcdef', 4)).toBe('abc…');
    expect(truncateText('abc', 4)).toBe('abc');
  });
});
