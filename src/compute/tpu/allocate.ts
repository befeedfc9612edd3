/**
 * Allocate a TPU VM with zone fallback, and run its setup command once it is up. An allocation record
 * is written before anything is created, so a crash leaves something to release (release.ts).
 */
import { fillCommand } from '../../config/index.js';
import { ExitCode, errorMessage, HillclimbError } from '../../util/index.js';
import { sleep as defaultSleep } from '../wait.js';
import {
  createNodeArgs,
  createQueuedResourceArgs,
  describeNodeArgs,
  describeQueuedResourceArgs,
  sshArgs,
} from './commands.js';
import {
  DELETE_TIMEOUT_MS,
  deleteArgs,
  describedState,
  parseJson,
  type TpuContext,
  tpuLabels,
  tpuNames,
} from './context.js';
import { gcloudError, isAlreadyExists, isCapacityError, isFatalError, isNotFound } from './gcloud.js';
import { setupScript } from './remote.js';
import { removeRecord, type TpuAllocation, writeRecord } from './state.js';

/** Queued-resource states that will never become ACTIVE: delete and move on. */
const QR_DEAD = new Set(['FAILED', 'SUSPENDED', 'SUSPENDING', 'DELETING']);
/** Node states that will never become READY by waiting. */
const NODE_DEAD = new Set(['PREEMPTED', 'TERMINATED', 'STOPPED', 'STOPPING', 'DELETING', 'HIDDEN', 'HIDING']);
const CREATE_TIMEOUT_MS = 15 * 60_000;
const SETUP_TIMEOUT_MS = 60 * 60_000;
/** Consecutive describe failures tolerated while waiting (gcloud hiccups, token refresh). */
const MAX_DESCRIBE_FAILURES = 5;

export interface AllocateOptions {
  runId: string;
  owner: TpuAllocation['owner'];
  /** > 1 when replacing a lost TPU of the same run. Default 1. */
  generation?: number;
  /** Run compute.tpu_vm.setup_command once the TPU is up. Default true. */
  setup?: boolean;
}

/** `leftover`: something was created in the zone and could not be deleted (its record is kept). */
type ZoneOutcome = { ok: true } | { ok: false; fatal: boolean; reason: string; leftover?: boolean };

/** The failure message a FAILED queued resource carries, if any. */
function failureDetail(doc: Record<string, unknown> | undefined): string {
  const state = doc?.state as { failedData?: { error?: { message?: string } } } | undefined;
  return state?.failedData?.error?.message ?? '';
}

/**
 * Allocate a TPU VM: for each pass (compute.tpu_vm.allocate_attempts), try each zone in order; a
 * capacity/quota failure, a FAILED/SUSPENDED queued resource or a wait beyond ready_timeout_minutes
 * moves on to the next zone (deleting what was created), a permission or credential error stops at
 * once. A create that finds the resource already there (a retried allocate of the same run) waits for
 * it instead. Writes an allocation record before creating anything.
 */
