/**
 * The processes a loop has running, in a file beside its lock, so that the next loop on the
 * repository ends whatever a killed one left (issue 35). A sandbox dies with the harness by itself
 * (its parent-death signal); this catches the rest: unsandboxed commands, and anything that left its
 * leader's process group behind.
 *
 * Every process `run` starts leads its own session and process group (it is spawned detached), so
 * its pid names the group. A pid is kept with the boot it ran in and its start time from
 * `/proc/<pid>/stat`, so a pid the kernel has since given to another process is never signalled: the
 * group is ended when its leader is the same process, or, with the leader gone, the members still in
 * that session (which the kernel keeps the pid reserved for) that started no earlier than it.
 */
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';

interface Entry {
  pid: number;
  /** Clock ticks since boot at which the process started (`/proc/<pid>/stat`, field 22). */
  start: number;
  command: string;
}

interface LedgerFile {
  schema: 'hillclimb.processes/v1';
  bootId: string;
  processes: Entry[];
}

/** The ledgers open in this process (usually one: the loop's), each with its running processes. */
const open = new Map<string, Map<number, Entry>>();

/** Record every process `run` starts in `file` until the returned function closes it (and removes it). */
export function openProcessLedger(file: string): () => void {
  const entries = new Map<number, Entry>();
  open.set(file, entries);
  write(file, entries);
  return () => {
    open.delete(file);
    rmSync(file, { force: true });
  };
}

/** A process `run` started (called by exec with its pid; the group it leads has the same id). */
export function ledgerStarted(pid: number, command: string): void {
  if (open.size === 0) return;
  const stat = procStat(pid);
  if (stat === undefined) return; // already gone
  for (const [file, entries] of open) {
    entries.set(pid, { pid, start: stat.start, command });
    write(file, entries);
  }
}

/** The process has ended. */
export function ledgerEnded(pid: number): void {
  for (const [file, entries] of open) {
    if (entries.delete(pid)) write(file, entries);
  }
}

export interface Swept {
  /** The pids signalled, and the command that started their group. */
  ended: Array<{ pid: number; command: string }>;
}

/**
 * End what the loop that wrote `file` left running (SIGKILL to every process still in a group it
 * started), then remove the file. Call it only while holding the lock that loop held: its writer is
 * dead. A ledger from another boot, or unreadable, names nothing alive.
 */
export function sweepProcessLedger(file: string): Swept {
  const swept: Swept = { ended: [] };
  if (!existsSync(file)) return swept;
  let ledger: LedgerFile | undefined;
  try {
    ledger = JSON.parse(readFileSync(file, 'utf8')) as LedgerFile;
  } catch {
    ledger = undefined;
  }
  if (ledger?.schema === 'hillclimb.processes/v1' && ledger.bootId === bootId()) {
    const procs = allProcesses();
    for (const e of ledger.processes) {
      const leader = procs.get(e.pid);
      // The pid belongs to another process now: whatever is in its group is not ours.
      if (leader !== undefined && leader.start !== e.start) continue;
      const members = [...procs.values()].filter(
        (p) =>
          !p.zombie &&
          ((p.pid === e.pid && p.start === e.start) ||
            (p.pgid === e.pid && p.sid === e.pid && p.start >= e.start)),
      );
      for (const p of members) kill(p.pid);
      if (members.length > 0) swept.ended.push({ pid: e.pid, command: e.command });
    }
  }
  rmSync(file, { force: true });
  return swept;
}

function write(file: string, entries: Map<number, Entry>): void {
  const doc: LedgerFile = {
    schema: 'hillclimb.processes/v1',
    bootId: bootId(),
    processes: [...entries.values()],
  };
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(doc)}\n`);
  renameSync(tmp, file);
}

let boot: string | undefined;
function bootId(): string {
  boot ??= readOr('/proc/sys/kernel/random/boot_id', 'unknown').trim();
  return boot;
}

interface Proc {
  pid: number;
  zombie: boolean;
  pgid: number;
  sid: number;
  start: number;
}

/** `/proc/<pid>/stat`: fields after the command name (which may hold spaces and parentheses). */
function procStat(pid: number): Proc | undefined {
  const text = readOr(`/proc/${pid}/stat`, '');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): pgrp is field 5, session 6, starttime 22.
  if (fields.length < 20) return undefined;
  return {
    pid,
    zombie: fields[0] === 'Z',
    pgid: Number(fields[2]),
    sid: Number(fields[3]),
    start: Number(fields[19]),
  };
}

function allProcesses(): Map<number, Proc> {
  const out = new Map<number, Proc>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const p = procStat(Number(name));
    if (p) out.set(p.pid, p);
  }
  return out;
}

function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone already, or not ours to signal
  }
}

function readOr(path: string, fallback: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return fallback;
  }
}
