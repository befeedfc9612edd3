// The TPU across jobs, as hillclimb.yml runs it: tpu-allocate holds a TPU; the measure job, on another
// runner, attaches to it, and the tpu-vm backend runs the accelerator gate and the A/B measurement on it
// (the fake gcloud plays the VM: ssh runs a real shell in a local "remote home", scp copies) without
// allocating another; the attach step's post releases it when the job ends.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeGcloud, useFakeGcloud } from '../compute/fake-gcloud.js';
import { tempDir } from '../helpers/paths.js';
import { makeToyRepo, STANDARD_PATCHES, systemPython, TOY_CONFIG } from '../loop/toy-repo.js';
import { type ActionName, type ActionRun, runActionBundle } from './harness.js';

const RUN_ID = 'gh77';

describe('a TPU held by one job and used by another', () => {
  const t = tempDir('hc-actions-tpu-');
  const bare = join(t.dir, 'remote.git');
  let fake: FakeGcloud;
  let python: string;
  let jobs = 0;
  const runs: Record<string, ActionRun> = {};

  const clone = (): string => {
    const dir = join(t.dir, `job${++jobs}`);
    execFileSync('git', ['clone', '-q', bare, dir]);
    return dir;
  };
  const step = (
    action: ActionName,
    cwd: string,
    inputs: Record<string, string>,
    state?: Record<string, string>,
  ) =>
    runActionBundle(action, {
      cwd,
      inputs,
      env: { ...fake.env, HILLCLIMB_PYTHON: python },
      ...(state ? { post: true, state } : {}),
      timeoutMs: 240_000,
    });
  const iteration = { 'run-id': RUN_ID, iteration: '1', forge: 'local', store: 'local' };

  beforeAll(async () => {
    fake = useFakeGcloud();
    python = systemPython();
    fake.scenario([
      { cmd: 'queued-resources create', replies: [{}] },
      { cmd: 'queued-resources describe', replies: [{ stdout: { state: { state: 'ACTIVE' } } }] },
      { cmd: 'tpu-vm describe', replies: [{ stdout: { state: 'READY' } }] },
      { cmd: 'tpu-vm scp', run: true },
      { cmd: 'tpu-vm ssh', run: true },
      { cmd: 'queued-resources delete', replies: [{}] },
    ]);
    const seed = join(t.dir, 'seed');
    makeToyRepo(
      seed,
      STANDARD_PATCHES.slice(0, 1),
      // The toy with an accelerator gate too: the same check, run on the "TPU".
      `${TOY_CONFIG.replace(
        '    programs:\n',
        '      accelerator:\n        command: ["{python}", "harness/check.py", "--junit", "{junit}"]\n        timeout_minutes: 1\n    programs:\n',
      )}compute:
  backend: tpu-vm
  tpu_vm:
    project: hc-proj
    zones: [zone-a]
    accelerator_type: v5p-8
    runtime_version: v2-alpha-tpuv5
    poll_seconds: 0.01
    allocate_attempts: 1
    python: ${python}
`,
    );
    mkdirSync(bare);
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
    execFileSync('git', ['push', '-q', bare, 'main:refs/heads/main'], { cwd: seed });

    const allocator = clone();
    runs.allocate = await step('tpu', allocator, {
      mode: 'allocate',
      'run-id': `${RUN_ID}-i1-a1`,
      hold: 'true',
    });
    runs.allocatePost = await step('tpu', allocator, {}, runs.allocate.state);

    const propose = clone();
    const base = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: propose, encoding: 'utf8' }).trim();
    runs.propose = await step('iterate', propose, { ...iteration, backend: 'local', base });
    const gate = clone();
    const bundle = join('.hillclimb', 'runs', RUN_ID, 'i001');
    cpSync(join(propose, bundle), join(gate, bundle), { recursive: true });
    runs.cpu = await step('kernel-test', gate, { ...iteration, gate: 'cpu', backend: 'local', base });

    const measure = clone();
    cpSync(join(gate, bundle), join(measure, bundle), { recursive: true });
    runs.attach = await step('tpu', measure, {
      mode: 'attach',
      allocation: runs.allocate.outputs.allocation!,
    });
    runs.accelerator = await step('kernel-test', measure, {
      ...iteration,
      gate: 'accelerator',
      base,
      attestation: runs.cpu.outputs.attestation!,
    });
    runs.profile = await step('profile', measure, { ...iteration, base });
    runs.release = await step('tpu', measure, {}, runs.attach.state);
  }, 400_000);

  afterAll(() => {
    fake?.restore();
    t.cleanup();
  });

  it('allocates once and keeps the TPU when the allocating job ends', () => {
    expect(runs.allocate!.code, runs.allocate!.stdout).toBe(0);
    expect(runs.allocatePost!.stdout).toContain('held for later jobs');
  });

  it('the measure job runs the accelerator gate and the measurement on the held TPU', () => {
    expect(runs.attach!.code, runs.attach!.stdout).toBe(0);
    expect(runs.accelerator!.outputs).toMatchObject({ status: 'passed', tests: '3', pending: 'true' });
    expect(runs.accelerator!.stdout).toContain('held by `hillclimb tpu allocate`');
    expect(runs.profile!.code, runs.profile!.stdout).toBe(0);
    expect(runs.profile!.outputs.verdict).toBe('improved');
    // Every job went to the VM the allocating job created: one create in the whole run.
    expect(fake.callsOf('queued-resources create')).toHaveLength(1);
    // On the VM: the accelerator gate's suite, both exports and the verifier's gate, measure and
    // profile sessions.
    expect(fake.callsOf('tpu-vm ssh').length).toBeGreaterThanOrEqual(7);
  });

  it('the attach step’s post releases the TPU when the measure job ends', () => {
    expect(runs.release!.code, runs.release!.stdout).toBe(0);
    const deletes = fake.callsOf('queued-resources delete');
    expect(deletes).toHaveLength(1);
    expect(deletes[0]).toContain(`hillclimb-${RUN_ID}-i1-a1`);
  });
});
