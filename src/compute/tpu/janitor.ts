/**
 * The janitor: delete labelled resources whose expiry has passed, so a TPU leaked by a crash, a
 * cancelled workflow or a lost post step still goes away.
 */
import { listNodesArgs, listQueuedResourcesArgs, type TpuLocation } from './commands.js';
import {
  DELETE_TIMEOUT_MS,
  deleteArgs,
  describedState,
  LABEL_EXPIRES,
  LABEL_MARK,
  type TpuContext,
} from './context.js';
import { type GcloudResult, gcloudError, isNotFound } from './gcloud.js';
import { removeRecord } from './state.js';

export interface JanitorAction {
  kind: 'queued-resource' | 'node';
  name: string;
  zone: string;
  reason: string;
  outcome: 'deleted' | 'already-gone' | 'printed' | 'failed';
  error?: string;
}

export interface JanitorReport {
  deleted: JanitorAction[];
  /** Labelled resources left alone, with why. */
  kept: Array<{ kind: JanitorAction['kind']; name: string; zone: string; reason: string }>;
  /** Zones that could not be listed. */
  errors: string[];
}

interface Labelled {
  kind: JanitorAction['kind'];
  name: string;
  zone: string;
  labels: Record<string, string>;
  state?: string;
  queuedResource?: string;
}

const lastSegment = (path: unknown): string =>
  typeof path === 'string' ? (path.split('/').pop() ?? path) : '';

function labelsOf(doc: Record<string, unknown>): Record<string, string> {
  const tpu = doc.tpu as { nodeSpec?: Array<{ node?: { labels?: Record<string, string> } }> } | undefined;
  return { ...(doc.labels as Record<string, string> | undefined), ...tpu?.nodeSpec?.[0]?.node?.labels };
}

/** Why a labelled resource should go, or undefined to keep it. */
function expiryReason(r: Labelled, nowSeconds: number): string | undefined {
  const expires = Number(r.labels[LABEL_EXPIRES]);
  if (Number.isFinite(expires) && expires > 0 && expires <= nowSeconds) {
    return `expired at ${new Date(expires * 1000).toISOString()}`;
  }
  // Failed and suspended queued resources hold quota until deleted, and never come back.
  if (r.kind === 'queued-resource' && (r.state === 'FAILED' || r.state === 'SUSPENDED')) return r.state;
  return undefined;
}

/**
 * Delete every resource labelled hillclimb=1 whose hillclimb-expires label is in the past (and labelled
 * queued resources that are FAILED or SUSPENDED). Nodes that belong to a queued resource go with it.
 * Resources without a readable expiry are kept and reported. In a dry run the deletes are printed.
 */
export async function janitorSweep(ctx: TpuContext, opts: { zones?: string[] } = {}): Promise<JanitorReport> {
  const { config: c, gcloud, logger } = ctx;
  const nowSeconds = Math.floor((ctx.now ?? Date.now)() / 1000);
  const report: JanitorReport = { deleted: [], kept: [], errors: [] };
  for (const zone of opts.zones ?? c.zones) {
    const loc: TpuLocation = { project: c.project, zone };
    const found: Labelled[] = [];
    const qrs = await gcloud.run(listQueuedResourcesArgs(loc), { readOnly: true });
    const nodes = await gcloud.run(listNodesArgs(loc), { readOnly: true });
    for (const [r, what] of [
      [qrs, 'queued resources'],
      [nodes, 'TPU VMs'],
    ] as const) {
      if (r.exitCode !== 0) report.errors.push(`${zone}: cannot list ${what}: ${gcloudError(r)}`);
    }
    for (const doc of qrs.exitCode === 0 ? asList(qrs) : []) {
      found.push({
        kind: 'queued-resource',
        name: lastSegment(doc.name),
        zone,
        labels: labelsOf(doc),
        state: describedState(doc),
      });
    }
    for (const doc of nodes.exitCode === 0 ? asList(nodes) : []) {
      found.push({
        kind: 'node',
        name: lastSegment(doc.name),
        zone,
        labels: labelsOf(doc),
        state: describedState(doc),
        ...(doc.queuedResource ? { queuedResource: lastSegment(doc.queuedResource) } : {}),
      });
    }
    const handled = new Set<string>();
    for (const r of found.filter((f) => f.labels[LABEL_MARK] === '1')) {
      // A node of a queued resource is deleted through the queued resource.
      const target: Labelled =
        r.kind === 'node' && r.queuedResource ? { ...r, kind: 'queued-resource', name: r.queuedResource } : r;
      const key = `${target.kind}/${target.name}`;
      if (handled.has(key)) continue;
      const reason = expiryReason(r, nowSeconds);
      if (!reason) {
        if (r.kind === target.kind) {
          const expires = r.labels[LABEL_EXPIRES];
          report.kept.push({
            kind: r.kind,
            name: r.name,
            zone,
            reason: expires ? `expires ${new Date(Number(expires) * 1000).toISOString()}` : 'no expiry label',
          });
        }
        continue;
      }
      handled.add(key);
      const rec =
        target.kind === 'queued-resource'
          ? { name: target.name, queuedResource: target.name, project: c.project, zone }
          : { name: target.name, project: c.project, zone };
      logger.info(`janitor: deleting ${target.kind} ${target.name} in ${zone} (${reason})`);
      const del = await gcloud.run(deleteArgs(rec), { timeoutMs: DELETE_TIMEOUT_MS });
      const outcome: JanitorAction['outcome'] = del.printed
        ? 'printed'
        : del.exitCode === 0
          ? 'deleted'
          : isNotFound(del)
            ? 'already-gone'
            : 'failed';
      report.deleted.push({
        kind: target.kind,
        name: target.name,
        zone,
        reason,
        outcome,
        ...(outcome === 'failed' ? { error: gcloudError(del) } : {}),
      });
      if (outcome === 'deleted' || outcome === 'already-gone') removeRecord(ctx.stateDir, target.name, zone);
    }
  }
  return report;
}

function asList(r: GcloudResult): Array<Record<string, unknown>> {
  const doc = (() => {
    try {
      return JSON.parse(r.stdout || '[]') as unknown;
    } catch {
      return [];
    }
  })();
  return Array.isArray(doc)
    ? (doc.filter((d) => d && typeof d === 'object') as Array<Record<string, unknown>>)
    : [];
}
