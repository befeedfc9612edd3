/**
 * The TPU lifecycle as plain functions (the `tpu-vm` backend, the `hillclimb tpu` verbs and the `tpu`
 * action all call these): allocate with zone fallback, run the setup command, release, describe,
 * and sweep expired resources.
 *
 * Every allocation carries labels `hillclimb=1`, `hillclimb-run=<run id>` and
 * `hillclimb-expires=<epoch seconds>`; the janitor deletes labelled resources whose expiry has passed,
 * so a TPU leaked by a crash, a cancelled workflow or a lost post step still goes away.
 */
import { fillCommand } from '../../config/command.js';
import type { TpuVmConfig } from '../../config/types.js';
import { ExitCode, errorMessage, HillclimbError } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import { gcpResourceName, labelValue } from '../names.js';
import { sleep as defaultSleep } from '../wait.js';
import {
  createNodeArgs,
  createQueuedResourceArgs,
  deleteNodeArgs,
  deleteQueuedResourceArgs,
  describeNodeArgs,
  describeQueuedResourceArgs,
  listNodesArgs,
  listQueuedResourcesArgs,
  sshArgs,
  type TpuLocation,
  usesQueuedResource,
} from './commands.js';
import {
  type Gcloud,
  type GcloudResult,
  gcloudError,
  isAlreadyExists,
  isCapacityError,
  isFatalError,
  isNotFound,
} from './gcloud.js';
import { setupScript } from './remote.js';
import { readRecords, removeRecord, type TpuAllocation, writeRecord } from './state.js';

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

/** Queued-resource states that will never become ACTIVE: delete and move on. */
const QR_DEAD = new Set(['FAILED', 'SUSPENDED', 'SUSPENDING', 'DELETING']);
/** Node states that will never become READY by waiting. */
const NODE_DEAD = new Set(['PREEMPTED', 'TERMINATED', 'STOPPED', 'STOPPING', 'DELETING', 'HIDDEN', 'HIDING']);
const CREATE_TIMEOUT_MS = 15 * 60_000;
const DELETE_TIMEOUT_MS = 5 * 60_000;
const SETUP_TIMEOUT_MS = 60 * 60_000;
/** Consecutive describe failures tolerated while waiting (gcloud hiccups, token refresh). */
const MAX_DESCRIBE_FAILURES = 5;

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

function parseJson(r: GcloudResult): Record<string, unknown> | undefined {
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

function deleteArgs(rec: Pick<TpuAllocation, 'name' | 'queuedResource' | 'project' | 'zone'>): string[] {
  const loc = { project: rec.project, zone: rec.zone };
  return rec.queuedResource
    ? deleteQueuedResourceArgs(loc, rec.queuedResource)
    : deleteNodeArgs(loc, rec.name);
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
