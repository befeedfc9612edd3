/**
 * Number formatting for every report. One place, so the same number renders the same in a PR title,
 * a comment, a log entry and the terminal; `hillclimb log lint` relies on that when it re-renders an
 * entry and compares its numbers. Negative numbers use the minus sign (U+2212), and a value that
 * rounds to zero carries no sign.
 */
import type { Direction, Interval } from '../stats/index.js';

export const MINUS = '\u2212';
export const EM_DASH = '\u2014';

/** Significant digits of metric values and op times (12.31 ms, 0.5123 ms, 123.4 ms). */
const VALUE_DIGITS = 4;
/** Commit SHAs are shortened to this many hex digits. */
export const SHORT_SHA_LENGTH = 10;

/** `-1.5` → `−1.5`; `-0.0` → `0.0`. The input is already a formatted decimal. */
function withMinus(text: string): string {
  if (!text.startsWith('-')) return text;
  const body = text.slice(1);
  return /^[0.]+$/.test(body) ? body : `${MINUS}${body}`;
}

/** Fixed decimals with the minus sign and no negative zero. */
export function formatFixed(value: number, decimals: number): string {
  return withMinus(value.toFixed(decimals));
}

/** Like formatFixed, with an explicit `+` for positive values (zero stays unsigned). */
export function formatSignedFixed(value: number, decimals: number): string {
  const text = formatFixed(value, decimals);
  return text.startsWith(MINUS) || /^[0.]+$/.test(text) ? text : `+${text}`;
}

/** Decimals that give `digits` significant digits for |value|, never fewer than 0 nor more than 6. */
function decimalsFor(value: number, digits: number): number {
  const abs = Math.abs(value);
  if (abs === 0 || !Number.isFinite(abs)) return digits - 1;
  const magnitude = Math.floor(Math.log10(abs));
  // Rounding can carry into the next power of ten (9.9996 → 10.00); decide on the rounded value.
  const rounded = Number(abs.toFixed(Math.max(0, Math.min(6, digits - 1 - magnitude))));
  const m = rounded === 0 ? magnitude : Math.floor(Math.log10(rounded));
  return Math.max(0, Math.min(6, digits - 1 - m));
}

/** A plain number with 4 significant digits and no exponent: 12.31, 0.5123, 1235. */
export function formatSignificant(value: number, digits: number = VALUE_DIGITS): string {
  if (!Number.isFinite(value)) return String(value);
  return formatFixed(value, decimalsFor(value, digits));
}

/** A metric value with its unit: `12.31 ms`, `1.234 TFLOP/s`, `0.5123` (no unit). */
export function formatValue(value: number, unit: string): string {
  const number = formatSignificant(value);
  if (unit === '') return number;
  return unit === '%' ? `${number}%` : `${number} ${unit}`;
}

/** A signed change in a unit: `+0.5000 ms`, `−1.310 ms`. */
export function formatSignedValue(delta: number, unit: string): string {
  const number = formatSignificant(delta);
  const signed = number.startsWith(MINUS) || /^[0.]+$/.test(number) ? number : `+${number}`;
  if (unit === '') return signed;
  return unit === '%' ? `${signed}%` : `${signed} ${unit}`;
}

/** A fraction as a percent: 0.3833 → `38.33%` (2 decimals unless told). */
export function formatPercent(fraction: number, decimals = 2): string {
  return `${formatFixed(fraction * 100, decimals)}%`;
}

/** MFU (a fraction) as a percent with 2 decimals. */
export function formatMfu(fraction: number): string {
  return formatPercent(fraction, 2);
}

/** A change in MFU between two fractions, in percentage points: `+7.13 pp`. */
export function formatMfuDelta(before: number, after: number): string {
  return `${formatSignedFixed((after - before) * 100, 2)} pp`;
}

/** A coefficient of variation (a fraction) as a percent with 1 decimal: `2.1%`. */
export function formatCv(fraction: number): string {
  return formatPercent(fraction, 1);
}

