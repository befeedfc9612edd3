// The TPU lifecycle at the process boundary: the real gcloud runner spawns the fake gcloud (first on
// PATH), which records every argv and answers from a scenario. No cloud calls.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { gcloudCli } from '../../src/compute/tpu/gcloud.js';
import {
  allocateTpu,
  janitorSweep,
  releaseRecorded,
  releaseTpu,
  type TpuContext,
  tpuStatus,
} from '../../src/compute/tpu/lifecycle.js';
import { readRecords, writeRecord } from '../../src/compute/tpu/state.js';
import type { TpuVmConfig } from '../../src/config/types.js';
import { HillclimbError } from '../../src/util/errors.js';
import { memoryLogger } from '../../src/util/log.js';
import { FAKE_GCLOUD_DIR, type FakeGcloud, resolvedGcloud, useFakeGcloud } from './fake-gcloud.js';
import { configWith } from './helpers.js';

const NOW_MS = 1_790_000_000_000;
const NOW_S = NOW_MS / 1000;

function tpuConfig(extra = ''): TpuVmConfig {
  return configWith(
    '  backend: tpu-vm\n  tpu_vm:\n    project: hc-proj\n    zones: [zone-a, zone-b]\n    accelerator_type: v5p-8\n' +
      '    runtime_version: v2-alpha-tpuv5\n    poll_seconds: 0.01\n    allocate_attempts: 1\n    retry_backoff_seconds: 0\n' +
      extra,
  ).compute.tpu_vm!;
}

let fake: FakeGcloud;
beforeEach(() => {
  fake = useFakeGcloud();
});
afterEach(() => fake.restore());

function ctx(
  config: TpuVmConfig,
  over: Partial<TpuContext> = {},
): TpuContext & { logger: ReturnType<typeof memoryLogger>; sleeps: number[] } {
  const sleeps: number[] = [];
  return {
    config,
    gcloud: gcloudCli(),
    logger: memoryLogger(),
    stateDir: join(fake.scratch, 'state', 'tpu'),
    now: () => NOW_MS,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    sleeps,
    ...over,
  } as TpuContext & { logger: ReturnType<typeof memoryLogger>; sleeps: number[] };
}

const qrState = (state: string, extra: object = {}) => ({
  stdout: { name: 'projects/p/locations/z/queuedResources/q', state: { state, ...extra } },
});
const CAPACITY =
  'ERROR: (gcloud.compute.tpus.queued-resources.create) RESOURCE_EXHAUSTED: There is no more capacity in the zone "zone-a"';

