/**
 * A sample of this machine's load counters, taken around a verifier session that shares its cores (the
 * local backend). Read from the kernel, never from the session; evidence/machine-load.ts turns two
 * samples into the session's load.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { type MachineSample, parseProcStat } from '../evidence/index.js';

export function sampleMachine(): MachineSample {
  let ticks: MachineSample['ticks'] = null;
  try {
    ticks = parseProcStat(readFileSync('/proc/stat', 'utf8'));
  } catch {
    // not Linux: the load average alone
  }
  return { load1: loadavg()[0] ?? 0, cpus: availableParallelism(), ticks };
}
