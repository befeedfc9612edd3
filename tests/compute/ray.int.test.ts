// The ray backend against a REAL local Ray head (started once for this file): package upload, submit,
// status polling, log capture, outputs returned through the log, exit codes, stop on timeout/abort,
// attach on a retried submit, PENDING and runner failures classified as infrastructure errors.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobSpec } from '../../src/compute/backend.js';
import { RayBackend } from '../../src/compute/backends/ray.js';
import { buildBackend } from '../../src/compute/factory.js';
import { raySubmissionId } from '../../src/compute/names.js';
import { RayJobsClient } from '../../src/compute/ray/client.js';
import type { RayConfig } from '../../src/config/types.js';
import { memoryLogger } from '../../src/util/log.js';
import { tempDir } from '../helpers/paths.js';
import { configWith, gitRepo } from './helpers.js';
import { type RayHead, rayUnavailableReason, startRayHead, VENV_PYTHON } from './ray-head.js';

const unavailable = rayUnavailableReason();
if (unavailable) console.warn(`ray backend tests skipped: ${unavailable}`);

const JOB_PY = `import json, os, sys, time
args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
with open(os.environ["HC_COUNTER"], "a") as f:
    f.write("ran\\n")
if "metrics" in args:
    json.dump({"python": sys.executable, "cwd": os.getcwd(), "argv": sys.argv[1:], "env": os.environ.get("HC_X")},
              open(args["metrics"], "w"))
if "junit" in args:
    open(args["junit"], "w").write("<testsuite tests='1'/>")
if "trace" in args:
    os.makedirs(os.path.join(args["trace"], "plugins", "profile", "run1"))
    open(os.path.join(args["trace"], "plugins", "profile", "run1", "host.trace.json.gz"), "wb").write(os.urandom(4096))
if "big" in args:
    open(args["big"], "wb").write(os.urandom(int(args["size"])))
print("job output line", flush=True)
time.sleep(float(os.environ.get("HC_SLEEP", "0")))
sys.exit(int(os.environ.get("HC_EXIT", "0")))
`;

