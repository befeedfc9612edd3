// The tpu action's bundles (main and post) as the runner runs them, with the fake gcloud first on PATH:
// allocate with zone fallback, hand the TPU to another job (attach), and a post step that releases
// what its step took — also after the main step failed — unless the TPU is held for later jobs.
import { cpSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FakeGcloud, useFakeGcloud } from '../compute/fake-gcloud.js';
import { TPU_CONFIG } from '../helpers/config.js';
import { type ActionRun, runActionBundle } from './harness.js';

const CONFIG = TPU_CONFIG;

let fake: FakeGcloud;
let project: string;

beforeEach(() => {
  fake = useFakeGcloud();
  project = join(fake.scratch, 'job1');
  mkdirSync(project);
  writeFileSync(join(project, 'hillclimb.yml'), CONFIG);
});
afterEach(() => fake.restore());

function tpu(
  inputs: Record<string, string>,
  opts: { post?: boolean; state?: Record<string, string>; cwd?: string } = {},
) {
  return runActionBundle('tpu', {
    cwd: opts.cwd ?? project,
    inputs,
    env: fake.env,
    post: opts.post,
    state: opts.state,
  });
}

const post = (main: ActionRun, cwd = project) => tpu({}, { post: true, state: main.state, cwd });
const records = (dir = project) => {
  const d = join(dir, '.hillclimb', 'tpu');
  return existsSync(d) ? readdirSync(d) : [];
};

const ACTIVE = [
  {
    cmd: 'queued-resources create',
    zone: 'zone-a',
    replies: [{ exit: 1, stderr: 'ERROR: RESOURCE_EXHAUSTED' }],
  },
  { cmd: 'queued-resources create', zone: 'zone-b', replies: [{}] },
  { cmd: 'queued-resources describe', replies: [{ stdout: { state: { state: 'ACTIVE' } } }] },
  { cmd: 'queued-resources delete', replies: [{}] },
];

