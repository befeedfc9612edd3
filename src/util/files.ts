/** Small, careful file helpers: atomic replace, durable append, JSON in and out, content hashes. */
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeSync,
} from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { InputError } from './errors.js';

/** The sha256 of a file's bytes, hex. */
export function sha256File(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

/** Write a file so readers see the old or the new content, never a torn one. */
export function writeFileAtomic(path: string, data: string | Buffer): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}-${Date.now()}`;
  const fd = openSync(tmp, 'w');
  try {
    if (typeof data === 'string') writeSync(fd, data);
    else writeSync(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

export function writeJsonAtomic(path: string, value: unknown): void {
  writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`);
}

/** Append one line and flush it to disk, so a killed process loses at most the line being written. */
export function appendLineDurable(path: string, line: string): void {
  mkdirSync(dirname(path), { recursive: true });
  const fd = openSync(path, 'a');
  try {
    writeSync(fd, line.endsWith('\n') ? line : `${line}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Why a file could not be read, without repeating its path. */
export function readProblem(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EISDIR') return 'is a directory';
  if (code === 'EACCES') return 'permission denied';
  return err instanceof Error ? err.message : String(err);
}

/** Read a text file; an unreadable one is an InputError naming the file, what it was, and why. */
export async function readTextFile(file: string, what: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    throw new InputError(file, `cannot read ${what}: ${readProblem(err)}`, { cause: err });
  }
}

/** Read and parse a JSON file; errors name the file. */
export function readJson<T>(path: string): T {
  if (!existsSync(path)) throw new InputError(path, 'file not found');
  const text = readFileSync(path, 'utf8');
  try {
    return JSON.parse(text) as T;
  } catch (e) {
    throw new InputError(path, `invalid JSON: ${(e as Error).message}`);
  }
}

/**
 * Read a JSON-lines file. A torn last line (the process died mid-write) is dropped and reported;
 * a bad line anywhere else is an error naming the file and line.
 */
export function readJsonLines<T>(path: string): { rows: T[]; tornTail: boolean } {
  if (!existsSync(path)) return { rows: [], tornTail: false };
  const lines = readFileSync(path, 'utf8').split('\n');
  const rows: T[] = [];
  let tornTail = false;
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      rows.push(JSON.parse(line) as T);
    } catch {
      const isLast = lines.slice(i + 1).every((l) => l.trim() === '');
      if (isLast) tornTail = true;
      else throw new InputError(path, `line ${i + 1} is not valid JSON`);
    }
  });
  return { rows, tornTail };
}
