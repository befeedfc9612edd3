// The tpu-vm backend end to end at the process boundary: the fake gcloud plays the TPU VM, running ssh
// commands with a real shell in a local "remote home" and scp as copies, so the tree upload, the quoted
// remote command, the runner and the outputs fetch all really happen.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JobSpec } from '../../src/compute/backend.js';
import { TpuVmBackend } from '../../src/compute/backends/tpu-vm.js';
import { buildBackend, tpuStateDirFor } from '../../src/compute/factory.js';
import { gcloudCli } from '../../src/compute/tpu/gcloud.js';
import { readRecords, type TpuAllocation, writeRecord } from '../../src/compute/tpu/state.js';
import type { TpuVmConfig } from '../../src/config/types.js';
import { memoryLogger } from '../../src/util/log.js';
import { type FakeGcloud, type FakeRule, useFakeGcloud } from './fake-gcloud.js';
import { configWith, gitRepo } from './helpers.js';

const JOB_PY = `import json, os, sys, time
args = [a for a in sys.argv[1:]]
out = dict(a.split("=", 1) for a in args if a.startswith(("metrics=", "junit=", "trace=")))
if "metrics" in out:
    json.dump({"argv": args, "python": sys.executable, "cwd": os.getcwd(), "x": os.environ.get("HC_X")}, open(out["metrics"], "w"))
if "trace" in out:
    os.makedirs(os.path.join(out["trace"], "plugins"))
    open(os.path.join(out["trace"], "plugins", "t.xplane.pb"), "wb").write(b"\\x00\\x01trace")
print("running on the fake TPU VM", flush=True)
with open(os.path.expanduser("~/timeline"), "a") as f:
    f.write("start %f\\n" % time.time())
time.sleep(float(os.environ.get("HC_SLEEP", "0")))
with open(os.path.expanduser("~/timeline"), "a") as f:
    f.write("end %f\\n" % time.time())
sys.exit(int(os.environ.get("HC_EXIT", "0")))
`;

const UP: FakeRule[] = [
  { cmd: 'queued-resources create', replies: [{}] },
  { cmd: 'queued-resources describe', replies: [{ stdout: { state: { state: 'ACTIVE' } } }] },
  { cmd: 'tpu-vm describe', replies: [{ stdout: { state: 'READY' } }] },
  { cmd: 'tpu-vm scp', run: true },
  { cmd: 'tpu-vm ssh', run: true },
  { cmd: 'queued-resources delete', replies: [{}] },
];

let fake: FakeGcloud;
let repo: { dir: string; cleanup: () => void };
beforeEach(async () => {
  fake = useFakeGcloud();
  repo = await gitRepo({ 'job.py': JOB_PY });
});
afterEach(() => {
  fake.restore();
  repo.cleanup();
});

function tpuConfig(): TpuVmConfig {
  return configWith(
    '  backend: tpu-vm\n  tpu_vm:\n    project: hc-proj\n    zones: [zone-a]\n    accelerator_type: v5p-8\n' +
      '    runtime_version: v2-alpha-tpuv5\n    poll_seconds: 0.01\n    allocate_attempts: 1\n',
  ).compute.tpu_vm!;
}

function backend(
  over: { logger?: ReturnType<typeof memoryLogger>; attachOnly?: boolean } = {},
): TpuVmBackend {
  return new TpuVmBackend({
    config: tpuConfig(),
    logger: over.logger ?? memoryLogger(),
    gcloud: gcloudCli(),
    stateDir: join(fake.scratch, 'state'),
    runId: 'gh7-1',
    sshMarginMs: 20_000,
    ...(over.attachOnly ? { attachOnly: true } : {}),
  });
}

/** A TPU `hillclimb tpu allocate` holds, as its record says. */
const HELD: TpuAllocation = {
  name: 'hillclimb-held',
  queuedResource: 'hillclimb-held',
  project: 'hc-proj',
  zone: 'zone-a',
  acceleratorType: 'v5p-8',
  runtimeVersion: 'v2-alpha-tpuv5',
  provisioning: 'queued',
  runId: 'other-run',
  owner: 'cli',
  state: 'active',
  setupDone: true,
  createdAt: '2026-01-01T00:00:00Z',
  expiresAt: 2_000_000_000,
};

let n = 0;
function job(over: Partial<JobSpec> = {}): JobSpec {
  n += 1;
  return {
    id: `gh7-1-i001-bench-${n}`,
    command: ['{python}', 'job.py'],
    workdir: repo.dir,
    timeoutMs: 60_000,
    outputs: {},
    logFile: join(fake.scratch, `job${n}.log`),
    ...over,
  };
}