describe('tpu action', () => {
  it('allocate falls back to the next zone; its post step releases the TPU at the end of the job', async () => {
    fake.scenario(ACTIVE);
    const main = await tpu({ mode: 'allocate', 'run-id': 'gh7-1' });
    expect(main.code).toBe(0);
    expect(main.outputs).toMatchObject({
      name: 'hillclimb-gh7-1',
      zone: 'zone-b',
      'queued-resource': 'hillclimb-gh7-1',
    });
    expect(JSON.parse(main.outputs.allocation!)).toMatchObject({
      name: 'hillclimb-gh7-1',
      zone: 'zone-b',
      project: 'hc-proj',
      acceleratorType: 'v5p-8',
      owner: 'cli',
      state: 'active',
    });
    expect(main.outputs['expires-at']).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(main.files.output).toMatch(/^name<<ghadelimiter_[0-9a-f-]{36}\nhillclimb-gh7-1\nghadelimiter_/);
    expect(main.state['run-id']).toBe('gh7-1');
    expect(main.state.held).toBeUndefined();
    expect(main.summary).toContain('v5p-8 `hillclimb-gh7-1` in zone-b');
    expect(records()).toEqual(['hillclimb-gh7-1.zone-b.json']);

    const p = await post(main);
    expect(p.code).toBe(0);
    expect(fake.callsOf('queued-resources delete')).toHaveLength(1);
    expect(fake.callsOf('queued-resources delete')[0]).toContain('hillclimb-gh7-1');
    expect(records()).toEqual([]);
  });

  it('post releases even when the main step failed half way (setup_command failed)', async () => {
    writeFileSync(
      join(project, 'hillclimb.yml'),
      `${CONFIG}    setup_command: ["{python}", "-c", "raise SystemExit(3)"]\n`,
    );
    fake.scenario([...ACTIVE, { cmd: 'tpu-vm ssh', replies: [{ exit: 3, stderr: 'setup broke' }] }]);
    const main = await tpu({ mode: 'allocate', 'run-id': 'gh8-1' });
    expect(main.code).toBe(1);
    expect(main.errors[0]).toMatch(/^setup_command failed on hillclimb-gh8-1/);
    expect(main.errors[0]).toContain('\nhint: run it by hand');
    expect(main.outputs).toEqual({});
    expect(records()).toEqual(['hillclimb-gh8-1.zone-b.json']);

    const p = await post(main);
    expect(p.code).toBe(0);
    expect(fake.callsOf('queued-resources delete')).toHaveLength(1);
    expect(records()).toEqual([]);
  });

  it('hold keeps the TPU for later jobs; attach in another job adopts it and its post releases it', async () => {
    fake.scenario([...ACTIVE, { cmd: 'tpu-vm describe', replies: [{ stdout: { state: 'READY' } }] }]);
    const main = await tpu({ mode: 'allocate', 'run-id': 'gh9-1', hold: 'true' });
    expect(main.code).toBe(0);
    expect(main.state.held).toBe('true');
    const held = await post(main);
    expect(held.code).toBe(0);
    expect(held.stdout).toContain('held for later jobs');
    expect(fake.callsOf('queued-resources delete')).toHaveLength(0);

    // Another job on another runner: no records until attach writes one.
    const other = join(fake.scratch, 'job2');
    cpSync(join(project, 'hillclimb.yml'), join(other, 'hillclimb.yml'));
    const attach = await tpu({ mode: 'attach', allocation: main.outputs.allocation! }, { cwd: other });
    expect(attach.code).toBe(0);
    expect(attach.outputs).toMatchObject({ name: 'hillclimb-gh9-1', zone: 'zone-b' });
    expect(records(other)).toEqual(['hillclimb-gh9-1.zone-b.json']);
    const released = await post(attach, other);
    expect(released.code).toBe(0);
    expect(fake.callsOf('queued-resources delete')).toHaveLength(1);
    expect(records(other)).toEqual([]);
  });

  it('attach refuses an allocation whose names could escape gcloud arguments or the record folder', async () => {
    fake.scenario([]);
    const bad = JSON.stringify({
      name: '../../etc',
      project: 'p',
      zone: 'zone-a',
      acceleratorType: 'v5p-8',
      runtimeVersion: 'r',
      provisioning: 'queued',
      runId: 'r',
      createdAt: 'now',
      expiresAt: 1,
      setupDone: true,
    });
    const r = await tpu({ mode: 'attach', allocation: bad });
    expect(r.code).toBe(1);
    expect(r.errors).toEqual(['input allocation: field name is not a GCP resource name: "../../etc"']);
    expect(r.state).toEqual({ inputs: expect.any(String) });
    expect(records()).toEqual([]);
    expect((await post(r)).stdout).toContain('this step allocated nothing');
  });

  it('release by name treats an already deleted TPU as released', async () => {
    fake.scenario([
      { cmd: 'queued-resources delete', replies: [{ exit: 1, stderr: 'ERROR: (gcloud) NOT_FOUND: gone' }] },
      { cmd: 'tpu-vm delete', replies: [{ exit: 1, stderr: 'ERROR: (gcloud) NOT_FOUND: gone' }] },
    ]);
    const r = await tpu({ mode: 'release', name: 'hillclimb-gh7-1' });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.outputs.released!)).toEqual([
      { name: 'hillclimb-gh7-1', zone: 'zone-a,zone-b', outcome: 'not-found' },
    ]);
    expect(r.outputs.count).toBe('0');
    expect(fake.callsOf('queued-resources delete')).toHaveLength(2);
    expect((await post(r)).stdout).toContain('this step allocated nothing');
  });

  it('release by run id deletes the TPU allocate named for it, even with no record on this runner', async () => {
    fake.scenario([{ cmd: 'queued-resources delete', name: 'hillclimb-gh7-1-i1-a1', replies: [{}] }]);
    const r = await tpu({ mode: 'release', 'run-id': 'gh7-1-i1-a1' });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.outputs.released!)).toEqual([
      { name: 'hillclimb-gh7-1-i1-a1', zone: 'zone-a', outcome: 'deleted' },
    ]);
    expect(r.outputs.count).toBe('1');
  });

  it('janitor deletes expired TPUs in the zones given and tabulates what it did', async () => {
    const past = Math.floor(Date.now() / 1000) - 60;
    const qr = (name: string, expires: number) => ({
      name: `projects/p/locations/zone-c/queuedResources/${name}`,
      state: { state: 'ACTIVE' },
      tpu: { nodeSpec: [{ node: { labels: { hillclimb: '1', 'hillclimb-expires': String(expires) } } }] },
    });
    fake.scenario([
      {
        cmd: 'queued-resources list',
        zone: 'zone-c',
        replies: [{ stdout: [qr('leaked', past), qr('live', past + 9000)] }],
      },
      { cmd: 'tpu-vm list', replies: [{ stdout: [] }] },
      { cmd: 'queued-resources delete', name: 'leaked', replies: [{}] },
    ]);
    const r = await tpu({ mode: 'janitor', zones: 'zone-c' });
    expect(r.code).toBe(0);
    expect(r.outputs.deleted).toBe('1');
    expect(r.summary).toMatch(/\| deleted \| queued-resource \| `leaked` \| zone-c \| expired at /);
    expect(r.summary).toMatch(/\| kept \| queued-resource \| `live` \| zone-c \| expires /);
  });

  it('a dry run prints the create command and creates nothing', async () => {
    fake.scenario([]);
    const r = await tpu({
      mode: 'allocate',
      'run-id': 'dry1',
      'dry-run': 'true',
      zones: 'zone-z',
      'accelerator-type': 'v6e-8',
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /dry run: \$ gcloud compute tpus queued-resources create hillclimb-dry1 .*--zone zone-z .*--accelerator-type v6e-8/,
    );
    expect(fake.calls().filter((a) => a.includes('create'))).toEqual([]);
  });
});
