/** Describe TPU allocations: the recorded ones, or a named resource in every configured zone. */
import { describeNodeArgs, describeQueuedResourceArgs } from './commands.js';
import { describedState, parseJson, type TpuContext } from './context.js';
import { gcloudError, isNotFound } from './gcloud.js';
import { readRecords, type TpuAllocation } from './state.js';

export interface TpuStatus {
  name: string;
  zone: string;
  /** ACTIVE, READY, WAITING_FOR_RESOURCES, … or NOT_FOUND. */
  state: string;
  record?: TpuAllocation;
  /** The node's health and IP addresses, when it exists. */
  health?: string;
  endpoints?: string[];
}

/** Describe the recorded allocations (or the named resource, in every configured zone). */
export async function tpuStatus(ctx: TpuContext, opts: { name?: string } = {}): Promise<TpuStatus[]> {
  const records = readRecords(ctx.stateDir).filter((r) => opts.name === undefined || r.name === opts.name);
  const targets: Array<{ name: string; zone: string; queuedResource?: string; record?: TpuAllocation }> =
    records.length > 0
      ? records.map((r) => ({ name: r.name, zone: r.zone, queuedResource: r.queuedResource, record: r }))
      : opts.name !== undefined
        ? ctx.config.zones.map((zone) => ({ name: opts.name!, zone, queuedResource: opts.name }))
        : [];
  const out: TpuStatus[] = [];
  for (const t of targets) {
    const loc = { project: ctx.config.project, zone: t.zone };
    let state = 'NOT_FOUND';
    if (t.queuedResource) {
      const q = await ctx.gcloud.run(describeQueuedResourceArgs(loc, t.queuedResource), { readOnly: true });
      if (q.exitCode === 0) state = describedState(parseJson(q)) ?? 'UNKNOWN';
      else if (!isNotFound(q)) state = `ERROR: ${gcloudError(q)}`;
    }
    const n = await ctx.gcloud.run(describeNodeArgs(loc, t.name), { readOnly: true });
    const node = n.exitCode === 0 ? parseJson(n) : undefined;
    if (!t.queuedResource) {
      if (node) state = describedState(node) ?? 'UNKNOWN';
      else if (!isNotFound(n)) state = `ERROR: ${gcloudError(n)}`;
    }
    if (!t.record && state === 'NOT_FOUND' && !node) continue; // not in this zone
    const endpoints = ((node?.networkEndpoints as Array<{ ipAddress?: string }> | undefined) ?? [])
      .map((e) => e.ipAddress)
      .filter((ip): ip is string => typeof ip === 'string');
    out.push({
      name: t.name,
      zone: t.zone,
      state,
      ...(t.record ? { record: t.record } : {}),
      ...(typeof node?.health === 'string' ? { health: node.health } : {}),
      ...(endpoints.length > 0 ? { endpoints } : {}),
    });
  }
  return out;
}
