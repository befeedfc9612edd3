/**
 * A change's fingerprint, for the novelty check: the lines a candidate adds and removes, per file,
 * with whitespace, blank lines, context and line numbers ignored. The same edit made again — on a
 * champion that moved elsewhere, re-indented, or split into other hunks — has the same fingerprint,
 * so the loop can refuse it before it costs a measurement. Renaming a variable is a different change:
 * this is a cheap screen for repeats, not a judge of ideas.
 */
import { createHash } from 'node:crypto';
import { parseUnifiedDiff } from './unified-diff.js';

/** `sha256:<hex>` of a unified diff's normalised edits; undefined when nothing but whitespace changed. */
export function changeFingerprint(diff: string): string | undefined {
  const files = parseUnifiedDiff(diff)
    .map((f) => ({
      path: f.newPath ?? f.oldPath ?? '',
      binary: f.binary,
      ...cancelWhitespaceEdits(
        f.removed.map(normalise).filter(Boolean),
        f.added.map((a) => normalise(a.text)).filter(Boolean),
      ),
    }))
    .filter((f) => f.binary || f.removed.length > 0 || f.added.length > 0)
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  if (files.length === 0) return undefined;
  const h = createHash('sha256');
  for (const f of files) {
    h.update(`file ${f.path}${f.binary ? ' binary' : ''}\n`);
    for (const line of f.removed) h.update(`-${line}\n`);
    for (const line of f.added) h.update(`+${line}\n`);
  }
  return `sha256:${h.digest('hex')}`;
}

function normalise(line: string): string {
  return line.replace(/\s+/g, '');
}

/** A line removed and added again with other whitespace is no edit: drop both copies. */
function cancelWhitespaceEdits(removed: string[], added: string[]): { removed: string[]; added: string[] } {
  const left = new Map<string, number>();
  for (const line of added) left.set(line, (left.get(line) ?? 0) + 1);
  const keptRemoved: string[] = [];
  const cancelled = new Map<string, number>();
  for (const line of removed) {
    const n = left.get(line) ?? 0;
    if (n > 0) {
      left.set(line, n - 1);
      cancelled.set(line, (cancelled.get(line) ?? 0) + 1);
    } else keptRemoved.push(line);
  }
  const keptAdded = added.filter((line) => {
    const n = cancelled.get(line) ?? 0;
    if (n === 0) return true;
    cancelled.set(line, n - 1);
    return false;
  });
  return { removed: keptRemoved, added: keptAdded };
}
