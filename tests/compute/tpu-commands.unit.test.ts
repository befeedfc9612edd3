import { describe, expect, it } from 'vitest';
import {
  createNodeArgs,
  createQueuedResourceArgs,
  deleteNodeArgs,
  deleteQueuedResourceArgs,
  describeNodeArgs,
  describeQueuedResourceArgs,
  labelsFlag,
  listNodesArgs,
  listQueuedResourcesArgs,
  scpArgs,
  sshArgs,
} from '../../src/compute/tpu/commands.js';
import { tpuLabels, tpuNames } from '../../src/compute/tpu/lifecycle.js';
import { killScript, runScript, setupScript } from '../../src/compute/tpu/remote.js';
import type { TpuVmConfig } from '../../src/config/types.js';
import { configWith } from './helpers.js';

function tpu(extra = ''): TpuVmConfig {
  const c = configWith(
    `  backend: tpu-vm\n  tpu_vm:\n    project: hc-proj\n    zones: [us-east5-a, us-central1-b]\n    accelerator_type: v5p-8\n    runtime_version: v2-alpha-tpuv5\n${extra}`,
  );
  return c.compute.tpu_vm!;
}

const LABELS = tpuLabels('gh42-1', 1_800_000_000);
const L = 'hillclimb=1,hillclimb-expires=1800000000,hillclimb-run=gh42-1';
const LOC = { project: 'hc-proj', zone: 'us-east5-a' };

describe('TPU config defaults', () => {
  it('fills every new compute.tpu_vm and compute.ray key from the schema', () => {
    expect(tpu()).toMatchObject({
      provisioning: 'queued',
      queued_tier: 'on-demand',
      ttl_hours: 4,
      name_prefix: 'hillclimb',
      ready_timeout_minutes: 30,
      python: 'python3',
      allocate_attempts: 2,
      retry_backoff_seconds: 60,
      poll_seconds: 15,
      ssh_args: [],
      create_args: [],
    });
    const ray = configWith('  backend: ray\n  ray:\n    address: http://127.0.0.1:8265\n').compute.ray!;
    expect(ray).toMatchObject({
      poll_seconds: 2,
      python: 'python',
      pending_timeout_minutes: 15,
      max_output_mb: 32,
    });
    expect(ray.token_env).toBeUndefined();
  });

  it('rejects a bad queued tier and a token_env that is not a variable name', () => {
    expect(() => tpu('    queued_tier: platinum\n')).toThrow(/queued_tier/);
    expect(() =>
      configWith('  backend: ray\n  ray:\n    address: http://h:8265\n    token_env: "not a name"\n'),
    ).toThrow(/token_env/);
  });
});

