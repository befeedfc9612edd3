/**
 * What every TPU lifecycle job shares: the context they run in (config, gcloud, logger, records), the
 * names and labels of a run's resources, reading gcloud's describe output, and the delete command.
 */
import type { TpuVmConfig } from '../../config/index.js';
import type { Logger } from '../../util/index.js';
import { gcpResourceName, labelValue } from '../names.js';
import { deleteNodeArgs, deleteQueuedResourceArgs, usesQueuedResource } from './commands.js';
import type { Gcloud, GcloudResult } from './gcloud.js';
import type { TpuAllocation } from './state.js';

export interface TpuContext {
  config: TpuVmConfig;
  gcloud: Gcloud;
  logger: Logger;
  /** Folder of allocation records (see tpuStateDir). */
  stateDir: string;
  /** Clock, for tests. Default Date.now. */
  now?: () => number;
  /** Pause, for tests. Default a real timer. */
  sleep?: (ms: number) => Promise<void>;
}

export const LABEL_MARK = 'hillclimb';
export const LABEL_RUN = 'hillclimb-run';
export const LABEL_EXPIRES = 'hillclimb-expires';

/** How long one delete (a node, or a queued resource with --force) may take. */
export const DELETE_TIMEOUT_MS = 5 * 60_000;

/**
 * The default run id: HILLCLIMB_RUN_ID, else the GitHub run id and attempt (so a re-run attempt gets
 * fresh names but a retried step finds its own), else a local timestamp.
 */
export function defaultRunId(env: NodeJS.ProcessEnv = process.env, now = new Date()): string {
  if (env.HILLCLIMB_RUN_ID) return env.HILLCLIMB_RUN_ID;
  if (env.GITHUB_RUN_ID) return `gh${env.GITHUB_RUN_ID}-${env.GITHUB_RUN_ATTEMPT ?? '1'}`;
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `local-${stamp.toLowerCase()}`;
}

/** Node and queued-resource names for a run; `generation` > 1 after a lost TPU was replaced. */
export function tpuNames(c: TpuVmConfig, runId: string, generation = 1): { node: string; qr?: string } {
  const node = gcpResourceName(c.name_prefix, runId, generation > 1 ? `g${generation}` : '');
  return usesQueuedResource(c) ? { node, qr: node } : { node };
}

export function tpuLabels(runId: string, expiresAt: number): Record<string, string> {
  return { [LABEL_MARK]: '1', [LABEL_RUN]: labelValue(runId), [LABEL_EXPIRES]: String(expiresAt) };
}

export function parseJson(r: GcloudResult): Record<string, unknown> | undefined {
  try {
    return JSON.parse(r.stdout) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** state.state of a queued resource, or state of a node, from `describe --format=json`. */
export function describedState(doc: Record<string, unknown> | undefined): string | undefined {
  const s = doc?.state;
  if (typeof s === 'string') return s;
  if (s && typeof s === 'object' && typeof (s as { state?: unknown }).state === 'string') {
    return (s as { state: string }).state;
  }
  return undefined;
}

export function deleteArgs(
  rec: Pick<TpuAllocation, 'name' | 'queuedResource' | 'project' | 'zone'>,
): string[] {
  const loc = { project: rec.project, zone: rec.zone };
  return rec.queuedResource
    ? deleteQueuedResourceArgs(loc, rec.queuedResource)
    : deleteNodeArgs(loc, rec.name);
}
