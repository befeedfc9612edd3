/**
 * Just enough of a unified-diff parser (as printed by `git diff`) for the static scan: per file, the
 * path before and after, whether it is new, deleted or binary, the ADDED lines with their line
 * numbers in the new file, and the removed lines (for the novelty check's fingerprint).
 */

export interface AddedLine {
  /** 1-based line number in the new version of the file. */
  line: number;
  text: string;
}

export interface FileDiff {
  /** Path in the new tree (undefined for a deleted file). */
  newPath: string | undefined;
  /** Path in the old tree (undefined for an added file). */
  oldPath: string | undefined;
  binary: boolean;
  /**
   * The blob ids of the `index <old>..<new>` line (abbreviated unless the diff was made with
   * --full-index; all zeros for an absent side); undefined when the diff has none (a pure rename).
   */
  blobs?: { old: string; new: string };
  added: AddedLine[];
  /** The removed lines' text, in order. */
  removed: string[];
}

export function parseUnifiedDiff(text: string): FileDiff[] {
  const files: FileDiff[] = [];
  let current: FileDiff | undefined;
  let newLine = 0;
  let inHunk = false;
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();

  for (const raw of lines) {
    if (raw.startsWith('diff --git ')) {
      current = {
        ...pathsFromDiffGit(raw.slice('diff --git '.length)),
        binary: false,
        added: [],
        removed: [],
      };
      files.push(current);
      inHunk = false;
      continue;
    }
    if (!current) continue;
    if (inHunk) {
      const c = raw[0];
      if (c === '+') {
        current.added.push({ line: newLine, text: raw.slice(1) });
        newLine++;
        continue;
      }
      if (c === ' ' || raw === '') {
        newLine++;
        continue;
      }
      if (c === '-') {
        current.removed.push(raw.slice(1));
        continue;
      }
      if (c === '\\') continue;
      inHunk = false;
    }
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(raw);
    if (hunk) {
      newLine = Number(hunk[1]);
      inHunk = true;
    } else if (raw.startsWith('--- ')) {
      current.oldPath = stripPrefix(raw.slice(4), 'a/');
    } else if (raw.startsWith('+++ ')) {
      current.newPath = stripPrefix(raw.slice(4), 'b/');
    } else if (raw.startsWith('new file mode')) {
      current.oldPath = undefined;
    } else if (raw.startsWith('deleted file mode')) {
      current.newPath = undefined;
    } else if (raw.startsWith('rename from ')) {
      current.oldPath = unquote(raw.slice('rename from '.length));
    } else if (raw.startsWith('rename to ')) {
      current.newPath = unquote(raw.slice('rename to '.length));
    } else if (raw.startsWith('Binary files ') || raw === 'GIT binary patch') {
      current.binary = true;
    } else if (raw.startsWith('index ')) {
      const ids = /^index ([0-9a-f]+)\.\.([0-9a-f]+)/.exec(raw);
      if (ids) current.blobs = { old: ids[1]!, new: ids[2]! };
    }
  }
  return files;
}

/** `a/x b/y` (either may be C-quoted). Ambiguous with spaces in names; later headers refine it. */
function pathsFromDiffGit(rest: string): { oldPath: string | undefined; newPath: string | undefined } {
  const quoted = /^("(?:[^"\\]|\\.)*"|\S+) ("(?:[^"\\]|\\.)*"|\S+)$/.exec(rest);
  if (quoted) {
    return { oldPath: stripPrefix(quoted[1]!, 'a/'), newPath: stripPrefix(quoted[2]!, 'b/') };
  }
  // Unquoted names with spaces: "a/p q b/p q" — split in the middle.
  const half = (rest.length - 1) / 2;
  return {
    oldPath: stripPrefix(rest.slice(0, half), 'a/'),
    newPath: stripPrefix(rest.slice(half + 1), 'b/'),
  };
}

function stripPrefix(p: string, prefix: string): string | undefined {
  let s = p.replace(/\t.*$/, '');
  if (s === '/dev/null') return undefined;
  s = unquote(s);
  return s.startsWith(prefix) ? s.slice(prefix.length) : s;
}

/** Undo git's C-style quoting of unusual file names ("\303\251", "\t", "\""). */
export function unquote(s: string): string {
  if (!(s.startsWith('"') && s.endsWith('"') && s.length >= 2)) return s;
  const bytes: number[] = [];
  const body = s.slice(1, -1);
  const simple: Record<string, number> = { n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11, '"': 34, '\\': 92 };
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== '\\') {
      bytes.push(...Buffer.from(c, 'utf8'));
      continue;
    }
    const next = body[i + 1] ?? '';
    if (/[0-7]/.test(next)) {
      bytes.push(Number.parseInt(body.slice(i + 1, i + 4), 8));
      i += 3;
    } else {
      bytes.push(simple[next] ?? next.charCodeAt(0));
      i += 1;
    }
  }
  return Buffer.from(bytes).toString('utf8');
}
