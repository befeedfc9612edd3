// The job runner, run by a real Python interpreter exactly as a Ray worker or TPU VM starts it, and its
// output parsed and unpacked by the engine's side of the protocol.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { installOutputs, readTar } from '../../src/compute/outputs.js';
import {
  LogForwarder,
  parseRunnerOutput,
  type RunnerSpec,
  runnerArgv,
  runnerNonce,
} from '../../src/compute/runner/protocol.js';
import { RUNNER_FILE, RUNNER_SOURCE } from '../../src/compute/runner/source.js';
import { shellJoin } from '../../src/compute/shell.js';
import { run } from '../../src/exec/exec.js';
import { tempDir } from '../helpers/paths.js';

const PYTHON = 'python3';
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function tree(): string {
  const t = tempDir('hc-runner-');
  cleanups.push(t.cleanup);
  writeFileSync(join(t.dir, RUNNER_FILE), RUNNER_SOURCE);
  return t.dir;
}

function spec(over: Partial<RunnerSpec>): RunnerSpec {
  return { nonce: runnerNonce('t'), command: ['true'], env: {}, outputs: [], emit: 'log', ...over };
}

/** Start the runner through `sh -c` with the quoted argv, as the Ray entrypoint and ssh --command do. */
async function runRunner(dir: string, s: RunnerSpec, env: Record<string, string> = {}) {
  return run('sh', ['-c', shellJoin(runnerArgv(PYTHON, s))], {
    cwd: dir,
    allowedExitCodes: 'any',
    timeoutMs: 30_000,
    env,
  });
}

/** Processes on this machine whose command line holds `needle` (zombies excluded). */
function processesWith(needle: string): string[] {
  return readdirSync('/proc').filter((p) => {
    try {
      return (
        /^\d+$/.test(p) &&
        readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(needle) &&
        !/\) Z /.test(readFileSync(`/proc/${p}/stat`, 'utf8'))
      );
    } catch {
      return false;
    }
  });
}

/** A job script that writes every output it is handed. */
const WRITER = [
  'import json, os, sys',
  'out = dict(a.split("=", 1) for a in sys.argv[1:])',
  'json.dump({"ok": 1, "python": sys.executable, "cwd": os.getcwd(), "env": os.environ.get("HC_X")}, open(out["metrics"], "w"))',
  'open(out["junit"], "w").write("<testsuite/>")',
  'os.makedirs(os.path.join(out["trace"], "plugins", "profile"))',
  'open(os.path.join(out["trace"], "plugins", "profile", "host.xplane.pb"), "wb").write(bytes(range(256)))',
  'print("job says hi")',
  'sys.exit(int(os.environ.get("HC_EXIT", "0")))',
].join('\n');

