import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { JobSpec } from '../../src/compute/backend.js';
import { detectLocalAccelerator, LocalBackend } from '../../src/compute/backends/local.js';
import { venvPython } from '../../src/project/python.js';
import { memoryLogger } from '../../src/util/log.js';
import { REPO_ROOT, tempDir } from '../helpers/paths.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function setup(): { work: string; out: string; backend: LocalBackend } {
  const t = tempDir('hc-local-');
  cleanups.push(t.cleanup);
  const work = join(t.dir, 'work');
  mkdirSync(work);
  writeFileSync(
    join(work, 'job.py'),
    [
      'import json, os, sys',
      'out = dict(a.split("=", 1) for a in sys.argv[1:])',
      'json.dump({"python": sys.executable, "cwd": os.getcwd(), "token": os.environ.get("GITHUB_TOKEN"),',
      '           "extra": os.environ.get("HC_EXTRA")}, open(out["metrics"], "w"))',
      'os.makedirs(out["trace"]); open(os.path.join(out["trace"], "t.pb"), "w").write("t")',
      'print("hello from the job")',
      'sys.exit(int(os.environ.get("HC_EXIT", "0")))',
    ].join('\n'),
  );
  return {
    work,
    out: join(t.dir, 'out'),
    backend: new LocalBackend({ root: REPO_ROOT, logger: memoryLogger() }),
  };
}

function job(work: string, out: string, over: Partial<JobSpec> = {}): JobSpec {
  return {
    id: 'r1-i001-bench-a-01',
    command: ['{python}', '{root}/job.py', 'metrics={metrics}', 'trace={trace}'],
    workdir: work,
    timeoutMs: 60_000,
    outputs: { metrics: join(out, 'deep', 'metrics.json'), trace: join(out, 'trace') },
    logFile: join(out, 'logs', 'job.log'),
    ...over,
  };
}

describe('LocalBackend', () => {
  it('runs in the working tree with the project venv and writes outputs to their destinations', async () => {
    const { work, out, backend } = setup();
    process.env.GITHUB_TOKEN = 'ghs_secret_token_value';
    try {
      await backend.open();
      const r = await backend.run(job(work, out, { env: { HC_EXTRA: 'yes' } }));
      expect(r).toMatchObject({ exitCode: 0, logFile: join(out, 'logs', 'job.log') });
      expect(r.infraError).toBeUndefined();
      const m = JSON.parse(readFileSync(join(out, 'deep', 'metrics.json'), 'utf8')) as Record<
        string,
        unknown
      >;
      expect(m.python).toBe(venvPython(REPO_ROOT));
      expect(m.cwd).toBe(work);
      expect(m.extra).toBe('yes');
      // The engine's secrets never reach the job.
      expect(m.token).toBeNull();
      expect(readFileSync(join(out, 'trace', 't.pb'), 'utf8')).toBe('t');
      const log = readFileSync(r.logFile, 'utf8');
      expect(log).toMatch(/^\$ .*job\.py/);
      expect(log).toContain('hello from the job');
    } finally {
      delete process.env.GITHUB_TOKEN;
      await backend.close();
    }
  });

  it('returns a non-zero exit as the job failure, not an infra error, and clears stale outputs first', async () => {
    const { work, out, backend } = setup();
    mkdirSync(join(out, 'deep'), { recursive: true });
    writeFileSync(join(out, 'deep', 'metrics.json'), 'stale');
    const r = await backend.run(
      job(work, out, { command: ['{python}', '-c', 'import sys; sys.exit(3)'], env: {} }),
    );
    expect(r.exitCode).toBe(3);
    expect(r.infraError).toBeUndefined();
    expect(existsSync(join(out, 'deep', 'metrics.json'))).toBe(false);
  });

  it('stops a job at the wall-clock timeout, the idle timeout and on abort', async () => {
    const { work, out, backend } = setup();
    const sleeper = ['sh', '-c', 'echo started; sleep 30'];
    const t = await backend.run(job(work, out, { command: sleeper, timeoutMs: 500 }));
    expect(t).toMatchObject({ exitCode: null, killedBy: 'timeout' });
    const idle = await backend.run(job(work, out, { command: sleeper, idleTimeoutMs: 500 }));
    expect(idle).toMatchObject({ exitCode: null, killedBy: 'idle-timeout' });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    const a = await backend.run(job(work, out, { command: sleeper, signal: ac.signal }));
    expect(a).toMatchObject({ exitCode: null, killedBy: 'abort' });
    expect(a.durationMs).toBeLessThan(10_000);
  });

  it('reports a program that does not exist as an infrastructure error', async () => {
    const { work, out, backend } = setup();
    const r = await backend.run(job(work, out, { command: ['hc-no-such-program-xyz', '--x'] }));
    expect(r.exitCode).toBeNull();
    expect(r.infraError).toMatch(/command not found: hc-no-such-program-xyz/);
  });

  it('gives a signal death the shell exit code (a crash is the job failing)', async () => {
    const { work, out, backend } = setup();
    const r = await backend.run(job(work, out, { command: ['sh', '-c', 'kill -SEGV $$'] }));
    expect(r.exitCode).toBe(139);
  });

  it('throws for a placeholder the job gave no destination for (a caller bug)', async () => {
    const { work, out, backend } = setup();
    await expect(
      backend.run(job(work, out, { command: ['{python}', '{junit}'], outputs: {} })),
    ).rejects.toThrow(/\{junit\} has no value/);
  });

  it('prints instead of running in a dry run', async () => {
    const { work, out } = setup();
    const logger = memoryLogger();
    const backend = new LocalBackend({ root: REPO_ROOT, logger, dryRun: true });
    const r = await backend.run(job(work, out));
    expect(r.infraError).toMatch(/dry run/);
    expect(existsSync(join(out, 'deep', 'metrics.json'))).toBe(false);
    expect(logger.lines.join('\n')).toMatch(/dry run: .*job\.py/);
  });
});

describe('detectLocalAccelerator', () => {
  it('finds TPU device files, honours the override, and says cpu otherwise', () => {
    const t = tempDir('hc-dev-');
    cleanups.push(t.cleanup);
    expect(detectLocalAccelerator({}, t.dir).kind).toBe('none');
    mkdirSync(join(t.dir, 'vfio'));
    writeFileSync(join(t.dir, 'vfio', 'vfio'), ''); // the control node alone is not a device
    expect(detectLocalAccelerator({}, t.dir).kind).toBe('none');
    writeFileSync(join(t.dir, 'vfio', '0'), '');
    expect(detectLocalAccelerator({}, t.dir)).toMatchObject({ kind: 'tpu', evidence: `${t.dir}/vfio/0` });
    writeFileSync(join(t.dir, 'accel0'), '');
    expect(detectLocalAccelerator({}, t.dir).evidence).toBe(`${t.dir}/accel0`);
    expect(detectLocalAccelerator({ HILLCLIMB_ACCELERATOR: 'none' }, t.dir).kind).toBe('none');
    expect(new LocalBackend({ root: REPO_ROOT, logger: memoryLogger() }).info()).toMatchObject({
      backend: 'local',
      hasAccelerator: false,
    });
  });
});
