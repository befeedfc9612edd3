/**
 * Taking an agent's change without trusting its repository. The agent works in a repository of its own
 * (Git.cloneForAgent) and may have rewritten anything in it — config, hooks, refs, attributes — so the
 * harness never runs git there. It reads the agent's HEAD from two small files, and copies the working
 * tree's plain files into a worktree the harness owns, where its own git stages and commits them.
 * Links, special files and git's own control files (`.gitattributes` can name filter programs,
 * `.gitmodules` other repositories) are not copied: they are reported, and make the change invalid.
 */
import { constants, copyFileSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { readPlainFile } from '../util/index.js';

export interface SnapshotLimits {
  /** Refuse a file over this size. */
  maxFileBytes: number;
  /** Refuse the tree past this many bytes in all (only copied files count). */
  maxTotalBytes: number;
}

export const DEFAULT_SNAPSHOT_LIMITS: SnapshotLimits = {
  maxFileBytes: 10 * 1024 * 1024,
  maxTotalBytes: 512 * 1024 * 1024,
};

export interface SnapshotResult {
  /** Paths (relative) whose content was copied because it differs. */
  written: string[];
  /** Paths removed from the destination because the agent removed them. */
  removed: string[];
  /** Entries not taken, each "path: why". Any entry here makes the change invalid. */
  refused: string[];
}

/** Names git gives meaning to beyond content: never taken from an agent's tree. */
const CONTROL_FILES = new Set(['.gitattributes', '.gitmodules']);

/**
 * Make `dest` (a worktree the harness owns, at the agent's starting commit) hold the plain files of
 * `src` (the agent's working tree): changed files copied, vanished ones removed. `.git` at the top of
 * either side is left alone; a `.git` anywhere below it is refused (a nested repository). Files git ignores are copied too; staging skips them.
 */
export function snapshotTree(
  src: string,
  dest: string,
  limits: SnapshotLimits = DEFAULT_SNAPSHOT_LIMITS,
): SnapshotResult {
  const result: SnapshotResult = { written: [], removed: [], refused: [] };
  let total = 0;
  const seen = new Set<string>();

  const walk = (rel: string): void => {
    const from = join(src, rel);
    const st = lstatSync(from);
    if (st.isDirectory()) {
      if (rel !== '') mkdirSync(join(dest, rel), { recursive: true });
      for (const name of readdirSync(from).sort()) {
        if (rel === '' && name === '.git') continue;
        if (name === '.git') {
          // A repository inside the tree: its config and attributes (filters, hooks, fsmonitor) would
          // run for whoever runs git there next, outside the sandbox. Never taken, file or folder.
          result.refused.push(`${rel}/.git: a nested git repository is never taken from an agent`);
          continue;
        }
        walk(rel === '' ? name : `${rel}/${name}`);
      }
      return;
    }
    seen.add(rel);
    const base = rel.split('/').pop()!;
    const why = st.isSymbolicLink()
      ? 'a symbolic link'
      : !st.isFile()
        ? 'not a regular file'
        : st.nlink > 1
          ? 'a hard link'
          : CONTROL_FILES.has(base)
            ? `${base} is never taken from an agent (it can make git run programs or fetch other repositories)`
            : st.size > limits.maxFileBytes
              ? `${st.size} bytes, over the ${limits.maxFileBytes}-byte limit per file`
              : total + st.size > limits.maxTotalBytes
                ? `over the ${limits.maxTotalBytes}-byte limit for the whole tree`
                : undefined;
    if (why) {
      result.refused.push(`${rel}: ${why}`);
      return;
    }
    total += st.size;
    const to = join(dest, rel);
    if (sameContent(from, to)) return;
    rmSync(to, { recursive: true, force: true });
    copyFileSync(from, to, constants.COPYFILE_EXCL);
    result.written.push(rel);
  };
  walk('');

  // What the agent deleted: files of the destination it no longer has.
  const prune = (rel: string): void => {
    const at = join(dest, rel);
    const st = lstatSync(at);
    if (st.isDirectory()) {
      for (const name of readdirSync(at).sort()) {
        if (rel === '' && name === '.git') continue;
        prune(rel === '' ? name : `${rel}/${name}`);
      }
      return;
    }
    if (!seen.has(rel) && !result.refused.some((r) => r.startsWith(`${rel}: `))) {
      rmSync(at, { force: true });
      result.removed.push(rel);
    }
  };
  prune('');
  return result;
}

/** Whether `b` is a plain file with the same bytes as plain file `a`. */
function sameContent(a: string, b: string): boolean {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(b);
  } catch {
    return false;
  }
  if (!st.isFile() || st.size !== lstatSync(a).size) return false;
  return readFileSync(a).equals(readFileSync(b));
}

/** The commit an agent's repository is at, read from its HEAD and refs files; undefined when unreadable. */
export function readAgentHead(repo: string): string | undefined {
  const gitDir = join(repo, '.git');
  const head = readSmallFile(join(gitDir, 'HEAD'));
  if (head === undefined) return undefined;
  const sha = /^([0-9a-f]{40})\s*$/.exec(head)?.[1];
  if (sha) return sha;
  const ref = /^ref: (refs\/[A-Za-z0-9._/-]+)\s*$/.exec(head)?.[1];
  if (!ref || ref.split('/').includes('..')) return undefined;
  const loose = readSmallFile(join(gitDir, ref));
  const fromLoose = loose === undefined ? undefined : /^([0-9a-f]{40})\s*$/.exec(loose)?.[1];
  if (fromLoose) return fromLoose;
  const packed = readSmallFile(join(gitDir, 'packed-refs'), 4 * 1024 * 1024);
  for (const line of packed?.split('\n') ?? []) {
    const m = /^([0-9a-f]{40}) (refs\/\S+)$/.exec(line);
    if (m && m[2] === ref) return m[1];
  }
  return undefined;
}

/** A plain file's text (never through a link), or undefined. */
function readSmallFile(path: string, maxBytes = 4096): string | undefined {
  try {
    return readPlainFile(path, maxBytes).toString('utf8');
  } catch {
    return undefined;
  }
}