describe('gcloud argument arrays', () => {
  it('labels are sorted k=v pairs with the TTL as epoch seconds', () => {
    expect(labelsFlag(LABELS)).toBe(L);
  });

  it('queued resource create (default tier)', () => {
    expect(createQueuedResourceArgs(tpu(), 'us-east5-a', 'hc-r', 'hc-r', LABELS)).toEqual([
      'compute',
      'tpus',
      'queued-resources',
      'create',
      'hc-r',
      '--node-id',
      'hc-r',
      '--zone',
      'us-east5-a',
      '--project',
      'hc-proj',
      '--accelerator-type',
      'v5p-8',
      '--runtime-version',
      'v2-alpha-tpuv5',
      '--valid-until-duration',
      '1800s',
      '--service-account',
      'hillclimb-tpu@hc-proj.iam.gserviceaccount.com',
      '--scopes',
      'https://www.googleapis.com/auth/userinfo.email',
      '--labels',
      L,
      '--quiet',
    ]);
  });

  it('queued resource create with a tier and extra create flags', () => {
    const args = createQueuedResourceArgs(
      tpu('    queued_tier: spot\n    create_args: ["--network=hc-net", "--internal-ips"]\n'),
      'us-east5-a',
      'q',
      'n',
      LABELS,
    );
    expect(args.slice(15, 18)).toEqual(['--spot', '--valid-until-duration', '1800s']);
    expect(args.slice(-3)).toEqual(['--network=hc-net', '--internal-ips', '--quiet']);
    expect(createQueuedResourceArgs(tpu('    queued_tier: reserved\n'), 'z', 'q', 'n', LABELS)).toContain(
      '--reserved',
    );
  });

  it('flex-start goes through alpha with the provisioning model and a server-side run limit', () => {
    const args = createQueuedResourceArgs(
      tpu('    provisioning: flex-start\n    ttl_hours: 2\n'),
      'us-east5-a',
      'q',
      'n',
      LABELS,
    );
    expect(args.slice(0, 5)).toEqual(['alpha', 'compute', 'tpus', 'queued-resources', 'create']);
    expect(args).toEqual(
      expect.arrayContaining(['--provisioning-model', 'flex-start', '--max-run-duration', '7200s']),
    );
    expect(args).not.toContain('--spot');
  });

  it('direct TPU VM create for on-demand and spot', () => {
    expect(createNodeArgs(tpu('    provisioning: on-demand\n'), 'us-east5-a', 'hc-r', LABELS)).toEqual([
      'compute',
      'tpus',
      'tpu-vm',
      'create',
      'hc-r',
      '--zone',
      'us-east5-a',
      '--project',
      'hc-proj',
      '--accelerator-type',
      'v5p-8',
      '--version',
      'v2-alpha-tpuv5',
      '--service-account',
      'hillclimb-tpu@hc-proj.iam.gserviceaccount.com',
      '--scopes',
      'https://www.googleapis.com/auth/userinfo.email',
      '--labels',
      L,
      '--quiet',
    ]);
    expect(createNodeArgs(tpu('    provisioning: spot\n'), 'z', 'n', LABELS)).toContain('--spot');
  });

  it('the VM runs as its own account (an id in the project, or an email) with the scopes configured', () => {
    const args = createNodeArgs(
      tpu('    service_account: kernels-tpu@other.iam.gserviceaccount.com\n    scopes: [a, b]\n'),
      'z',
      'n',
      LABELS,
    );
    const at = args.indexOf('--service-account');
    expect(args.slice(at, at + 4)).toEqual([
      '--service-account',
      'kernels-tpu@other.iam.gserviceaccount.com',
      '--scopes',
      'a,b',
    ]);
    expect(() => tpu('    service_account: "Not An Account"\n')).toThrow(/service_account/);
  });

  it('describe, delete and list', () => {
    expect(describeQueuedResourceArgs(LOC, 'q')).toEqual([
      'compute',
      'tpus',
      'queued-resources',
      'describe',
      'q',
      '--zone',
      'us-east5-a',
      '--project',
      'hc-proj',
      '--format=json',
    ]);
    expect(describeNodeArgs(LOC, 'n')).toEqual([
      'compute',
      'tpus',
      'tpu-vm',
      'describe',
      'n',
      '--zone',
      'us-east5-a',
      '--project',
      'hc-proj',
      '--format=json',
    ]);
    expect(deleteQueuedResourceArgs(LOC, 'q')).toEqual([
      'compute',
      'tpus',
      'queued-resources',
      'delete',
      'q',
      '--zone',
      'us-east5-a',
      '--project',
      'hc-proj',
      '--force',
      '--async',
      '--quiet',
    ]);
    expect(deleteNodeArgs(LOC, 'n')).toEqual([
      'compute',
      'tpus',
      'tpu-vm',
      'delete',
      'n',
      '--zone',
      'us-east5-a',
      '--project',
      'hc-proj',
      '--async',
      '--quiet',
    ]);
    expect(listQueuedResourcesArgs(LOC)).toEqual([
      'compute',
      'tpus',
      'queued-resources',
      'list',
      '--zone',
      'us-east5-a',
      '--project',
      'hc-proj',
      '--format=json',
    ]);
    expect(listNodesArgs(LOC)).toEqual([
      'compute',
      'tpus',
      'tpu-vm',
      'list',
      '--zone',
      'us-east5-a',
      '--project',
      'hc-proj',
      '--format=json',
      '--filter=labels.hillclimb=1',
    ]);
  });

  it('ssh and scp name the worker and carry extra flags (IAP) last', () => {
    expect(sshArgs(LOC, 'n', 'all', 'echo hi', ['--tunnel-through-iap'])).toEqual([
      'compute',
      'tpus',
      'tpu-vm',
      'ssh',
      'n',
      '--zone',
      'us-east5-a',
      '--project',
      'hc-proj',
      '--worker=all',
      '--command',
      'echo hi',
      '--quiet',
      '--tunnel-through-iap',
    ]);
    expect(scpArgs(LOC, ['/tmp/a.tgz'], 'n:a.tgz', 0)).toEqual([
      'compute',
      'tpus',
      'tpu-vm',
      'scp',
      '/tmp/a.tgz',
      'n:a.tgz',
      '--zone',
      'us-east5-a',
      '--project',
      'hc-proj',
      '--worker=0',
      '--quiet',
    ]);
  });

  it('names are deterministic per run and generation; direct mode has no queued resource', () => {
    expect(tpuNames(tpu(), 'gh42-1')).toEqual({ node: 'hillclimb-gh42-1', qr: 'hillclimb-gh42-1' });
    expect(tpuNames(tpu(), 'gh42-1', 2)).toEqual({ node: 'hillclimb-gh42-1-g2', qr: 'hillclimb-gh42-1-g2' });
    expect(tpuNames(tpu('    provisioning: spot\n'), 'gh42-1')).toEqual({ node: 'hillclimb-gh42-1' });
  });
});

describe('remote shell strings', () => {
  it('quote every value and keep only fixed text unquoted', () => {
    expect(runScript('job-1', ['python3', '.hillclimb-runner.py', 'e30='])).toBe(
      `cd "$HOME" && rm -rf 'hillclimb/jobs' && mkdir -p 'hillclimb/jobs/job-1' && ` +
        `tar -xzf 'hillclimb-job-job-1.tar.gz' -C 'hillclimb/jobs/job-1' && rm -f 'hillclimb-job-job-1.tar.gz' && ` +
        `cd 'hillclimb/jobs/job-1' && exec 'python3' '.hillclimb-runner.py' 'e30='`,
    );
    expect(setupScript(['pip', 'install', "a b'c"])).toBe(`cd "$HOME" && 'pip' 'install' 'a b'\\''c'`);
    expect(killScript('j')).toContain(`kill -TERM -- "-$(cat 'hillclimb/jobs/j/.hillclimb-pgid')"`);
  });
});
