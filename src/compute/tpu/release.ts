/** Release TPU allocations: by record, or by name in every configured zone. */
import { ExitCode, errorMessage, HillclimbError } from '../../util/index.js';
import { DELETE_TIMEOUT_MS, deleteArgs, type TpuContext } from './context.js';
import { gcloudError, isNotFound } from './gcloud.js';
import { readRecords, removeRecord, type TpuAllocation } from './state.js';

export type ReleaseOutcome = 'deleted' | 'already-gone' | 'printed';

/**
 * Delete an allocation (the queued resource with --force, or the node) and forget its record.
 * NOT_FOUND counts as success: a janitor or an earlier release got there first.
 */
export async function releaseTpu(
  ctx: TpuContext,
  rec: Pick<TpuAllocation, 'name' | 'queuedResource' | 'project' | 'zone'>,
): Promise<ReleaseOutcome> {
  const r = await ctx.gcloud.run(deleteArgs(rec), { timeoutMs: DELETE_TIMEOUT_MS });
  if (r.printed) return 'printed';
  const what = rec.queuedResource ? `queued resource ${rec.queuedResource}` : `TPU VM ${rec.name}`;
  if (r.exitCode === 0 || isNotFound(r)) {
    removeRecord(ctx.stateDir, rec.name, rec.zone);
    const outcome = r.exitCode === 0 ? 'deleted' : 'already-gone';
    ctx.logger.info(`tpu: ${what} in ${rec.zone}: ${outcome}`);
    return outcome;
  }
  throw new HillclimbError(`could not release ${what} in ${rec.zone}: ${gcloudError(r)}`, {
    hint: 'the allocation record is kept: retry with `hillclimb tpu release`; the janitor deletes it after its TTL',
    exitCode: ExitCode.infra,
  });
}

export interface ReleaseReport {
  name: string;
  zone: string;
  outcome: ReleaseOutcome | 'not-found' | 'failed';
  error?: string;
}

/**
 * Release what the records say (all of them, or the one named). A name without a record is looked
 * for in every configured zone, as a queued resource and as a node. Never throws for one failure:
 * each is reported, so one stuck resource does not keep the others alive.
 */
export async function releaseRecorded(
  ctx: TpuContext,
  opts: { name?: string } = {},
): Promise<ReleaseReport[]> {
  const records = readRecords(ctx.stateDir).filter((r) => opts.name === undefined || r.name === opts.name);
  const reports: ReleaseReport[] = [];
  for (const rec of records) {
    try {
      reports.push({ name: rec.name, zone: rec.zone, outcome: await releaseTpu(ctx, rec) });
    } catch (e) {
      reports.push({ name: rec.name, zone: rec.zone, outcome: 'failed', error: errorMessage(e) });
    }
  }
  if (opts.name !== undefined && records.length === 0) {
    reports.push(await releaseByName(ctx, opts.name));
  }
  return reports;
}

async function releaseByName(ctx: TpuContext, name: string): Promise<ReleaseReport> {
  const { config: c } = ctx;
  for (const zone of c.zones) {
    for (const rec of [
      { name, queuedResource: name, project: c.project, zone },
      { name, project: c.project, zone },
    ]) {
      const r = await ctx.gcloud.run(deleteArgs(rec), { timeoutMs: DELETE_TIMEOUT_MS });
      if (r.printed) return { name, zone, outcome: 'printed' };
      if (r.exitCode === 0) {
        ctx.logger.info(`tpu: ${name} in ${zone}: deleted`);
        return { name, zone, outcome: 'deleted' };
      }
      if (!isNotFound(r)) return { name, zone, outcome: 'failed', error: gcloudError(r) };
    }
  }
  return { name, zone: c.zones.join(','), outcome: 'not-found' };
}