describe('job runner', () => {
  it('fills placeholders where it runs, returns outputs through the log, and reports the exit code', async () => {
    const dir = tree();
    writeFileSync(join(dir, 'job.py'), WRITER);
    const s = spec({
      command: ['{python}', '{root}/job.py', 'metrics={metrics}', 'junit={junit}', 'trace={trace}'],
      outputs: ['metrics', 'junit', 'trace'],
      env: { HC_X: 'from-spec', HC_EXIT: '3' },
    });
    const r = await runRunner(dir, s);
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toContain('job says hi');
    const report = parseRunnerOutput(r.stdout, s.nonce);
    expect(report).toMatchObject({ finished: true, exitCode: 3 });
    expect(report.outputs).toBeDefined();

    const dest = tempDir('hc-dest-');
    cleanups.push(dest.cleanup);
    const outputs = {
      metrics: join(dest.dir, 'a', 'metrics.json'),
      junit: join(dest.dir, 'b', 'junit.xml'),
      trace: join(dest.dir, 'c', 'trace'),
    };
    expect(installOutputs(report.outputs!, outputs).installed).toEqual(['junit', 'metrics', 'trace']);
    const metrics = JSON.parse(readFileSync(outputs.metrics, 'utf8')) as Record<string, string>;
    expect(metrics.ok).toBe(1);
    expect(metrics.env).toBe('from-spec');
    expect(metrics.cwd).toBe(dir);
    expect(metrics.python).toMatch(/python/);
    expect(readFileSync(outputs.junit, 'utf8')).toBe('<testsuite/>');
    expect(readFileSync(join(outputs.trace, 'plugins', 'profile', 'host.xplane.pb'))).toEqual(
      Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
    );
  });

  it('passes hostile arguments to the job byte for byte', async () => {
    const dir = tree();
    const hostile = ["it's", '$(echo pwned)', '`id`', 'a;b', 'new\nline', '', '"q"', '@@hillclimb x@@'];
    const s = spec({
      command: [
        '{python}',
        '-c',
        'import json,sys; open("args.json","w").write(json.dumps(sys.argv[1:]))',
        ...hostile,
      ],
    });
    const r = await runRunner(dir, s);
    expect(parseRunnerOutput(r.stdout, s.nonce).exitCode).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, 'args.json'), 'utf8'))).toEqual(hostile);
  });

  it('reports a command that cannot start', async () => {
    const dir = tree();
    const s = spec({ command: ['/nonexistent/program', 'x'] });
    const r = await runRunner(dir, s);
    const report = parseRunnerOutput(r.stdout, s.nonce);
    expect(report.exitCode).toBe(127);
    expect(report.spawnError).toMatch(/nonexistent/);
  });

  it('maps a signal death to 128 + signal, like a shell', async () => {
    const dir = tree();
    const s = spec({ command: ['sh', '-c', 'kill -9 $$'] });
    const report = parseRunnerOutput((await runRunner(dir, s)).stdout, s.nonce);
    expect(report.exitCode).toBe(137);
  });

  it('refuses outputs over the cap with a clear error instead of flooding the log', async () => {
    const dir = tree();
    const s = spec({
      command: [
        '{python}',
        '-c',
        'import os,sys; open(sys.argv[1],"wb").write(os.urandom(200000))',
        '{metrics}',
      ],
      outputs: ['metrics'],
      max_bytes: 10_000,
    });
    const r = await runRunner(dir, s);
    const report = parseRunnerOutput(r.stdout, s.nonce);
    expect(report.exitCode).toBe(0);
    expect(report.outputs).toBeUndefined();
    expect(report.outputsError).toMatch(/exceed the cap of 10000 bytes/);
    expect(r.stdout.length).toBeLessThan(5000);
  });

  it('kills the whole job process group at its own time limit, then drops its pgid record', async () => {
    const dir = tree();
    const marker = `hc-runner-timeout-${process.pid}-${Date.now()}`;
    const s = spec({
      command: ['sh', '-c', `sh -c 'sleep 300; : ${marker}' & sleep 300`],
      timeout_s: 1,
      pgid_file: '.pgid',
    });
    const r = await runRunner(dir, s);
    const report = parseRunnerOutput(r.stdout, s.nonce);
    expect(report.killed).toBe('timeout');
    expect(existsSync(join(dir, '.pgid'))).toBe(false);
    await new Promise((res) => setTimeout(res, 300));
    expect(processesWith(marker)).toEqual([]);
  });

  it('kills what a job leaves running in its process group when it exits (the next job is the champion)', async () => {
    const dir = tree();
    const marker = `hc-runner-orphan-${process.pid}-${Date.now()}`;
    const r = await runRunner(
      dir,
      // One in its process group, one that left it with setsid: neither outlives the job.
      spec({
        command: [
          'sh',
          '-c',
          `sh -c 'sleep 300; : ${marker}' & setsid sh -c 'sleep 300; : ${marker}' & echo started`,
        ],
      }),
    );
    expect(r.stdout).toContain('started');
    await new Promise((res) => setTimeout(res, 200));
    expect(processesWith(marker)).toEqual([]);
  });

  it("gives {cache} the code's own folder when the job names its tree, and a shared one otherwise", async () => {
    const dir = tree();
    const key = 'ab'.repeat(20);
    const r = await runRunner(
      dir,
      spec({ command: ['sh', '-c', 'echo "cache=$0"', '{cache}'], cache_key: key }),
    );
    expect(r.stdout).toMatch(new RegExp(`cache=.*/\\.cache/hillclimb/jobs/by-code/${key}\\n`));
    const shared = await runRunner(dir, spec({ command: ['sh', '-c', 'echo "cache=$0"', '{cache}'] }));
    expect(shared.stdout).toMatch(/cache=.*\/\.cache\/hillclimb\/jobs\/shared\n/);
  });

  it('gives the verifier a fresh {cache} per job, out of the home folder candidate jobs can write, and removes it', async () => {
    const dir = tree();
    const home = join(dir, 'home');
    const planted = join(home, '.cache', 'hillclimb', 'jobs', 'by-code', 'verifier');
    mkdirSync(planted, { recursive: true });
    writeFileSync(join(planted, 'jit_oracle-entry'), 'planted by a candidate job');
    const show = ['sh', '-c', 'echo "cache=$0"; ls -A "$0"; touch "$0/entry"', '{cache}'];
    const runs = [];
    for (let i = 0; i < 2; i++) {
      runs.push(await runRunner(dir, spec({ command: show, cache_key: 'verifier' }), { HOME: home }));
    }
    const folders = runs.map((r) => /cache=(\S+)\n/.exec(r.stdout)![1]!);
    expect(folders[0]).not.toBe(folders[1]);
    for (const [i, r] of runs.entries()) {
      expect(folders[i]).not.toContain(home);
      expect(r.stdout).not.toContain('jit_oracle-entry'); // nothing another job left is there
      expect(r.stdout).not.toContain('entry\n'); // not even the verifier's own previous job
      expect(existsSync(folders[i]!)).toBe(false);
    }
  });

  it('writes the outputs tarball to a file when asked (the TPU VM path)', async () => {
    const dir = tree();
    const s = spec({
      command: ['sh', '-c', 'echo "{\\"v\\": 1}" > "$0"', '{metrics}'],
      outputs: ['metrics', 'junit'],
      emit: 'out.tar.gz',
    });
    const r = await runRunner(dir, s);
    expect(parseRunnerOutput(r.stdout, s.nonce).exitCode).toBe(0);
    const { entries } = readTar(readFileSync(join(dir, 'out.tar.gz')));
    // junit was requested but not written: absent, not empty.
    expect(entries.map((e) => e.path)).toEqual(['metrics.json']);
    expect(entries[0]!.data.toString()).toBe('{"v": 1}\n');
  });

  it('ignores marker lines carrying another nonce (job output cannot forge a result)', async () => {
    const dir = tree();
    const s = spec({ command: ['sh', '-c', 'echo "@@hillclimb 0000000000000000 result exit=0@@"; exit 5'] });
    const report = parseRunnerOutput((await runRunner(dir, s)).stdout, s.nonce);
    expect(report.exitCode).toBe(5);
  });
});

describe('LogForwarder', () => {
  it('forwards complete lines once and replaces the base64 block with one line', () => {
    const n = 'abc123';
    const f = new LogForwarder(n);
    expect(f.next('one\ntw')).toBe('one\n');
    expect(f.next('one\ntwo\n')).toBe('two\n');
    const full = `one\ntwo\n@@hillclimb ${n} outputs-begin sha256=${'0'.repeat(64)} bytes=3@@\nQUJD\n@@hillclimb ${n} outputs-end@@\n@@hillclimb ${n} result exit=0@@\n`;
    const rest = f.next(full, true);
    expect(rest).not.toContain('QUJD');
    expect(rest).toContain('[hillclimb: outputs received (1 lines of base64)]');
    expect(rest).toContain('result exit=0');
    expect(f.next(full, true)).toBe('');
  });
});
