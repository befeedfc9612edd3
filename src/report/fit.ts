/**
 * Fitting a markdown document under a size cap by shrinking whole sections, never by cutting inside
 * a table or code block. Each section comes in variants, fullest first (a shorter table, a note
 * saying what was left out, or nothing); a reduction plan says which section to shrink next. Only if
 * every planned reduction is not enough are trailing sections dropped, and as a last resort the
 * first section is cut on a line boundary.
 */
import { capBody } from '../forge/index.js';

export interface Part {
  key: string;
  /** Fullest first. An empty string leaves the section out. */
  variants: readonly string[];
}

export interface FitResult {
  text: string;
  /** True when anything was shrunk or left out. */
  truncated: boolean;
  /** Keys of the sections that were shrunk or dropped, in the order it happened. */
  reduced: string[];
}

/** How a size is measured: UTF-16 code units (what capBody and GitHub's 65,536 limit use) or bytes. */
export type SizeOf = (text: string) => number;

export const charLength: SizeOf = (text) => text.length;
export const utf8Bytes: SizeOf = (text) => Buffer.byteLength(text, 'utf8');

const SEPARATOR = '\n\n';

/** Plan entries that shrink the section `key` through all its variants: the key once per smaller variant. */
export function shrinkSteps(parts: readonly Part[], key: string): string[] {
  const variants = parts.find((p) => p.key === key)?.variants.length ?? 0;
  return Array.from({ length: Math.max(0, variants - 1) }, () => key);
}

function join(parts: readonly Part[], levels: ReadonlyMap<string, number>): string {
  return parts
    .map((p) => p.variants[Math.min(levels.get(p.key) ?? 0, p.variants.length - 1)] ?? '')
    .filter((t) => t !== '')
    .join(SEPARATOR);
}

/** Note appended when whole trailing sections had to go. */
export function droppedNote(where: string): string {
  return `> **Shortened by hillclimb** to fit the size limit: later sections were left out. ${where}`;
}

/**
 * Join `parts` (blank line between), applying `plan` one step at a time until the text fits in
 * `max`. Each plan entry moves that section to its next variant.
 */
export function fitParts(
  parts: readonly Part[],
  plan: readonly string[],
  max: number,
  opts: { sizeOf?: SizeOf; where?: string } = {},
): FitResult {
  const sizeOf = opts.sizeOf ?? charLength;
  const levels = new Map<string, number>();
  const reduced: string[] = [];
  let text = join(parts, levels);
  for (const key of plan) {
    if (sizeOf(text) <= max) return { text, truncated: reduced.length > 0, reduced };
    const part = parts.find((p) => p.key === key);
    const level = levels.get(key) ?? 0;
    if (!part || level >= part.variants.length - 1) continue;
    levels.set(key, level + 1);
    reduced.push(key);
    text = join(parts, levels);
  }
  if (sizeOf(text) <= max) return { text, truncated: reduced.length > 0, reduced };

  // Drop whole sections from the end, keeping the first, with a note saying so.
  const note = droppedNote(opts.where ?? '');
  const kept = [...parts];
  while (kept.length > 1) {
    const dropped = kept.pop()!;
    reduced.push(dropped.key);
    text = `${join(kept, levels)}${SEPARATOR}${note}`;
    if (sizeOf(text) <= max) return { text, truncated: true, reduced };
  }
  // Even the first section alone is too long: cut it on a line boundary (capBody closes open fences).
  const overshoot = sizeOf(text) - text.length;
  return { text: capBody(text, max - Math.max(0, overshoot)).text, truncated: true, reduced };
}