describe.skipIf(unavailable !== undefined)('RayBackend against a real Ray head', () => {
  let head: RayHead;
  let repo: { dir: string; cleanup: () => void };
  let scratch: { dir: string; cleanup: () => void };
  let config: RayConfig;
  let client: RayJobsClient;
  let n = 0;

  beforeAll(async () => {
    scratch = tempDir('hc-ray-');
    repo = await gitRepo({ 'job.py': JOB_PY, 'pkg/__init__.py': '' });
    head = await startRayHead();
    client = new RayJobsClient(head.address);
    config = {
      address: head.address,
      poll_seconds: 0.3,
      python: VENV_PYTHON,
      pending_timeout_minutes: 15,
      max_output_mb: 32,
    };
  }, 150_000);

  afterAll(async () => {
    await head?.stop();
    repo?.cleanup();
    scratch?.cleanup();
  }, 90_000);

  function backend(over: Partial<RayConfig> = {}, logger = memoryLogger()): RayBackend {
    return new RayBackend({ config: { ...config, ...over }, logger, stopWaitMs: 30_000 });
  }

  function job(over: Partial<JobSpec> = {}): JobSpec {
    n += 1;
    const dir = join(scratch.dir, `job${n}`);
    return {
      id: `t${process.pid}-job-${n}`,
      command: ['{python}', 'job.py'],
      workdir: repo.dir,
      env: { HC_COUNTER: join(dir, 'counter') },
      timeoutMs: 120_000,
      outputs: {},
      logFile: join(dir, 'job.log'),
      ...over,
    };
  }

  it('runs a job on the cluster and brings metrics, JUnit and trace back to their local destinations', async () => {
    const out = join(scratch.dir, 'outs1');
    const hostile = "it's $(echo pwned) `id` ; a&&b";
    const spec = job({
      command: ['{python}', 'job.py', 'metrics={metrics}', 'junit={junit}', 'trace={trace}', hostile],
      outputs: {
        metrics: join(out, 'm', 'metrics.json'),
        junit: join(out, 'j', 'junit.xml'),
        trace: join(out, 'trace'),
      },
    });
    spec.env = { ...spec.env, HC_X: 'env-value' };
    // Through the factory, as the loop builds it.
    const cfg = configWith(
      `  backend: ray\n  ray:\n    address: ${head.address}\n    poll_seconds: 0.3\n    python: ${VENV_PYTHON}\n`,
    );
    const logger = memoryLogger();
    const b = buildBackend(cfg, { root: repo.dir, logger });
    await b.open();
    const r = await b.run(spec);
    await b.close();
    expect(r.infraError).toBeUndefined();
    expect(r).toMatchObject({ exitCode: 0, handle: raySubmissionId(spec.id) });
    const m = JSON.parse(readFileSync(spec.outputs.metrics!, 'utf8')) as Record<string, unknown>;
    expect(m.python).toBe(VENV_PYTHON);
    expect(m.env).toBe('env-value');
    expect(m.argv).toContain(hostile);
    // The job ran in Ray's unpacked copy of the tree, not in the local checkout.
    expect(m.cwd).not.toBe(repo.dir);
    expect(String(m.cwd)).toContain(head.tempDir);
    expect(readFileSync(spec.outputs.junit!, 'utf8')).toBe("<testsuite tests='1'/>");
    expect(readFileSync(join(out, 'trace', 'plugins', 'profile', 'run1', 'host.trace.json.gz')).length).toBe(
      4096,
    );
    const log = readFileSync(spec.logFile, 'utf8');
    expect(log).toContain('job output line');
    expect(log).toContain('[hillclimb: outputs received');
    expect(log).not.toMatch(/^[A-Za-z0-9+/]{76}$/m); // no base64 payload in the local log
    expect(b.info()).toMatchObject({ backend: 'ray', hasAccelerator: false });
    expect(logger.lines.join('\n')).toMatch(/ray: uploading gcs:\/\/_ray_pkg_[0-9a-f]{40}\.zip/);
  });

  it('reports a non-zero exit as the job failure, with outputs still returned; the same tree is not uploaded again', async () => {
    const out = join(scratch.dir, 'outs2');
    const spec = job({
      command: ['{python}', 'job.py', 'metrics={metrics}'],
      outputs: { metrics: join(out, 'metrics.json') },
    });
    spec.env = { ...spec.env, HC_EXIT: '3' };
    const logger = memoryLogger();
    const r = await backend({}, logger).run(spec);
    expect(r).toMatchObject({ exitCode: 3 });
    expect(r.infraError).toBeUndefined();
    expect(existsSync(spec.outputs.metrics!)).toBe(true);
    expect(logger.lines.join('\n')).not.toContain('uploading');
  });

  it('attaches to the existing job when the same id is submitted again, instead of running it twice', async () => {
    const out = join(scratch.dir, 'outs3');
    const spec = job({
      command: ['{python}', 'job.py', 'metrics={metrics}'],
      outputs: { metrics: join(out, 'm.json') },
    });
    const first = await backend().run(spec);
    expect(first.exitCode).toBe(0);
    const logger = memoryLogger();
    const second = await backend({}, logger).run(spec);
    expect(second).toMatchObject({ exitCode: 0, handle: first.handle });
    expect(readFileSync(spec.env!.HC_COUNTER!, 'utf8')).toBe('ran\n');
    expect(existsSync(spec.outputs.metrics!)).toBe(true);
    expect(logger.lines.join('\n')).toContain('already exists (SUCCEEDED); attaching');
  });

  it('stops the job on the cluster at the timeout and on abort', async () => {
    const spec = job({ timeoutMs: 1500 });
    spec.env = { ...spec.env, HC_SLEEP: '120' };
    const t = await backend().run(spec);
    expect(t).toMatchObject({ exitCode: null, killedBy: 'timeout' });
    expect((await client.getJob(raySubmissionId(spec.id)))?.status).toBe('STOPPED');

    const ac = new AbortController();
    const spec2 = job();
    spec2.env = { ...spec2.env, HC_SLEEP: '120' };
    setTimeout(() => ac.abort(), 4000);
    const a = await backend().run({ ...spec2, signal: ac.signal });
    expect(a).toMatchObject({ exitCode: null, killedBy: 'abort' });
    expect((await client.getJob(raySubmissionId(spec2.id)))?.status).toBe('STOPPED');
  });

  it('stops a job that prints nothing for longer than the idle timeout', async () => {
    const spec = job({ idleTimeoutMs: 2500 });
    spec.env = { ...spec.env, HC_SLEEP: '120' };
    const r = await backend().run(spec);
    expect(r).toMatchObject({ exitCode: null, killedBy: 'idle-timeout' });
  });

  it('calls a job stuck PENDING (no node has the resources) an infrastructure error and stops it', async () => {
    const spec = job();
    const logger = memoryLogger();
    const started = Date.now();
    const r = await backend({ entrypoint_resources: { TPU: 4 }, pending_timeout_minutes: 0.05 }, logger).run(
      spec,
    );
    expect(r.exitCode).toBeNull();
    expect(r.infraError).toMatch(/PENDING for more than 0.05 min for \{"TPU":4\}/);
    // Ray queues the stop until the job could start; hillclimb does not wait for that.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(logger.lines.join('\n')).toContain(`stopping ${raySubmissionId(spec.id)} (pending)`);
    expect((await client.getJob(raySubmissionId(spec.id)))?.status).toBe('PENDING');
    expect(existsSync(spec.env!.HC_COUNTER!)).toBe(false);
  });

  it('refuses outputs over the cap with an infrastructure error naming the cap', async () => {
    const spec = job({
      command: ['{python}', 'job.py', 'big={metrics}', 'size=3000000'],
      outputs: { metrics: join(scratch.dir, 'outs5', 'm.json') },
    });
    const r = await backend({ max_output_mb: 1 }).run(spec);
    expect(r.exitCode).toBe(0);
    expect(r.infraError).toMatch(/exceed the cap of 1048576 bytes/);
    expect(existsSync(spec.outputs.metrics!)).toBe(false);
  });

  it('calls a worker without the configured interpreter an infrastructure error, not a job failure', async () => {
    const r = await backend({ python: '/nonexistent/python3' }).run(job());
    expect(r.exitCode).toBeNull();
    expect(r.infraError).toMatch(/FAILED before the runner reported/);
  });
});
