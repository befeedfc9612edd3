/**
 * Reading files that untrusted code could have shaped: a job's outputs, an evidence bundle handed over
 * by another job. Only plain files count. A symbolic link could point the reader at its own secrets
 * (`/proc/self/environ`, a credentials file) and a hard link at a file elsewhere, so both are refused,
 * as are devices, pipes and sockets; sizes are capped so a huge file cannot exhaust memory or disk.
 */
import {
  closeSync,
  constants,
  copyFileSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
} from 'node:fs';
import { join, relative } from 'node:path';

export interface CopyOptions {
  /** Refuse the whole copy past this many bytes in all. Default 2 GiB. */
  maxTotalBytes?: number;
  /** Refuse a single file over this size. Default 1 GiB. */
  maxFileBytes?: number;
  /** Stop after this many files. Default 100,000. */
  maxFiles?: number;
}

export interface CopyResult {
  /** Relative paths copied. */
  copied: string[];
  /** Relative paths left behind, each with the reason. */
  refused: string[];
  bytes: number;
}

const DEFAULTS = { maxTotalBytes: 2 * 1024 ** 3, maxFileBytes: 1024 ** 3, maxFiles: 100_000 };

/** Why `path` is not a plain file hillclimb may read, or undefined when it is one. */
export function notPlainFile(path: string): string | undefined {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(path);
  } catch {
    return 'missing';
  }
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (!st.isFile()) return st.isDirectory() ? 'a folder' : 'not a regular file';
  if (st.nlink > 1) return 'a hard link';
  return undefined;
}

/**
 * Read a plain file (never through a link), at most `maxBytes`. Throws naming the file and why it was
 * refused. The check and the read use one file descriptor opened with O_NOFOLLOW, so the file cannot be
 * swapped for a link in between.
 */
export function readPlainFile(path: string, maxBytes = DEFAULTS.maxFileBytes): Buffer {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new Error(
      `${path}: ${code === 'ELOOP' ? 'a symbolic link' : code === 'ENOENT' ? 'missing' : code}, refused`,
    );
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error(`${path}: not a regular file, refused`);
    if (st.nlink > 1) throw new Error(`${path}: a hard link, refused`);
    if (st.size > maxBytes) throw new Error(`${path}: ${st.size} bytes, over the ${maxBytes}-byte limit`);
    const buf = Buffer.alloc(st.size);
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, off);
      if (n === 0) break;
      off += n;
    }
    return buf.subarray(0, off);
  } finally {
    closeSync(fd);
  }
}

/**
 * Copy the plain files and folders under `src` into `dest` (created), leaving links and special files
 * behind. A `src` that is itself a plain file is copied to `dest`.
 */
export function copyPlainTree(src: string, dest: string, opts: CopyOptions = {}): CopyResult {
  const limits = { ...DEFAULTS, ...opts };
  const result: CopyResult = { copied: [], refused: [], bytes: 0 };
  const visit = (from: string, to: string): void => {
    const rel = relative(src, from) || '.';
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(from);
    } catch {
      result.refused.push(`${rel}: vanished`);
      return;
    }
    if (st.isDirectory()) {
      mkdirSync(to, { recursive: true });
      for (const name of readdirSync(from).sort()) {
        // A line break or other control character in a name makes manifests and logs ambiguous.
        // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
        if (/[\u0000-\u001f\u007f]/.test(name))
          result.refused.push(`${JSON.stringify(name)}: a control character in its name`);
        else visit(join(from, name), join(to, name));
      }
      return;
    }
    const why = notPlainFile(from);
    if (why) {
      result.refused.push(`${rel}: ${why}`);
      return;
    }
    if (result.copied.length >= limits.maxFiles) {
      result.refused.push(`${rel}: over the ${limits.maxFiles}-file limit`);
      return;
    }
    if (st.size > limits.maxFileBytes || result.bytes + st.size > limits.maxTotalBytes) {
      result.refused.push(`${rel}: ${st.size} bytes, over the size limit`);
      return;
    }
    // COPYFILE_EXCL: never write through something already at the destination.
    copyFileSync(from, to, constants.COPYFILE_EXCL);
    result.copied.push(rel);
    result.bytes += st.size;
  };
  visit(src, dest);
  return result;
}
