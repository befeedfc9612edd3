/**
 * Numbers with units in log text (`12.31 ms`, `−18.6%`, `1.229×`, `38.33% MFU`, `123 TFLOP/s`), in a
 * normal form so the same quantity compares equal however it was typed: the sign is dropped (a person
 * may write "18.6% faster" for −18.6%), thousands separators and trailing zeros do not matter
 * (`10 ms` = `10.00 ms`), and unit spellings are unified (`us` = `µs`, `x` = `×`).
 */

const UNITS = [
  'TFLOP/s',
  'GFLOP/s',
  'tokens/s',
  'tok/s',
  'GB/s',
  'MFU',
  'pp',
  'ms',
  'µs',
  'μs',
  'us',
  'ns',
  'min',
  's',
  'h',
  '%',
  '×',
  'x',
];

const NUMBER = String.raw`[+\-−±]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?`;
const UNIT = UNITS.map((u) => u.replace(/[/]/g, '\\/')).join('|');
/** A number not glued to a word or another number, then an optional space, then a unit not followed by a letter or digit. */
const QUANTITY = new RegExp(String.raw`(?<![\w.])(${NUMBER})\s?(${UNIT})(?![A-Za-z0-9])`, 'g');

function normalUnit(unit: string): string {
  if (unit === 'us' || unit === 'μs') return 'µs';
  if (unit === '×') return 'x';
  if (unit === 'tokens/s') return 'tok/s';
  return unit.toLowerCase();
}

function normalNumber(text: string): string {
  const digits = text.replace(/^[+\-−±]/, '').replaceAll(',', '');
  return String(Number(digits));
}

export interface Quantity {
  /** As written. */
  text: string;
  /** Normal form for comparison, e.g. `18.6%`, `12.31ms`. */
  key: string;
}

/** Every number-with-unit in `text`, in order. */
export function quantities(text: string): Quantity[] {
  return [...text.matchAll(QUANTITY)].map((m) => ({
    text: m[0],
    key: `${normalNumber(m[1]!)}${normalUnit(m[2]!)}`,
  }));
}

/** The normal forms of every number-with-unit in `texts`. */
export function quantityKeys(texts: readonly string[]): Set<string> {
  return new Set(texts.flatMap((t) => quantities(t).map((q) => q.key)));
}
