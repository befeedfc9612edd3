/**
 * What hillclimb has allocated, on disk (`<state_dir>/tpu/<name>.<zone>.json`), so `hillclimb tpu release` can
 * release after a crash and a backend can attach to a TPU that `hillclimb tpu allocate` (or the `tpu`
 * action) holds. A record is written before the first create call and removed only after a
 * successful delete.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TpuProvisioning } from '../../config/index.js';

export interface TpuAllocation {
  /** TPU VM (node) name. */
  name: string;
  /** Queued resource id, when allocated through one. */
  queuedResource?: string;
  project: string;
  zone: string;
  acceleratorType: string;
  runtimeVersion: string;
  provisioning: TpuProvisioning;
  runId: string;
  /** Who allocated it: the CLI/action (held across jobs, released by `tpu release`) or a backend. */
  owner: 'cli' | 'backend';
  /** 'creating' until the TPU reached ACTIVE/READY. */
  state: 'creating' | 'active';
  setupDone: boolean;
  createdAt: string;
  /** Epoch seconds; also the hillclimb-expires label. */
  expiresAt: number;
}

export function tpuStateDir(stateDir: string): string {
  return join(stateDir, 'tpu');
}

const recordFile = (dir: string, name: string, zone: string): string => join(dir, `${name}.${zone}.json`);

export function writeRecord(dir: string, record: TpuAllocation): void {
  mkdirSync(dir, { recursive: true });
  const file = recordFile(dir, record.name, record.zone);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(record, null, 2)}\n`);
  renameSync(tmp, file);
}

export function readRecords(dir: string): TpuAllocation[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.json'));
  } catch {
    return [];
  }
  const records: TpuAllocation[] = [];
  for (const n of names.sort()) {
    try {
      records.push(JSON.parse(readFileSync(join(dir, n), 'utf8')) as TpuAllocation);
    } catch {
      // A torn or foreign file is not ours to act on.
    }
  }
  return records;
}

export function removeRecord(dir: string, name: string, zone: string): void {
  rmSync(recordFile(dir, name, zone), { force: true });
}