export async function allocateTpu(ctx: TpuContext, opts: AllocateOptions): Promise<TpuAllocation> {
  const { config: c, gcloud, logger } = ctx;
  const now = ctx.now ?? Date.now;
  const pause = ctx.sleep ?? defaultSleep;
  const names = tpuNames(c, opts.runId, opts.generation);
  const expiresAt = Math.floor(now() / 1000) + Math.round(c.ttl_hours * 3600);
  const labels = tpuLabels(opts.runId, expiresAt);
  const failures: string[] = [];

  for (let pass = 1; pass <= c.allocate_attempts; pass++) {
    for (const zone of c.zones) {
      const record: TpuAllocation = {
        name: names.node,
        ...(names.qr ? { queuedResource: names.qr } : {}),
        project: c.project,
        zone,
        acceleratorType: c.accelerator_type,
        runtimeVersion: c.runtime_version,
        provisioning: c.provisioning,
        runId: opts.runId,
        owner: opts.owner,
        state: 'creating',
        setupDone: false,
        createdAt: new Date(now()).toISOString(),
        expiresAt,
      };
      if (!gcloud.dryRun) writeRecord(ctx.stateDir, record);
      logger.info(
        `tpu: requesting ${c.accelerator_type} as ${names.qr ?? names.node} in ${zone} (${c.provisioning})`,
      );
      const outcome = await tryZone(ctx, record, labels);
      if (outcome.ok) {
        record.state = 'active';
        if (!gcloud.dryRun) writeRecord(ctx.stateDir, record);
        logger.info(`tpu: ${record.name} is up in ${zone}`);
        if (opts.setup !== false) await runSetup(ctx, record);
        return record;
      }
      failures.push(`${zone} (pass ${pass}): ${outcome.reason}`);
      if (!gcloud.dryRun && !outcome.leftover) removeRecord(ctx.stateDir, record.name, zone);
      if (outcome.fatal) {
        throw new HillclimbError(`TPU allocation stopped: ${outcome.reason}`, {
          hint: 'check the credentials and IAM roles (roles/tpu.admin) of the account gcloud uses',
          exitCode: ExitCode.infra,
        });
      }
      logger.warn(`tpu: ${zone}: ${outcome.reason}; trying the next zone`);
    }
    if (pass < c.allocate_attempts) {
      logger.info(`tpu: no zone had capacity; retrying in ${c.retry_backoff_seconds} s`);
      await pause(c.retry_backoff_seconds * 1000);
    }
  }
  throw new HillclimbError(
    `no ${c.accelerator_type} TPU in ${c.zones.join(', ')} after ${c.allocate_attempts} pass(es):\n  ${failures.join('\n  ')}`,
    {
      hint: 'add zones to compute.tpu_vm.zones, raise allocate_attempts, or try provisioning: queued/flex-start',
      exitCode: ExitCode.infra,
    },
  );
}

async function tryZone(
  ctx: TpuContext,
  rec: TpuAllocation,
  labels: Record<string, string>,
): Promise<ZoneOutcome> {
  const { config: c, gcloud, logger } = ctx;
  const queued = rec.queuedResource !== undefined;
  const create = queued
    ? createQueuedResourceArgs(c, rec.zone, rec.queuedResource!, rec.name, labels)
    : createNodeArgs(c, rec.zone, rec.name, labels);
  const r = await gcloud.run(create, { timeoutMs: CREATE_TIMEOUT_MS });
  if (r.printed) {
    // Dry run: show the wait and the setup that would follow, then report success.
    const loc = { project: rec.project, zone: rec.zone };
    await gcloud.run(
      queued ? describeQueuedResourceArgs(loc, rec.queuedResource!) : describeNodeArgs(loc, rec.name),
    );
    return { ok: true };
  }
  if (r.exitCode !== 0) {
    if (isAlreadyExists(r)) {
      logger.info(`tpu: ${rec.queuedResource ?? rec.name} already exists in ${rec.zone}; waiting for it`);
    } else if (isFatalError(r)) {
      return { ok: false, fatal: true, reason: gcloudError(r) };
    } else {
      // A failed direct create can leave a broken node behind; a queued one leaves nothing to delete.
      const clean = queued || (await deleteQuietly(ctx, rec));
      const kind = isCapacityError(r) ? 'no capacity' : 'create failed';
      return { ok: false, fatal: false, reason: `${kind}: ${gcloudError(r)}`, leftover: !clean };
    }
  }
  return waitUntilUp(ctx, rec);
}