describe('allocateTpu', () => {
  it('uses the fake gcloud, never the real one', async () => {
    expect(await resolvedGcloud()).toBe(join(FAKE_GCLOUD_DIR, 'gcloud'));
  });

  it('falls back to the next zone on a capacity error and waits for ACTIVE', async () => {
    fake.scenario([
      { cmd: 'queued-resources create', zone: 'zone-a', replies: [{ exit: 1, stderr: CAPACITY }] },
      { cmd: 'queued-resources create', zone: 'zone-b', replies: [{}] },
      {
        cmd: 'queued-resources describe',
        zone: 'zone-b',
        replies: [qrState('WAITING_FOR_RESOURCES'), qrState('PROVISIONING'), qrState('ACTIVE')],
      },
    ]);
    const c = ctx(tpuConfig());
    const alloc = await allocateTpu(c, { runId: 'gh42-1', owner: 'cli' });
    expect(alloc).toMatchObject({
      name: 'hillclimb-gh42-1',
      queuedResource: 'hillclimb-gh42-1',
      zone: 'zone-b',
      state: 'active',
      expiresAt: NOW_S + 4 * 3600,
    });
    const labels = `hillclimb=1,hillclimb-expires=${NOW_S + 4 * 3600},hillclimb-run=gh42-1`;
    const createIn = (zone: string) => [
      ...['compute', 'tpus', 'queued-resources', 'create', 'hillclimb-gh42-1'],
      ...['--node-id', 'hillclimb-gh42-1', '--zone', zone, '--project', 'hc-proj'],
      ...['--accelerator-type', 'v5p-8', '--runtime-version', 'v2-alpha-tpuv5'],
      ...['--valid-until-duration', '1800s'],
      ...['--service-account', 'hillclimb-tpu@hc-proj.iam.gserviceaccount.com'],
      ...['--scopes', 'https://www.googleapis.com/auth/userinfo.email'],
      ...['--labels', labels, '--quiet'],
    ];
    expect(fake.calls()).toEqual([
      createIn('zone-a'),
      createIn('zone-b'),
      ...Array(3).fill([
        'compute',
        'tpus',
        'queued-resources',
        'describe',
        'hillclimb-gh42-1',
        '--zone',
        'zone-b',
        '--project',
        'hc-proj',
        '--format=json',
      ]),
    ]);
    expect(readRecords(c.stateDir)).toEqual([alloc]);
    expect(c.logger.lines.join('\n')).toMatch(/zone-a: no capacity: .*RESOURCE_EXHAUSTED/);
  });

  it('deletes a FAILED queued resource (it holds quota) and moves on', async () => {
    fake.scenario([
      { cmd: 'queued-resources create', replies: [{}] },
      {
        cmd: 'queued-resources describe',
        zone: 'zone-a',
        replies: [qrState('FAILED', { failedData: { error: { message: 'stockout' } } })],
      },
      { cmd: 'queued-resources describe', zone: 'zone-b', replies: [qrState('ACTIVE')] },
      { cmd: 'queued-resources delete', zone: 'zone-a', replies: [{}] },
    ]);
    const alloc = await allocateTpu(ctx(tpuConfig()), { runId: 'r1', owner: 'backend' });
    expect(alloc.zone).toBe('zone-b');
    expect(fake.callsOf('queued-resources delete')).toEqual([
      [
        'compute',
        'tpus',
        'queued-resources',
        'delete',
        'hillclimb-r1',
        '--zone',
        'zone-a',
        '--project',
        'hc-proj',
        '--force',
        '--async',
        '--quiet',
      ],
    ]);
  });

  it('waits for a resource that already exists (a retried allocate of the same run) instead of failing', async () => {
    fake.scenario([
      {
        cmd: 'queued-resources create',
        replies: [{ exit: 1, stderr: 'ERROR: ALREADY_EXISTS: resource already exists' }],
      },
      { cmd: 'queued-resources describe', replies: [qrState('ACTIVE')] },
    ]);
    const alloc = await allocateTpu(ctx(tpuConfig()), { runId: 'r1', owner: 'cli' });
    expect(alloc.zone).toBe('zone-a');
    expect(fake.callsOf('queued-resources create')).toHaveLength(1);
  });

  it('stops at once on a permission error: no other zone can do better', async () => {
    fake.scenario([
      {
        cmd: 'queued-resources create',
        replies: [{ exit: 1, stderr: 'ERROR: PERMISSION_DENIED: tpu.queuedResources.create' }],
      },
    ]);
    const c = ctx(tpuConfig());
    const err = (await allocateTpu(c, { runId: 'r1', owner: 'cli' }).catch(
      (e: unknown) => e,
    )) as HillclimbError;
    expect(err).toBeInstanceOf(HillclimbError);
    expect(err.message).toMatch(/PERMISSION_DENIED/);
    expect(fake.callsOf('queued-resources create')).toHaveLength(1);
    expect(readRecords(c.stateDir)).toEqual([]);
  });

  it('gives up after the configured passes, listing every zone, with a back-off between passes', async () => {
    fake.scenario([{ cmd: 'queued-resources create', replies: [{ exit: 1, stderr: CAPACITY }] }]);
    const c = ctx({ ...tpuConfig(), allocate_attempts: 2, retry_backoff_seconds: 7 });
    const err = (await allocateTpu(c, { runId: 'r1', owner: 'cli' }).catch(
      (e: unknown) => e,
    )) as HillclimbError;
    expect(err.message).toMatch(/no v5p-8 TPU in zone-a, zone-b after 2 pass/);
    expect(err.message).toContain('zone-b (pass 2): no capacity');
    expect(fake.callsOf('queued-resources create')).toHaveLength(4);
    expect(c.sleeps).toEqual([7000]);
  });

  it('deletes and moves on when the resource is not up within ready_timeout_minutes', async () => {
    let t = NOW_MS;
    fake.scenario([
      { cmd: 'queued-resources create', replies: [{}] },
      { cmd: 'queued-resources describe', zone: 'zone-a', replies: [qrState('WAITING_FOR_RESOURCES')] },
      { cmd: 'queued-resources describe', zone: 'zone-b', replies: [qrState('ACTIVE')] },
      { cmd: 'queued-resources delete', replies: [{}] },
    ]);
    const c = ctx(tpuConfig('    ready_timeout_minutes: 1\n'), {
      now: () => t,
      sleep: async (ms) => {
        t += ms + 20_000;
      },
    });
    const alloc = await allocateTpu(c, { runId: 'r1', owner: 'cli' });
    expect(alloc.zone).toBe('zone-b');
    expect(fake.callsOf('queued-resources delete')[0]).toContain('zone-a');
    expect(c.logger.lines.join('\n')).toMatch(/not up after 1 min \(last state WAITING_FOR_RESOURCES\)/);
  });

  it('creates spot VMs directly and waits for READY', async () => {
    fake.scenario([
      { cmd: 'tpu-vm create', replies: [{}] },
      {
        cmd: 'tpu-vm describe',
        replies: [{ stdout: { state: 'CREATING' } }, { stdout: { state: 'READY' } }],
      },
    ]);
    const alloc = await allocateTpu(ctx(tpuConfig('    provisioning: spot\n')), {
      runId: 'r1',
      owner: 'cli',
    });
    expect(alloc.queuedResource).toBeUndefined();
    expect(fake.callsOf('tpu-vm create')[0]).toContain('--spot');
  });

  it('runs setup_command once on every worker, with each argument quoted for the remote shell', async () => {
    fake.scenario([
      { cmd: 'queued-resources create', replies: [{}] },
      { cmd: 'queued-resources describe', replies: [qrState('ACTIVE')] },
      { cmd: 'tpu-vm ssh', run: true },
    ]);
    const c = ctx(
      tpuConfig(
        `    setup_command: ["{python}", "-c", "import sys; open('setup.txt','w').write(repr(sys.argv[1:]))", "a b", "$(id)", "it's"]\n`,
      ),
    );
    const alloc = await allocateTpu(c, { runId: 'r1', owner: 'cli' });
    expect(alloc.setupDone).toBe(true);
    expect(readFileSync(join(fake.home, 'setup.txt'), 'utf8')).toBe(`['a b', '$(id)', "it's"]`);
    expect(fake.callsOf('tpu-vm ssh')[0]).toEqual(expect.arrayContaining(['hillclimb-r1', '--worker=all']));
  });

  it('prints the commands in a dry run and creates nothing', async () => {
    fake.scenario([]);
    const printed: string[] = [];
    const c = ctx(tpuConfig(), { gcloud: gcloudCli({ dryRun: true, print: (l) => printed.push(l) }) });
    const alloc = await allocateTpu(c, { runId: 'r1', owner: 'cli' });
    expect(alloc.zone).toBe('zone-a');
    expect(fake.calls()).toEqual([]);
    expect(printed[0]).toMatch(
      /^\$ gcloud compute tpus queued-resources create hillclimb-r1 --node-id hillclimb-r1 --zone zone-a/,
    );
    expect(printed[1]).toMatch(/^\$ gcloud compute tpus queued-resources describe hillclimb-r1/);
    expect(existsSync(c.stateDir)).toBe(false);
  });
});

