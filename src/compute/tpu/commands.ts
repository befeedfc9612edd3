/**
 * gcloud argument arrays for the TPU lifecycle. Pure functions: what they return is exactly what runs
 * (or what a dry run prints). Every command names --zone and --project explicitly, so nothing depends
 * on the caller's gcloud defaults.
 */
import type { TpuVmConfig } from '../../config/index.js';

export interface TpuLocation {
  project: string;
  zone: string;
}

const where = (l: TpuLocation): string[] => ['--zone', l.zone, '--project', l.project];

/** `k=v,k=v` with keys sorted, as --labels wants. */
export function labelsFlag(labels: Record<string, string>): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(',');
}

/** Whether a config allocates through a queued resource (queued, flex-start) or a direct TPU VM create. */
export function usesQueuedResource(c: TpuVmConfig): boolean {
  return c.provisioning === 'queued' || c.provisioning === 'flex-start';
}

const TIER_FLAGS: Record<TpuVmConfig['queued_tier'], string[]> = {
  'on-demand': [],
  spot: ['--spot'],
  reserved: ['--reserved'],
  guaranteed: ['--guaranteed'],
};

/**
 * `queued-resources create`. The request stays valid for ready_timeout_minutes (after that it would
 * be filled when nobody waits for it); flex-start adds the server-side run limit of ttl_hours.
 */
export function createQueuedResourceArgs(
  c: TpuVmConfig,
  zone: string,
  qr: string,
  node: string,
  labels: Record<string, string>,
): string[] {
  const flex = c.provisioning === 'flex-start';
  return [
    ...(flex ? ['alpha'] : []),
    'compute',
    'tpus',
    'queued-resources',
    'create',
    qr,
    '--node-id',
    node,
    ...where({ project: c.project, zone }),
    '--accelerator-type',
    c.accelerator_type,
    '--runtime-version',
    c.runtime_version,
    ...(flex
      ? ['--provisioning-model', 'flex-start', '--max-run-duration', `${Math.round(c.ttl_hours * 3600)}s`]
      : TIER_FLAGS[c.queued_tier]),
    '--valid-until-duration',
    `${Math.round(c.ready_timeout_minutes * 60)}s`,
    ...identityArgs(c),
    '--labels',
    labelsFlag(labels),
    ...c.create_args,
    '--quiet',
  ];
}

/** `tpu-vm create` (on-demand or spot), waiting for the create operation to finish. */
export function createNodeArgs(
  c: TpuVmConfig,
  zone: string,
  node: string,
  labels: Record<string, string>,
): string[] {
  return [
    'compute',
    'tpus',
    'tpu-vm',
    'create',
    node,
    ...where({ project: c.project, zone }),
    '--accelerator-type',
    c.accelerator_type,
    '--version',
    c.runtime_version,
    ...(c.provisioning === 'spot' ? ['--spot'] : []),
    ...identityArgs(c),
    '--labels',
    labelsFlag(labels),
    ...c.create_args,
    '--quiet',
  ];
}

/**
 * Who the VM is to Google Cloud. Candidate code runs there and can ask the metadata server for the VM's
 * token, so the VM runs as an account of its own with no roles and the narrowest scopes, never as the
 * project's default compute service account (Editor on many projects).
 */
function identityArgs(c: TpuVmConfig): string[] {
  return ['--service-account', serviceAccountEmail(c), '--scopes', c.scopes.join(',')];
}

/** `hillclimb-tpu` → `hillclimb-tpu@<project>.iam.gserviceaccount.com`; an email stays as it is. */
export function serviceAccountEmail(c: Pick<TpuVmConfig, 'service_account' | 'project'>): string {
  return c.service_account.includes('@')
    ? c.service_account
    : `${c.service_account}@${c.project}.iam.gserviceaccount.com`;
}

export function describeQueuedResourceArgs(l: TpuLocation, qr: string): string[] {
  return ['compute', 'tpus', 'queued-resources', 'describe', qr, ...where(l), '--format=json'];
}

export function describeNodeArgs(l: TpuLocation, node: string): string[] {
  return ['compute', 'tpus', 'tpu-vm', 'describe', node, ...where(l), '--format=json'];
}

/** Deletes the queued resource and, with --force, its nodes. --async: returns once accepted. */
export function deleteQueuedResourceArgs(l: TpuLocation, qr: string): string[] {
  return ['compute', 'tpus', 'queued-resources', 'delete', qr, ...where(l), '--force', '--async', '--quiet'];
}

export function deleteNodeArgs(l: TpuLocation, node: string): string[] {
  return ['compute', 'tpus', 'tpu-vm', 'delete', node, ...where(l), '--async', '--quiet'];
}

export function listQueuedResourcesArgs(l: TpuLocation): string[] {
  return ['compute', 'tpus', 'queued-resources', 'list', ...where(l), '--format=json'];
}

export function listNodesArgs(l: TpuLocation): string[] {
  return ['compute', 'tpus', 'tpu-vm', 'list', ...where(l), '--format=json', '--filter=labels.hillclimb=1'];
}

/** `tpu-vm ssh` running `command` (a shell string, every argument in it quoted) on `worker`. */
export function sshArgs(
  l: TpuLocation,
  node: string,
  worker: 'all' | number,
  command: string,
  extra: readonly string[] = [],
): string[] {
  return [
    'compute',
    'tpus',
    'tpu-vm',
    'ssh',
    node,
    ...where(l),
    `--worker=${worker}`,
    '--command',
    command,
    '--quiet',
    ...extra,
  ];
}

/** `tpu-vm scp`; a remote path is written `<node>:<path>` (relative to the remote home). */
export function scpArgs(
  l: TpuLocation,
  sources: readonly string[],
  destination: string,
  worker: 'all' | number,
  extra: readonly string[] = [],
): string[] {
  return [
    'compute',
    'tpus',
    'tpu-vm',
    'scp',
    ...sources,
    destination,
    ...where(l),
    `--worker=${worker}`,
    '--quiet',
    ...extra,
  ];
}