/** Poll describe until ACTIVE (queued) / READY (node), a dead state, or ready_timeout_minutes. */
async function waitUntilUp(ctx: TpuContext, rec: TpuAllocation): Promise<ZoneOutcome> {
  const { config: c, gcloud, logger } = ctx;
  const now = ctx.now ?? Date.now;
  const pause = ctx.sleep ?? defaultSleep;
  const queued = rec.queuedResource !== undefined;
  const loc = { project: rec.project, zone: rec.zone };
  const deadline = now() + c.ready_timeout_minutes * 60_000;
  let failures = 0;
  let last = '';
  for (;;) {
    const d = await gcloud.run(
      queued ? describeQueuedResourceArgs(loc, rec.queuedResource!) : describeNodeArgs(loc, rec.name),
      { readOnly: true, timeoutMs: 2 * 60_000 },
    );
    if (d.exitCode !== 0) {
      if (isNotFound(d)) return { ok: false, fatal: false, reason: 'the resource disappeared while waiting' };
      failures += 1;
      if (failures >= MAX_DESCRIBE_FAILURES) {
        const clean = await deleteQuietly(ctx, rec);
        return {
          ok: false,
          fatal: false,
          reason: `describe keeps failing: ${gcloudError(d)}`,
          leftover: !clean,
        };
      }
    } else {
      failures = 0;
      const doc = parseJson(d);
      const state = describedState(doc) ?? 'UNKNOWN';
      if (state !== last) logger.info(`tpu: ${rec.queuedResource ?? rec.name} in ${rec.zone}: ${state}`);
      last = state;
      if ((queued && state === 'ACTIVE') || (!queued && state === 'READY')) return { ok: true };
      if (queued ? QR_DEAD.has(state) : NODE_DEAD.has(state)) {
        const clean = state === 'DELETING' || (await deleteQuietly(ctx, rec));
        const detail = failureDetail(doc);
        return {
          ok: false,
          fatal: false,
          reason: `${state}${detail ? `: ${detail}` : ''}`,
          leftover: !clean,
        };
      }
    }
    if (now() >= deadline) {
      const clean = await deleteQuietly(ctx, rec);
      return {
        ok: false,
        fatal: false,
        reason: `not up after ${c.ready_timeout_minutes} min (last state ${last || 'unknown'})`,
        leftover: !clean,
      };
    }
    await pause(c.poll_seconds * 1000);
  }
}

/** Delete what a failed attempt created; true when nothing is left behind. */
async function deleteQuietly(ctx: TpuContext, rec: TpuAllocation): Promise<boolean> {
  const r = await ctx.gcloud.run(deleteArgs(rec), { timeoutMs: DELETE_TIMEOUT_MS });
  if (r.exitCode === 0 || isNotFound(r)) return true;
  ctx.logger.warn(
    `tpu: could not delete ${rec.queuedResource ?? rec.name} in ${rec.zone}: ${gcloudError(r)}`,
  );
  return false;
}

/** Run compute.tpu_vm.setup_command on every worker, once. Throws (infra) when it fails. */
export async function runSetup(ctx: TpuContext, rec: TpuAllocation): Promise<void> {
  const { config: c, gcloud, logger } = ctx;
  if (!c.setup_command || rec.setupDone) return;
  let command: string[];
  try {
    command = fillCommand(c.setup_command, { python: c.python });
  } catch (e) {
    throw new HillclimbError(`compute.tpu_vm.setup_command: ${errorMessage(e)}`, {
      exitCode: ExitCode.badInput,
    });
  }
  logger.info(`tpu: running setup_command on ${rec.name}`);
  const loc = { project: rec.project, zone: rec.zone };
  const r = await gcloud.run(sshArgs(loc, rec.name, 'all', setupScript(command), c.ssh_args), {
    timeoutMs: SETUP_TIMEOUT_MS,
    onLine: (l) => logger.debug(l),
  });
  if (r.exitCode !== 0) {
    throw new HillclimbError(`setup_command failed on ${rec.name}: ${gcloudError(r)}`, {
      hint: 'run it by hand with `gcloud compute tpus tpu-vm ssh` to see why, then fix compute.tpu_vm.setup_command',
      exitCode: ExitCode.infra,
    });
  }
  rec.setupDone = true;
  if (!gcloud.dryRun) writeRecord(ctx.stateDir, rec);
}
