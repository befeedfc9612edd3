/**
 * Taking an agent's change without trusting its repository. The agent works in a repository of its own
 * (Git.cloneForAgent) and may have rewritten anything in it — config, hooks, refs, attributes — so the
 * harness never runs git there. It reads the agent's HEAD from two small files, and copies the working
 * tree's plain files into a worktree the harness owns, where its own git stages and commits them.
 * Links, special files and git's own control files (`.gitattributes` can name filter programs,
 * `.gitmodules` other repositories) are not copied: they are reported, and make the change invalid.
 */
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  type Stats,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { readPlainFile } from '../util/index.js';

export interface SnapshotLimits {
  /** Refuse a file over this size. */
  maxFileBytes: number;
  /** Refuse the tree past this many bytes in all (only copied files count). */
  maxTotalBytes: number;
  /**
   * Refuse the tree past this many files and folders: empty files count for nothing against the bytes,
   * and the walk is synchronous (a tool call's snapshot holds the harness while it runs).
   */
  maxEntries: number;
}

export const DEFAULT_SNAPSHOT_LIMITS: SnapshotLimits = {
  maxFileBytes: 10 * 1024 * 1024,
  maxTotalBytes: 512 * 1024 * 1024,
  maxEntries: 100_000,
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
  let entries = 0;
  const seen = new Set<string>();

  // The agent may still be running (a tool call snapshots a live tree), so any check of a path can be
  // raced: every entry is opened once, without following a link, and checked and read through that
  // descriptor; a folder's entries are opened through the folder's descriptor, never its path again.
  const walk = (rel: string, dir: number): void => {
    for (const name of readdirSync(entryPath(dir)).sort()) {
      const path = rel === '' ? name : `${rel}/${name}`;
      if (rel === '' && name === '.git') continue;
      if (++entries > limits.maxEntries) throw new TooManyEntries();
      if (name === '.git') {
        // A repository inside the tree: its config and attributes (filters, hooks, fsmonitor) would
        // run for whoever runs git there next, outside the sandbox. Never taken, file or folder.
        result.refused.push(`${path}: a nested git repository is never taken from an agent`);
        continue;
      }
      const opened = openEntry(entryPath(dir, name));
      if (typeof opened === 'string') {
        seen.add(path);
        result.refused.push(`${path}: ${opened}`);
        continue;
      }
      try {
        const st = fstatSync(opened);
        if (st.isDirectory()) {
          mkdirSync(join(dest, path), { recursive: true });
          walk(path, opened);
        } else {
          seen.add(path);
          take(path, name, opened, st);
        }
      } finally {
        folderPaths.delete(opened);
        closeSync(opened);
      }
    }
  };

  const take = (rel: string, name: string, fd: number, st: Stats): void => {
    const why = !st.isFile()
      ? 'not a regular file'
      : st.nlink > 1
        ? 'a hard link'
        : CONTROL_FILES.has(name)
          ? `${name} is never taken from an agent (it can make git run programs or fetch other repositories)`
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
    const bytes = readAtMost(fd, st.size); // a file still growing is taken as it was checked
    const to = join(dest, rel);
    if (sameContent(bytes, to)) return;
    rmSync(to, { recursive: true, force: true });
    writeFileSync(to, bytes, { flag: 'wx', mode: st.mode & 0o777 });
    result.written.push(rel);
  };

  const root = openSync(src, constants.O_RDONLY | constants.O_DIRECTORY);
  if (!byDescriptor) folderPaths.set(root, src);
  try {
    walk('', root);
  } catch (e) {
    if (!(e instanceof TooManyEntries)) throw e;
    result.refused.push(`.: more than ${limits.maxEntries} files and folders (the limit); nothing was taken`);
    return result;
  } finally {
    folderPaths.delete(root);
    closeSync(root);
  }

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
    if (!seen.has(rel)) {
      rmSync(at, { force: true });
      result.removed.push(rel);
    }
  };
  prune('');
  return result;
}

/** The walk's way out when the tree has more entries than the limit. */
class TooManyEntries extends Error {}

/**
 * The path of an open folder (or of an entry in it) that names the folder by its descriptor, so the
 * entry is looked up in the folder that was opened and checked (openat), wherever it has been moved
 * and whatever now sits at its old path. Linux's /proc; elsewhere the caller's own path is all there is.
 */
const byDescriptor = existsSync('/proc/self/fd');
const folderPaths = new Map<number, string>();
function entryPath(dir: number, name?: string): string {
  const base = byDescriptor ? `/proc/self/fd/${dir}` : folderPaths.get(dir)!;
  return name === undefined ? base : `${base}/${name}`;
}

/** An entry opened without following a link and without waiting (a pipe), or why it cannot be. */
function openEntry(path: string): number | string {
  let fd: number;
  try {
    // Refused before it is opened: what an open could act on (a pipe's writer, a device's driver).
    const st = lstatSync(path);
    if (st.isSymbolicLink()) return 'a symbolic link';
    if (!st.isFile() && !st.isDirectory()) return 'not a regular file';
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') return 'a symbolic link';
    return code === 'ENOENT' ? 'removed while it was taken' : `cannot be opened (${code})`;
  }
  if (!byDescriptor) folderPaths.set(fd, path);
  return fd;
}

/** At most `size` bytes from the start of an open file. */
function readAtMost(fd: number, size: number): Buffer {
  const buf = Buffer.alloc(size);
  let off = 0;
  while (off < size) {
    const n = readSync(fd, buf, off, size - off, off);
    if (n === 0) break;
    off += n;
  }
  return buf.subarray(0, off);
}

/** Whether `file` (the harness's) is a plain file holding exactly `bytes`. */
function sameContent(bytes: Buffer, file: string): boolean {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(file);
  } catch {
    return false;
  }
  return st.isFile() && st.size === bytes.length && readFileSync(file).equals(bytes);
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