describe('release', () => {
  const rec = {
    name: 'hillclimb-r1',
    queuedResource: 'hillclimb-r1',
    project: 'hc-proj',
    zone: 'zone-b',
    acceleratorType: 'v5p-8',
    runtimeVersion: 'v2',
    provisioning: 'queued' as const,
    runId: 'r1',
    owner: 'cli' as const,
    state: 'active' as const,
    setupDone: true,
    createdAt: '2026-01-01T00:00:00Z',
    expiresAt: NOW_S + 10,
  };

  it('treats NOT_FOUND as released (a janitor got there first) and forgets the record', async () => {
    fake.scenario([
      {
        cmd: 'queued-resources delete',
        replies: [{ exit: 1, stderr: 'ERROR: NOT_FOUND: Resource not found' }],
      },
    ]);
    const c = ctx(tpuConfig());
    writeRecord(c.stateDir, rec);
    expect(await releaseTpu(c, rec)).toBe('already-gone');
    expect(readRecords(c.stateDir)).toEqual([]);
  });

  it('keeps the record when the delete fails, so a later release can retry', async () => {
    fake.scenario([
      { cmd: 'queued-resources delete', replies: [{ exit: 1, stderr: 'ERROR: INTERNAL: backend error' }] },
    ]);
    const c = ctx(tpuConfig());
    writeRecord(c.stateDir, rec);
    const reports = await releaseRecorded(c);
    expect(reports).toEqual([expect.objectContaining({ name: 'hillclimb-r1', outcome: 'failed' })]);
    expect(readRecords(c.stateDir)).toHaveLength(1);
    fake.scenario([{ cmd: 'queued-resources delete', replies: [{}] }]);
    expect(await releaseRecorded(c)).toEqual([{ name: 'hillclimb-r1', zone: 'zone-b', outcome: 'deleted' }]);
    expect(readRecords(c.stateDir)).toEqual([]);
  });

  it('releases a named resource without a record by looking in every zone', async () => {
    fake.scenario([
      { cmd: 'queued-resources delete', zone: 'zone-a', replies: [{ exit: 1, stderr: 'NOT_FOUND' }] },
      { cmd: 'tpu-vm delete', zone: 'zone-a', replies: [{ exit: 1, stderr: 'NOT_FOUND' }] },
      { cmd: 'queued-resources delete', zone: 'zone-b', replies: [{}] },
    ]);
    expect(await releaseRecorded(ctx(tpuConfig()), { name: 'leaked-1' })).toEqual([
      { name: 'leaked-1', zone: 'zone-b', outcome: 'deleted' },
    ]);
  });

  it('status describes what the records say', async () => {
    fake.scenario([
      { cmd: 'queued-resources describe', replies: [qrState('ACTIVE')] },
      {
        cmd: 'tpu-vm describe',
        replies: [
          { stdout: { state: 'READY', health: 'HEALTHY', networkEndpoints: [{ ipAddress: '10.0.0.2' }] } },
        ],
      },
    ]);
    const c = ctx(tpuConfig());
    writeRecord(c.stateDir, rec);
    expect(await tpuStatus(c)).toEqual([
      {
        name: 'hillclimb-r1',
        zone: 'zone-b',
        state: 'ACTIVE',
        record: rec,
        health: 'HEALTHY',
        endpoints: ['10.0.0.2'],
      },
    ]);
  });
});