/** A signed percent (the input is already in percent): `+12.3%`, `−18.6%`. */
export function formatSignedPercent(percent: number, decimals = 1): string {
  return `${formatSignedFixed(percent, decimals)}%`;
}

/** A signed percent with its interval: `+12.3% [+10.1%, +14.4%]`. */
export function formatPercentWithCi(percent: number, ci: Interval): string {
  return `${formatSignedPercent(percent)} [${formatSignedPercent(ci.lo)}, ${formatSignedPercent(ci.hi)}]`;
}

/** A ratio: `1.229×`. */
export function formatRatio(ratio: number): string {
  return `${formatFixed(ratio, 3)}×`;
}

/** A ratio with its interval: `1.229× [1.201×, 1.258×]`. */
export function formatRatioWithCi(ratio: number, ci: Interval): string {
  return `${formatRatio(ratio)} [${formatRatio(ci.lo)}, ${formatRatio(ci.hi)}]`;
}

/** The first 10 hex digits of a commit. */
export function shortSha(sha: string): string {
  return sha.slice(0, SHORT_SHA_LENGTH);
}

/** A duration: `850 ms`, `41.2 s`, `4 min 12 s`, `1 h 02 min`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return EM_DASH;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const totalSeconds = Math.round(seconds);
  if (totalSeconds < 3600) return `${Math.floor(totalSeconds / 60)} min ${totalSeconds % 60} s`;
  const totalMinutes = Math.round(totalSeconds / 60);
  return `${Math.floor(totalMinutes / 60)} h ${String(totalMinutes % 60).padStart(2, '0')} min`;
}

/** An ISO 8601 time in UTC to the minute: `2026-11-21 23:58 UTC`; the input when it is not a time. */
export function formatTime(iso: string): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/**
 * The iteration tag used in branch names, bundle keys and progress lines: 3 → `i003`; the second
 * candidate of iteration 3 (loop.candidates > 1) → `i003-c2`.
 */
export function iterationTag(key: number | { iteration: number; slot?: { index: number } }): string {
  const k = typeof key === 'number' ? { iteration: key } : key;
  const tag = `i${String(k.iteration).padStart(3, '0')}`;
  return k.slot ? `${tag}-c${k.slot.index}` : tag;
}

/** `1 test`, `2 tests`. */
export function plural(count: number, noun: string, pluralNoun = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : pluralNoun}`;
}

/**
 * How the metric itself changed, in percent, from an improvement ratio (> 1 better, as in
 * stats/compare-arms.ts). For a 'lower' metric such as time the ratio is A/B, so the value changed by
 * 1/ratio − 1 and the interval's ends swap; for 'higher' the change is ratio − 1.
 */
export function metricChangePct(
  ratio: number,
  ci: Interval,
  direction: Direction,
): { pct: number; ci: Interval } {
  if (direction === 'higher')
    return { pct: (ratio - 1) * 100, ci: { lo: (ci.lo - 1) * 100, hi: (ci.hi - 1) * 100 } };
  return { pct: (1 / ratio - 1) * 100, ci: { lo: (1 / ci.hi - 1) * 100, hi: (1 / ci.lo - 1) * 100 } };
}

/** `−18.6% [−20.1%, −17.0%]` for the metric's own change; see metricChangePct. */
export function formatMetricChange(ratio: number, ci: Interval, direction: Direction): string {
  const change = metricChangePct(ratio, ci, direction);
  return formatPercentWithCi(change.pct, change.ci);
}

/** One line of text: newlines and runs of whitespace become single spaces. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Shorten to `max` code points, ending with `…` when cut. */
export function truncateText(text: string, max: number): string {
  const chars = [...text];
  if (chars.length <= max) return text;
  return `${chars.slice(0, Math.max(0, max - 1)).join('')}…`;
}
