/**
 * One loop at a time per repository. Two loops on one machine would benchmark at the same time and
 * disturb each other's numbers, and two writers of one run would corrupt its journal. The lock is a
 * file in the state folder naming the process that holds it; a lock whose process is gone (killed,
 * machine rebooted) is stale and taken over.
 */
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ExitCode, HillclimbError } from '../util/errors.js';

interface LockRecord {
  pid: number;
  host: string;
  startedAt: string;
}

export function lockFile(stateDir: string): string {
  return join(stateDir, 'loop.lock');
}

/** Take the loop lock of `stateDir`; returns its release. @throws HillclimbError while another loop holds it. */
export function acquireLoopLock(stateDir: string): () => void {
  mkdirSync(stateDir, { recursive: true });
  const file = lockFile(stateDir);
  const record: LockRecord = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString() };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, `${JSON.stringify(record)}\n`);
      closeSync(fd);
      return () => rmSync(file, { force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const holder = readHolder(file);
    if (holder && isAlive(holder)) {
      throw new HillclimbError(
        `another hillclimb loop (pid ${holder.pid}, started ${holder.startedAt}) is running on this repository`,
        {
          hint: `two loops on one machine disturb each other's measurements: wait for it, or stop it and resume it later (hillclimb loop --resume); ${file} names it`,
          exitCode: ExitCode.failure,
        },
      );
    }
    rmSync(file, { force: true }); // stale: its process is gone
  }
  throw new HillclimbError(`could not take the loop lock ${file}`, { exitCode: ExitCode.infra });
}

function readHolder(file: string): LockRecord | undefined {
  try {
    const r = JSON.parse(readFileSync(file, 'utf8')) as Partial<LockRecord>;
    return typeof r.pid === 'number'
      ? { pid: r.pid, host: r.host ?? '', startedAt: r.startedAt ?? '?' }
      : undefined;
  } catch {
    return undefined; // torn or empty: written by a process that died while writing it
  }
}

/** Whether the holder still runs. A lock from another host (a shared folder) is trusted as held. */
function isAlive(holder: LockRecord): boolean {
  if (holder.host !== '' && holder.host !== hostname()) return true;
  try {
    process.kill(holder.pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
