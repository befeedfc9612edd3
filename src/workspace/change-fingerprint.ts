/**
 * A change's fingerprint, for the novelty check: the lines a candidate adds and removes, per file,
 * in order, with blank lines, trailing whitespace, runs of inner whitespace, context and line numbers
 * ignored. The same edit made again — on a champion that moved elsewhere, or split into other hunks —
 * has the same fingerprint, so the loop can refuse it before it costs a measurement. Leading
 * indentation and line order are kept (in Python they change what code does), so an agent cannot
 * hide an honest edit's fingerprint inside a broken one by re-indenting or swapping lines. Renaming a
 * variable is a different change: this is a cheap screen for repeats, not a judge of ideas.
 *
 * A binary file has no lines: its edit is its content before and after, the blob ids of the diff's
 * `index` line. Make the diff with `--full-index` (Git.diff's fullIndex): abbreviated ids grow with the
 * repository, and would give the same change another fingerprint later.
 */
import { createHash } from 'node:crypto';
import { parseUnifiedDiff } from './unified-diff.js';

/** `sha256:<hex>` of a unified diff's normalised edits; undefined when nothing but whitespace changed. */
export function changeFingerprint(diff: string): string | undefined {
  const files = parseUnifiedDiff(diff)
    .map((f) => ({
      path: f.newPath ?? f.oldPath ?? '',
      binary: f.binary,
      blobs: f.blobs,
      removed: f.removed.map(normalise).filter(Boolean),
      added: f.added.map((a) => normalise(a.text)).filter(Boolean),
    }))
    // A file whose lines come back exactly as they were (trailing spaces, blank lines) has no edit.
    .filter((f) => f.binary || f.removed.join('\n') !== f.added.join('\n'))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  if (files.length === 0) return undefined;
  const h = createHash('sha256');
  for (const f of files) {
    h.update(`file ${f.path}${f.binary ? ` binary ${f.blobs?.old ?? '?'}..${f.blobs?.new ?? '?'}` : ''}\n`);
    for (const line of f.removed) h.update(`-${line}\n`);
    for (const line of f.added) h.update(`+${line}\n`);
  }
  return `sha256:${h.digest('hex')}`;
}

/** Leading indentation kept; trailing whitespace dropped; inner runs of whitespace one space. */
function normalise(line: string): string {
  const indent = /^\s*/.exec(line)![0];
  const rest = line.slice(indent.length).trimEnd();
  return rest === '' ? '' : indent + rest.replace(/\s+/g, ' ');
}