describe('TpuVmBackend', () => {
  it('allocates, ships the tree, runs the job with quoted arguments, fetches the outputs, and releases', async () => {
    fake.scenario(UP);
    const b = backend();
    await b.open();
    const hostile = ["it's", '$(touch pwned)', 'a b;c', '"q"'];
    const out = join(fake.scratch, 'out');
    const spec = job({
      command: ['{python}', 'job.py', 'metrics={metrics}', 'trace={trace}', ...hostile],
      outputs: { metrics: join(out, 'm', 'metrics.json'), trace: join(out, 'trace') },
      env: { HC_X: 'x-value', HC_EXIT: '2' },
    });
    const r = await b.run(spec);
    expect(r.infraError).toBeUndefined();
    expect(r).toMatchObject({ exitCode: 2, handle: 'hillclimb-gh7-1@zone-a' });
    const m = JSON.parse(readFileSync(spec.outputs.metrics!, 'utf8')) as Record<string, unknown>;
    expect((m.argv as string[]).slice(2)).toEqual(hostile);
    expect(m.x).toBe('x-value');
    expect(m.cwd).toBe(join(fake.home, 'hillclimb', 'jobs', spec.id));
    expect(readFileSync(join(out, 'trace', 'plugins', 't.xplane.pb')).toString('latin1')).toBe(
      '\x00\x01trace',
    );
    expect(existsSync(join(fake.home, 'hillclimb', 'jobs', spec.id, 'pwned'))).toBe(false);
    expect(readFileSync(spec.logFile, 'utf8')).toContain('running on the fake TPU VM');

    const [up, fetch] = fake.callsOf('tpu-vm scp');
    expect(up!.slice(4, 6)).toEqual([
      expect.stringMatching(/tree\.tar\.gz$/),
      `hillclimb-gh7-1:hillclimb-job-${spec.id}.tar.gz`,
    ]);
    expect(up).toContain('--worker=all');
    expect(fetch!.slice(4, 6)).toEqual([
      `hillclimb-gh7-1:hillclimb/jobs/${spec.id}/.hillclimb-outputs.tar.gz`,
      expect.stringMatching(/outputs\.tar\.gz$/),
    ]);
    expect(fetch).toContain('--worker=0');
    expect(b.info()).toMatchObject({ backend: 'tpu-vm', hasAccelerator: true, acceleratorType: 'v5p-8' });

    await b.close();
    await b.close(); // idempotent
    expect(fake.callsOf('queued-resources delete')).toHaveLength(1);
    expect(readRecords(join(fake.scratch, 'state'))).toEqual([]);
  });

  it('runs jobs on one VM one at a time', async () => {
    fake.scenario(UP);
    const b = backend();
    await b.open();
    const spec1 = job();
    spec1.env = { HC_SLEEP: '0.5' };
    const [r1, r2] = await Promise.all([b.run(spec1), b.run(job())]);
    expect([r1.exitCode, r2.exitCode]).toEqual([0, 0]);
    // The second job started only after the first had ended.
    const timeline = readFileSync(join(fake.home, 'timeline'), 'utf8').trim().split('\n');
    expect(timeline.map((l) => l.split(' ')[0])).toEqual(['start', 'end', 'start', 'end']);
    await b.close();
  });

  it('uses a TPU held by `hillclimb tpu allocate` and leaves it for `hillclimb tpu release`', async () => {
    fake.scenario(UP);
    const held = HELD;
    writeRecord(join(fake.scratch, 'state'), held);
    const b = backend();
    await b.open();
    expect((await b.run(job())).exitCode).toBe(0);
    await b.close();
    expect(fake.callsOf('queued-resources create')).toEqual([]);
    expect(fake.callsOf('queued-resources delete')).toEqual([]);
    expect(readRecords(join(fake.scratch, 'state'))).toEqual([held]);
  });

  it('a resumed engine of the same run re-attaches to the TPU it allocated, and releases it', async () => {
    fake.scenario(UP);
    const first = backend();
    await first.open(); // the engine "crashes" here: no close()
    const second = backend();
    await second.open();
    expect((await second.run(job())).exitCode).toBe(0);
    await second.close();
    expect(fake.callsOf('queued-resources create')).toHaveLength(1);
    expect(fake.callsOf('queued-resources delete')).toHaveLength(1);
    expect(readRecords(join(fake.scratch, 'state'))).toEqual([]);
  });

  it('stops a job at its time limit on the VM, and kills it remotely on abort', async () => {
    fake.scenario(UP);
    const b = backend();
    await b.open();
    const slow = job({ timeoutMs: 1500 });
    slow.env = { HC_SLEEP: '60' };
    const t = await b.run(slow);
    expect(t).toMatchObject({ exitCode: null, killedBy: 'timeout' });
    expect(t.durationMs).toBeLessThan(20_000);

    const ac = new AbortController();
    const spec = job({ signal: ac.signal });
    spec.env = { HC_SLEEP: '60' };
    setTimeout(() => ac.abort(), 2500);
    const a = await b.run(spec);
    expect(a).toMatchObject({ exitCode: null, killedBy: 'abort' });
    const sshCommands = fake.callsOf('tpu-vm ssh').map((c) => c[c.indexOf('--command') + 1]!);
    expect(sshCommands.at(-1)).toContain(
      `kill -TERM -- "-$(cat 'hillclimb/jobs/${spec.id}/.hillclimb-pgid')"`,
    );
    await b.close();
  });

  it('calls a preempted VM an infrastructure error and replaces it for the next job', async () => {
    fake.scenario([
      { cmd: 'queued-resources create', replies: [{}] },
      { cmd: 'queued-resources describe', replies: [{ stdout: { state: { state: 'ACTIVE' } } }] },
      { cmd: 'tpu-vm scp', run: true },
      {
        cmd: 'tpu-vm ssh',
        name: 'hillclimb-gh7-1',
        replies: [{ exit: 255, stderr: 'Connection closed by remote host' }],
      },
      { cmd: 'tpu-vm describe', name: 'hillclimb-gh7-1', replies: [{ stdout: { state: 'PREEMPTED' } }] },
      { cmd: 'tpu-vm ssh', name: 'hillclimb-gh7-1-g2', run: true },
      { cmd: 'tpu-vm describe', name: 'hillclimb-gh7-1-g2', replies: [{ stdout: { state: 'READY' } }] },
      { cmd: 'queued-resources delete', replies: [{}] },
    ]);
    const logger = memoryLogger();
    const b = backend({ logger });
    await b.open();
    const lost = await b.run(job());
    expect(lost.exitCode).toBeNull();
    expect(lost.infraError).toMatch(
      /hillclimb-gh7-1 in zone-a is not READY any more \(preempted\?\): Connection closed/,
    );
    const next = await b.run(job());
    expect(next).toMatchObject({ exitCode: 0, handle: 'hillclimb-gh7-1-g2@zone-a' });
    expect(fake.callsOf('queued-resources create').map((c) => c[4])).toEqual([
      'hillclimb-gh7-1',
      'hillclimb-gh7-1-g2',
    ]);
    await b.close();
    expect(fake.callsOf('queued-resources delete').map((c) => c[4])).toEqual([
      'hillclimb-gh7-1',
      'hillclimb-gh7-1-g2',
    ]);
  });

  it('attach-only (the tools relay): no TPU held is an error, a lost one is not replaced, nothing is created', async () => {
    fake.scenario(UP);
    // Nothing held: open() says so, and allocates nothing.
    await expect(backend({ attachOnly: true }).open()).rejects.toThrow(
      /no TPU held by `hillclimb tpu allocate` is up for hc-proj \(v5p-8\), and this job allocates none/,
    );
    // Held, then preempted: the next job is an infrastructure error, not a new TPU.
    writeRecord(join(fake.scratch, 'state'), HELD);
    const b = backend({ attachOnly: true });
    await b.open();
    expect((await b.run(job())).exitCode).toBe(0);
    fake.scenario([
      { cmd: 'tpu-vm scp', run: true },
      { cmd: 'tpu-vm ssh', replies: [{ exit: 255, stderr: 'Connection closed by remote host' }] },
      { cmd: 'tpu-vm describe', replies: [{ stdout: { state: 'PREEMPTED' } }] },
      { cmd: 'queued-resources create', replies: [{}] },
    ]);
    expect((await b.run(job())).infraError).toMatch(/hillclimb-held in zone-a is not READY any more/);
    expect((await b.run(job())).infraError).toBe(
      'no TPU: hillclimb-held in zone-a was lost, and this job allocates none',
    );
    // A status check that failed once (a gcloud hiccup) does not end the held TPU's use: asked again.
    fake.scenario(UP);
    expect(await b.run(job())).toMatchObject({ exitCode: 0, handle: 'hillclimb-held@zone-a' });
    await b.close();
    expect(fake.callsOf('queued-resources create')).toEqual([]);
    expect(fake.callsOf('queued-resources delete')).toEqual([]);
  });

  it('attach-only never takes over a TPU a backend of this run allocated (it would release it)', async () => {
    fake.scenario(UP);
    await backend().open(); // an engine of this run allocated one and "crashed"
    const b = backend({ attachOnly: true });
    await expect(b.open()).rejects.toThrow(/allocates none/);
    expect(fake.callsOf('queued-resources create')).toHaveLength(1);
    expect(fake.callsOf('queued-resources delete')).toEqual([]);
  });

  it('through the factory with --dry-run: prints the gcloud commands and creates nothing', async () => {
    fake.scenario([]);
    const config = configWith(
      '  backend: tpu-vm\n  tpu_vm:\n    project: hc-proj\n    zones: [zone-a]\n    accelerator_type: v5p-8\n    runtime_version: v2\n',
      fake.scratch,
    );
    const logger = memoryLogger();
    const b = buildBackend(config, { root: fake.scratch, logger, dryRun: true, runId: 'dry-1' });
    await b.open();
    const r = await b.run(job());
    await b.close();
    expect(r.infraError).toMatch(/dry run/);
    expect(fake.calls()).toEqual([]);
    const printed = logger.lines
      .filter((l) => l.startsWith('dry run: $ gcloud compute tpus '))
      .map((l) => l.split(' ').slice(6, 8).join(' '));
    expect(printed).toEqual([
      'queued-resources create',
      'queued-resources describe',
      'tpu-vm scp',
      'tpu-vm ssh',
      'queued-resources delete',
    ]);
    expect(existsSync(tpuStateDirFor(config))).toBe(false);
  });
});