describe('janitorSweep', () => {
  const qr = (name: string, labels: Record<string, string>, state = 'ACTIVE') => ({
    name: `projects/hc-proj/locations/zone-a/queuedResources/${name}`,
    state: { state },
    tpu: { nodeSpec: [{ nodeId: name, node: { labels } }] },
  });
  const mark = (expires: number) => ({
    hillclimb: '1',
    'hillclimb-run': 'x',
    'hillclimb-expires': String(expires),
  });

  it('deletes expired and failed labelled resources, keeps fresh ones and everything not ours', async () => {
    fake.scenario([
      {
        cmd: 'queued-resources list',
        zone: 'zone-a',
        replies: [
          {
            stdout: [
              qr('old-qr', mark(NOW_S - 60)),
              qr('fresh-qr', mark(NOW_S + 3600)),
              qr('failed-qr', mark(NOW_S + 3600), 'FAILED'),
              qr('not-ours', { team: 'other' }),
              qr('no-expiry', { hillclimb: '1' }),
            ],
          },
        ],
      },
      {
        cmd: 'tpu-vm list',
        zone: 'zone-a',
        replies: [
          {
            stdout: [
              // A node of the expired queued resource: deleted through it, not twice.
              {
                name: 'projects/p/locations/zone-a/nodes/old-qr',
                labels: mark(NOW_S - 60),
                queuedResource: 'projects/p/locations/zone-a/queuedResources/old-qr',
              },
              {
                name: 'projects/p/locations/zone-a/nodes/direct-old',
                labels: mark(NOW_S - 1),
                state: 'READY',
              },
            ],
          },
        ],
      },
      {
        cmd: 'queued-resources list',
        zone: 'zone-b',
        replies: [{ exit: 1, stderr: 'ERROR: PERMISSION_DENIED' }],
      },
      { cmd: 'tpu-vm list', zone: 'zone-b', replies: [{ stdout: [] }] },
      { cmd: 'queued-resources delete', name: 'failed-qr', replies: [{ exit: 1, stderr: 'NOT_FOUND' }] },
      { cmd: 'queued-resources delete', replies: [{}] },
      { cmd: 'tpu-vm delete', replies: [{}] },
    ]);
    const report = await janitorSweep(ctx(tpuConfig()));
    expect(report.deleted.map((d) => [d.kind, d.name, d.outcome])).toEqual([
      ['queued-resource', 'old-qr', 'deleted'],
      ['queued-resource', 'failed-qr', 'already-gone'],
      ['node', 'direct-old', 'deleted'],
    ]);
    expect(report.kept.map((k) => k.name)).toEqual(['fresh-qr', 'no-expiry']);
    expect(report.errors).toEqual([
      expect.stringMatching(/zone-b: cannot list queued resources: .*PERMISSION_DENIED/),
    ]);
    expect(fake.callsOf('queued-resources delete').map((a) => a[4])).toEqual(['old-qr', 'failed-qr']);
    expect(fake.callsOf('tpu-vm delete')).toEqual([
      [
        'compute',
        'tpus',
        'tpu-vm',
        'delete',
        'direct-old',
        '--zone',
        'zone-a',
        '--project',
        'hc-proj',
        '--async',
        '--quiet',
      ],
    ]);
  });

  it('lists for real but only prints the deletes in a dry run', async () => {
    fake.scenario([
      { cmd: 'queued-resources list', replies: [{ stdout: [qr('old-qr', mark(NOW_S - 60))] }] },
      { cmd: 'tpu-vm list', replies: [{ stdout: [] }] },
    ]);
    const printed: string[] = [];
    const report = await janitorSweep(
      ctx(tpuConfig(), { gcloud: gcloudCli({ dryRun: true, print: (l) => printed.push(l) }) }),
      { zones: ['zone-a'] },
    );
    expect(report.deleted).toEqual([expect.objectContaining({ name: 'old-qr', outcome: 'printed' })]);
    expect(printed).toEqual([
      '$ gcloud compute tpus queued-resources delete old-qr --zone zone-a --project hc-proj --force --async --quiet',
    ]);
    expect(fake.callsOf('queued-resources delete')).toEqual([]);
  });
});
