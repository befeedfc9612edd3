// `hillclimb tpu …` as users and workflow steps run it: the built CLI in a child process, with the fake
// gcloud first on PATH.
import { execFile } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TPU_CONFIG } from '../helpers/config.js';
import { CLI } from '../helpers/paths.js';
import { type FakeGcloud, useFakeGcloud } from './fake-gcloud.js';

const execFileP = promisify(execFile);

let fake: FakeGcloud;
let project: string;
beforeEach(() => {
  fake = useFakeGcloud();
  project = fake.scratch;
  writeFileSync(join(project, 'hillclimb.yml'), TPU_CONFIG);
});
afterEach(() => fake.restore());

async function hillclimb(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await execFileP(process.execPath, [CLI, '--root', project, 'tpu', ...args], {
      env: { ...process.env, GITHUB_RUN_ID: '', HILLCLIMB_RUN_ID: '' },
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

describe('hillclimb tpu', () => {
  it('allocate holds a TPU and prints its name and zone; status describes it; release frees it', async () => {
    fake.scenario([
      {
        cmd: 'queued-resources create',
        zone: 'zone-a',
        replies: [{ exit: 1, stderr: 'ERROR: RESOURCE_EXHAUSTED' }],
      },
      { cmd: 'queued-resources create', zone: 'zone-b', replies: [{}] },
      { cmd: 'queued-resources describe', replies: [{ stdout: { state: { state: 'ACTIVE' } } }] },
      { cmd: 'tpu-vm describe', replies: [{ stdout: { state: 'READY', health: 'HEALTHY' } }] },
      { cmd: 'queued-resources delete', replies: [{ exit: 1, stderr: 'ERROR: NOT_FOUND' }] },
    ]);
    const a = await hillclimb('allocate', '--run-id', 'gh9-2');
    expect(a.stderr).toContain('zone-a: no capacity');
    expect(a).toMatchObject({ code: 0, stdout: 'name=hillclimb-gh9-2\nzone=zone-b\n' });
    expect(readdirSync(join(project, '.hillclimb', 'tpu'))).toEqual(['hillclimb-gh9-2.zone-b.json']);

    const s = await hillclimb('status', '--json');
    expect(s.code).toBe(0);
    expect(JSON.parse(s.stdout)).toEqual([
      expect.objectContaining({
        name: 'hillclimb-gh9-2',
        zone: 'zone-b',
        state: 'ACTIVE',
        health: 'HEALTHY',
      }),
    ]);

    const r = await hillclimb('release');
    expect(r).toMatchObject({ code: 0, stdout: 'hillclimb-gh9-2 zone-b already-gone\n' });
    expect(readdirSync(join(project, '.hillclimb', 'tpu'))).toEqual([]);
    expect(fake.calls().every((argv) => argv[0] === 'compute')).toBe(true);
  });

  it('allocate --json with overrides; --dry-run prints the commands and runs none', async () => {
    fake.scenario([]);
    const r = await hillclimb(
      'allocate',
      '--dry-run',
      '--run-id',
      'r1',
      '--zone',
      'zone-z',
      '--accelerator-type',
      'v6e-8',
    );
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe(
      `$ gcloud compute tpus queued-resources create hillclimb-r1 --node-id hillclimb-r1 --zone zone-z --project hc-proj ` +
        `--accelerator-type v6e-8 --runtime-version v2-alpha-tpuv5 --valid-until-duration 1800s ` +
        `--service-account hillclimb-tpu@hc-proj.iam.gserviceaccount.com ` +
        `--scopes https://www.googleapis.com/auth/userinfo.email ` +
        `--labels hillclimb=1,hillclimb-expires=${r.stdout.match(/hillclimb-expires=(\d+)/)![1]},hillclimb-run=r1 --quiet`,
    );
    expect(fake.calls()).toEqual([]);

    fake.scenario([
      { cmd: 'queued-resources create', replies: [{}] },
      { cmd: 'queued-resources describe', replies: [{ stdout: { state: { state: 'ACTIVE' } } }] },
    ]);
    const j = await hillclimb('allocate', '--json', '--run-id', 'r2');
    expect(JSON.parse(j.stdout)).toMatchObject({
      name: 'hillclimb-r2',
      zone: 'zone-a',
      owner: 'cli',
      state: 'active',
    });
  });

  it('janitor deletes expired labelled resources and reports what it kept', async () => {
    const past = Math.floor(Date.now() / 1000) - 10;
    const future = past + 7200;
    const qr = (name: string, expires: number) => ({
      name: `projects/p/locations/zone-a/queuedResources/${name}`,
      state: { state: 'ACTIVE' },
      tpu: { nodeSpec: [{ node: { labels: { hillclimb: '1', 'hillclimb-expires': String(expires) } } }] },
    });
    fake.scenario([
      {
        cmd: 'queued-resources list',
        zone: 'zone-a',
        replies: [{ stdout: [qr('old', past), qr('new', future)] }],
      },
      { cmd: 'queued-resources list', zone: 'zone-b', replies: [{ stdout: [] }] },
      { cmd: 'tpu-vm list', replies: [{ stdout: [] }] },
      { cmd: 'queued-resources delete', name: 'old', replies: [{}] },
    ]);
    const r = await hillclimb('janitor');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^deleted queued-resource old zone-a \(expired at .*\)\nkept queued-resource new zone-a \(expires .*\)\n$/,
    );
    expect(fake.callsOf('queued-resources delete')).toHaveLength(1);
  });

  it('explains a missing compute.tpu_vm section with a hint and no stack', async () => {
    writeFileSync(
      join(project, 'other.yml'),
      'version: 1\ntargets:\n  k:\n    editable: [k/**]\n    protected: [h/**]\n    correctness:\n      cpu:\n        command: [x]\n    programs: { module: h.programs }\n    bench:\n      metric: { path: m, direction: lower }\n',
    );
    const r = await hillclimb('status', '--config', join(project, 'other.yml'));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('compute.tpu_vm is not configured');
    expect(r.stderr).toContain('hint: add compute.tpu_vm');
    expect(r.stderr).not.toMatch(/\s+at .*\.js:\d+/);
  });

  it('a failed gcloud (permission) exits with the infra code, message and hint', async () => {
    fake.scenario([
      {
        cmd: 'queued-resources create',
        replies: [{ exit: 1, stderr: 'ERROR: PERMISSION_DENIED: caller lacks tpu.queuedResources.create' }],
      },
    ]);
    const r = await hillclimb('allocate', '--run-id', 'r3');
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/error: TPU allocation stopped: .*PERMISSION_DENIED/);
    expect(r.stderr).toMatch(/hint: check the credentials/);
  });
});
