/**
 * A lock file that serializes read-modify-write sequences on the local forge's records, across
 * processes and between concurrent calls in one process. Created with O_EXCL, so exactly one holder
 * exists; a lock left by a dead process on this host (or older than `staleMs` anywhere) is taken over.
 */
import { randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { HillclimbError } from '../util/errors.js';

export interface FileLockOptions {
  /** Give up after this many ms. Default 30 000. */
  timeoutMs?: number;
  /** Initial wait between attempts (grows to 8×, with jitter). Default 10 ms. */
  pollMs?: number;
  /** A lock older than this is taken over even if its holder looks alive. Default 10 minutes. */
  staleMs?: number;
}

interface LockContent {
  pid: number;
  host: string;
  token: string;
  acquiredAt: string;
}

export async function withFileLock<T>(
  lockPath: string,
  fn: () => Promise<T>,
  opts: FileLockOptions = {},
): Promise<T> {
  const token = await acquire(lockPath, opts);
  try {
    return await fn();
  } finally {
    release(lockPath, token);
  }
}

async function acquire(lockPath: string, opts: FileLockOptions): Promise<string> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const basePollMs = opts.pollMs ?? 10;
  const staleMs = opts.staleMs ?? 10 * 60_000;
  const token = randomUUID();
  const content: LockContent = { pid: process.pid, host: hostname(), token, acquiredAt: '' };
  mkdirSync(dirname(lockPath), { recursive: true });
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx');
      try {
        writeSync(fd, JSON.stringify({ ...content, acquiredAt: new Date().toISOString() }));
      } finally {
        closeSync(fd);
      }
      return token;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const holder = readHolder(lockPath);
    if (holder ? isStale(holder, staleMs) : isAbandonedEmptyLock(lockPath)) {
      const staleToken = holder?.token;
      // Re-read right before removing, so a lock just re-taken by someone else is left alone.
      if (readHolder(lockPath)?.token === staleToken) tryUnlink(lockPath);
      continue;
    }
    if (Date.now() >= deadline) {
      throw new HillclimbError(
        `could not lock ${lockPath} within ${timeoutMs} ms (held by pid ${holder?.pid ?? '?'} on ${holder?.host ?? '?'})`,
        { hint: 'if no hillclimb process is running, delete the lock file' },
      );
    }
    const wait = basePollMs * Math.min(8, 1 + attempt / 4);
    await sleep(wait / 2 + Math.random() * wait);
  }
}

function release(lockPath: string, token: string): void {
  if (readHolder(lockPath)?.token === token) tryUnlink(lockPath);
}

function readHolder(lockPath: string): LockContent | undefined {
  try {
    return JSON.parse(readFileSync(lockPath, 'utf8')) as LockContent;
  } catch {
    // Missing, or caught between create and write: treat as held, not stale.
    return undefined;
  }
}

/** A holder that died between creating the lock and writing its content leaves an empty file. */
const EMPTY_LOCK_GRACE_MS = 5_000;

function isAbandonedEmptyLock(lockPath: string): boolean {
  try {
    return Date.now() - statSync(lockPath).mtimeMs > EMPTY_LOCK_GRACE_MS;
  } catch {
    return false;
  }
}

function isStale(holder: LockContent, staleMs: number): boolean {
  const age = Date.now() - Date.parse(holder.acquiredAt);
  if (Number.isFinite(age) && age > staleMs) return true;
  return holder.host === hostname() && !processAlive(holder.pid);
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: the process exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function tryUnlink(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Someone else removed it first.
  }
}
