/**
 * Lock files: one holder at a time, across processes and between concurrent calls in one process.
 * The file is created with O_EXCL, so exactly one creator wins, and names its holder (pid, host, a
 * token, when). A lock whose holder is gone is stale and taken over: a dead process on this host, a
 * lock older than `staleMs` anywhere, or an empty file left by a holder that died between creating
 * and writing it. A holder on another host (a shared folder) is trusted as alive until `staleMs`.
 *
 * Two ways to hold one: `takeLock` takes it now or throws (the loop: one loop per repository, held for
 * hours), `withFileLock` waits up to `timeoutMs` around a short critical section (the local forge's
 * read-modify-write of its records).
 */
import { randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { HillclimbError } from './errors.js';

/** What a lock file says about its holder. */
export interface LockHolder {
  pid: number;
  host: string;
  token: string;
  /** ISO time the lock was taken ('?' when the file does not say). */
  acquiredAt: string;
}

export interface LockOptions {
  /** A lock older than this is taken over even if its holder looks alive. Default: never. */
  staleMs?: number;
}

export interface WaitingLockOptions extends LockOptions {
  /** Give up after this many ms. Default 30 000. */
  timeoutMs?: number;
  /** Initial wait between attempts (grows to 8×, with jitter). Default 10 ms. */
  pollMs?: number;
}

/** Releases a lock: removes the file if it still names this holder. */
export type ReleaseLock = () => void;

/** A holder that died between creating the lock and writing its content leaves an empty file. */
const EMPTY_LOCK_GRACE_MS = 5_000;
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_POLL_MS = 10;

/**
 * Take the lock now, or throw `busy(holder)` while a live holder has it (default: an error naming the
 * file and the holder).
 */
export function takeLock(
  lockPath: string,
  opts: LockOptions & { busy?: (holder: LockHolder | undefined) => Error } = {},
): ReleaseLock {
  const result = attempt(lockPath, opts.staleMs ?? Number.POSITIVE_INFINITY);
  if (typeof result === 'function') return result;
  throw opts.busy?.(result.holder) ?? busyError(lockPath, result.holder, 'is held');
}

/** Run `fn` holding the lock, waiting up to `timeoutMs` for it. */
export async function withFileLock<T>(
  lockPath: string,
  fn: () => Promise<T>,
  opts: WaitingLockOptions = {},
): Promise<T> {
  const release = await waitForLock(lockPath, opts);
  try {
    return await fn();
  } finally {
    release();
  }
}

async function waitForLock(lockPath: string, opts: WaitingLockOptions): Promise<ReleaseLock> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const basePollMs = opts.pollMs ?? DEFAULT_POLL_MS;
  const staleMs = opts.staleMs ?? Number.POSITIVE_INFINITY;
  const deadline = Date.now() + timeoutMs;
  for (let n = 0; ; n++) {
    const result = attempt(lockPath, staleMs);
    if (typeof result === 'function') return result;
    if (Date.now() >= deadline)
      throw busyError(lockPath, result.holder, `could not be taken within ${timeoutMs} ms`);
    const wait = basePollMs * Math.min(8, 1 + n / 4);
    await sleep(wait / 2 + Math.random() * wait);
  }
}

/** One try: the release when the lock was free (or stale, and taken over), else who holds it. */
function attempt(lockPath: string, staleMs: number): ReleaseLock | { holder: LockHolder | undefined } {
  mkdirSync(dirname(lockPath), { recursive: true });
  // Two tries: the second follows the removal of a stale lock.
  for (let tries = 0; ; tries++) {
    const token = create(lockPath);
    if (token !== undefined) return () => release(lockPath, token);
    const holder = readHolder(lockPath);
    const stale = holder ? isStale(holder, staleMs) : isAbandonedEmptyLock(lockPath);
    if (!stale || tries > 0) return { holder };
    // Re-read right before removing, so a lock just re-taken by someone else is left alone.
    if (readHolder(lockPath)?.token === holder?.token) tryUnlink(lockPath);
  }
}

/** Create the lock file naming this process; its token, or undefined when it exists. */
function create(lockPath: string): string | undefined {
  const holder: LockHolder = {
    pid: process.pid,
    host: hostname(),
    token: randomUUID(),
    acquiredAt: new Date().toISOString(),
  };
  let fd: number;
  try {
    fd = openSync(lockPath, 'wx');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw e;
  }
  try {
    writeSync(fd, `${JSON.stringify(holder)}\n`);
  } finally {
    closeSync(fd);
  }
  return holder.token;
}

function release(lockPath: string, token: string): void {
  if (readHolder(lockPath)?.token === token) tryUnlink(lockPath);
}

/** The holder a lock file names; undefined while it is missing, empty or torn (treated as held). */
function readHolder(lockPath: string): LockHolder | undefined {
  try {
    const r = JSON.parse(readFileSync(lockPath, 'utf8')) as Partial<LockHolder> & { startedAt?: string };
    if (typeof r.pid !== 'number') return undefined;
    // `startedAt`: the loop's lock before it shared this module.
    return {
      pid: r.pid,
      host: r.host ?? '',
      token: r.token ?? '',
      acquiredAt: r.acquiredAt ?? r.startedAt ?? '?',
    };
  } catch {
    return undefined;
  }
}

function isAbandonedEmptyLock(lockPath: string): boolean {
  try {
    return Date.now() - statSync(lockPath).mtimeMs > EMPTY_LOCK_GRACE_MS;
  } catch {
    return false;
  }
}

function isStale(holder: LockHolder, staleMs: number): boolean {
  const age = Date.now() - Date.parse(holder.acquiredAt);
  if (Number.isFinite(age) && age > staleMs) return true;
  if (holder.host !== '' && holder.host !== hostname()) return false;
  return !processAlive(holder.pid);
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

function busyError(lockPath: string, holder: LockHolder | undefined, what: string): HillclimbError {
  return new HillclimbError(
    `the lock ${lockPath} ${what} (held by pid ${holder?.pid ?? '?'} on ${holder?.host || '?'})`,
    { hint: 'if no hillclimb process is running, delete the lock file' },
  );
}
