// The one lock-file implementation (src/util/lock.ts), used by the loop (takeLock: one loop per
// repository) and the local forge (withFileLock: its records' read-modify-write).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HillclimbError } from '../../src/util/errors.js';
import { takeLock, withFileLock } from '../../src/util/lock.js';
import { tempDir } from '../helpers/paths.js';

const t = tempDir('hc-lock-');
afterAll(t.cleanup);
let n = 0;
const lockPath = () => join(t.dir, `sub${++n}`, 'x.lock');

/** A pid that is certainly not running: a process that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '']);
  return r.pid!;
}

function holder(pid: number, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    pid,
    host: hostname(),
    token: 'theirs',
    acquiredAt: new Date().toISOString(),
    ...extra,
  });
}

describe('takeLock', () => {
  it('has one holder at a time, names it in the file, and releases only its own lock', () => {
    const path = lockPath();
    const release = takeLock(path);
    const record = JSON.parse(readFileSync(path, 'utf8'));
    expect(record).toMatchObject({ pid: process.pid, host: hostname() });
    expect(record.token).toMatch(/^[0-9a-f-]{36}$/);
    const err = (() => {
      try {
        takeLock(path);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(HillclimbError);
    expect((err as HillclimbError).message).toContain(path);
    expect((err as HillclimbError).message).toContain(`pid ${process.pid}`);
    release();
    expect(existsSync(path)).toBe(false);
    // A release after someone else took the lock leaves theirs alone.
    const again = takeLock(path);
    writeFileSync(path, holder(process.pid));
    again();
    expect(existsSync(path)).toBe(true);
  });

  it('throws the caller’s error while a live holder has it', () => {
    const path = lockPath();
    const release = takeLock(path);
    expect(() => takeLock(path, { busy: (h) => new Error(`busy since ${h?.acquiredAt}`) })).toThrow(
      /^busy since 20/,
    );
    release();
  });

  it('takes over a lock whose process is gone, including one in the old loop-lock format', () => {
    const path = lockPath();
    takeLock(path); // creates the folder
    writeFileSync(path, holder(deadPid()));
    takeLock(path)();
    writeFileSync(path, JSON.stringify({ pid: deadPid(), host: hostname(), startedAt: 'earlier' }));
    const release = takeLock(path);
    expect(JSON.parse(readFileSync(path, 'utf8')).pid).toBe(process.pid);
    release();
  });

  it('trusts a holder on another host until staleMs, and takes over an old lock when staleMs says so', () => {
    const path = lockPath();
    takeLock(path)();
    const old = new Date(Date.now() - 60_000).toISOString();
    writeFileSync(path, holder(deadPid(), { host: 'elsewhere', acquiredAt: old }));
    expect(() => takeLock(path)).toThrow(/on elsewhere/);
    takeLock(path, { staleMs: 30_000 })();
    // A live holder on this host is taken over only for its age.
    writeFileSync(path, holder(process.pid, { acquiredAt: old }));
    expect(() => takeLock(path)).toThrow(HillclimbError);
    takeLock(path, { staleMs: 30_000 })();
  });

  it('treats an empty lock as being written for 5 s, then as abandoned', () => {
    const path = lockPath();
    takeLock(path)();
    writeFileSync(path, '');
    expect(() => takeLock(path)).toThrow(/pid \?/);
    const past = new Date(Date.now() - 10_000);
    utimesSync(path, past, past);
    takeLock(path)();
  });
});

describe('withFileLock', () => {
  it('serializes concurrent critical sections in one process', async () => {
    const path = lockPath();
    const counter = join(t.dir, 'counter');
    writeFileSync(counter, '0');
    await Promise.all(
      Array.from({ length: 8 }, () =>
        withFileLock(path, async () => {
          const v = Number(readFileSync(counter, 'utf8'));
          await new Promise((r) => setTimeout(r, 2));
          writeFileSync(counter, String(v + 1));
        }),
      ),
    );
    expect(readFileSync(counter, 'utf8')).toBe('8');
    expect(existsSync(path)).toBe(false);
  });

  it('gives up on a live holder after timeoutMs, naming the file, and releases after a throw', async () => {
    const path = lockPath();
    const release = takeLock(path);
    const err = await withFileLock(path, async () => 1, { timeoutMs: 50 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HillclimbError);
    expect((err as HillclimbError).message).toMatch(/could not be taken within 50 ms/);
    expect((err as HillclimbError).message).toContain(path);
    expect((err as HillclimbError).hint).toMatch(/delete the lock file/);
    release();
    await expect(withFileLock(path, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(existsSync(path)).toBe(false);
  });

  it('waits for a holder that lets go', async () => {
    const path = lockPath();
    const release = takeLock(path);
    setTimeout(release, 30);
    expect(await withFileLock(path, async () => 'mine', { timeoutMs: 5_000 })).toBe('mine');
  });
});
