/**
 * How busy a machine was while a verifier session ran on it, from two samples of the kernel's counters
 * (compute/machine-load.ts takes them): the 1-minute load average and the CPU time the hypervisor took
 * from the VM (`steal`). A verdict measured on a busy machine says so (report/measurement.ts), beside the
 * clock that decided, so that nobody mistakes a preempted wall clock for a kernel's speed.
 */
import type { MachineLoad } from './record.js';

export interface MachineSample {
  /** 1-minute load average. */
  load1: number;
  /** Cores this process may use. */
  cpus: number;
  /** Jiffies of steal and of all CPU time since boot (null where /proc/stat cannot be read). */
  ticks: { steal: number; total: number } | null;
}

/** user nice system idle iowait irq softirq steal: the fields of the `cpu` line that add up to the time. */
const TIME_FIELDS = 8;
const STEAL_FIELD = 7;

/** The `cpu` line of /proc/stat, as its time fields; null when unreadable or unexpected. */
export function parseProcStat(text: string): { steal: number; total: number } | null {
  const line = text.split('\n').find((l) => l.startsWith('cpu '));
  if (!line) return null;
  const fields = line.trim().split(/\s+/).slice(1).map(Number);
  if (fields.length < TIME_FIELDS || fields.slice(0, TIME_FIELDS).some((f) => !Number.isFinite(f)))
    return null;
  const time = fields.slice(0, TIME_FIELDS);
  return { steal: time[STEAL_FIELD]!, total: time.reduce((s, f) => s + f, 0) };
}

/** Load over a session: the mean of the load averages at its ends, per core, and the share stolen. */
export function machineLoadBetween(before: MachineSample, after: MachineSample): MachineLoad {
  const load = (before.load1 + after.load1) / 2;
  const elapsed = before.ticks && after.ticks ? after.ticks.total - before.ticks.total : 0;
  const stealShare =
    before.ticks && after.ticks && elapsed > 0 ? (after.ticks.steal - before.ticks.steal) / elapsed : null;
  return {
    load: round(load, 2),
    cpus: after.cpus,
    loadPerCore: round(load / Math.max(1, after.cpus), 2),
    stealShare: stealShare === null ? null : round(Math.max(0, stealShare), 4),
  };
}

/** The busiest of several sessions' loads (highest load per core, and the most stolen). */
export function busiest(loads: readonly MachineLoad[]): MachineLoad | undefined {
  if (loads.length === 0) return undefined;
  const top = loads.reduce((x, y) => (y.loadPerCore > x.loadPerCore ? y : x));
  const steals = loads.flatMap((l) => (l.stealShare === null ? [] : [l.stealShare]));
  return { ...top, stealShare: steals.length === 0 ? null : Math.max(...steals) };
}

/** A load per core at or above this is a busy machine: other work wants every core the session has. */
export const BUSY_LOAD_PER_CORE = 1;
/** A hypervisor that takes this share of the CPU makes any clock on it suspect. */
export const BUSY_STEAL_SHARE = 0.05;

export function isBusy(load: MachineLoad): boolean {
  return load.loadPerCore >= BUSY_LOAD_PER_CORE || (load.stealShare ?? 0) >= BUSY_STEAL_SHARE;
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
