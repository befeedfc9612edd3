import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { displayCommand, ExecError, run } from '../../src/exec/exec.js';
import { tempDir } from '../helpers/paths.js';

const SCRIPTS = join(import.meta.dirname, 'scripts');
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** Alive and not a zombie (a killed orphan may wait unreaped when PID 1 does not reap). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

describe('run', () => {
  it('returns both streams and the exit code of a successful command', async () => {
    const r = await run('sh', [join(SCRIPTS, 'chatty.sh'), '0'], { env: { SECRET_VALUE: 's3cr3t-value' } });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('out line 1\ntoken=s3cr3t-value\npartial');
    expect(r.stderr).toBe('err line 1\n');
    expect(r.killedBy).toBeUndefined();
  });

  it('throws an ExecError naming the command, exit code and log file on a disallowed exit', async () => {
    const t = tempDir();
    cleanups.push(t.cleanup);
    const log = join(t.dir, 'logs', 'run.log');
    const err = await run('sh', [join(SCRIPTS, 'chatty.sh'), '3'], { logFile: log }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExecError);
    const msg = (err as ExecError).message;
    expect(msg).toContain('chatty.sh');
    expect(msg).toContain('exit code 3');
    expect(msg).toContain(log);
    expect((err as ExecError).result?.exitCode).toBe(3);
  });

  it('lets a caller opt into expected non-zero exits', async () => {
    const r = await run('sh', ['-c', 'exit 1'], { allowedExitCodes: [0, 1] });
    expect(r.exitCode).toBe(1);
    const any = await run('sh', ['-c', 'exit 7'], { allowedExitCodes: 'any' });
    expect(any.exitCode).toBe(7);
  });

  it('redacts secrets in the log file, the returned output and the error message', async () => {
    const t = tempDir();
    cleanups.push(t.cleanup);
    const log = join(t.dir, 'run.log');
    const secret = 's3cr3t-value';
    const err = (await run('sh', [join(SCRIPTS, 'chatty.sh'), '1', secret], {
      env: { SECRET_VALUE: secret },
      logFile: log,
      redact: [secret],
    }).catch((e: unknown) => e)) as ExecError;
    const text = readFileSync(log, 'utf8');
    expect(text).toContain('token=***');
    expect(text).not.toContain(secret);
    expect(err.message).not.toContain(secret);
    expect(err.result?.stdout).toContain('token=***');
    // The partial last line is flushed to the log too.
    expect(text).toContain('partial');
  });

  it('kills the whole process group on a wall-clock timeout', async () => {
    const lines: string[] = [];
    const err = (await run('sh', [join(SCRIPTS, 'sleeper.sh')], {
      timeoutMs: 500,
      killGraceMs: 500,
      onLine: (l) => lines.push(l),
    }).catch((e: unknown) => e)) as ExecError;
    expect(err).toBeInstanceOf(ExecError);
    expect(err.message).toContain('timed out after 500 ms');
    expect(err.result?.killedBy).toBe('timeout');
    const grandchild = Number(lines.find((l) => l.startsWith('started'))?.split(' ')[1]);
    expect(grandchild).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(isAlive(grandchild)).toBe(false);
  });

  it('kills a process that stays silent past the idle timeout, but not one that keeps printing', async () => {
    const silent = (await run('sh', ['-c', 'sleep 30'], { idleTimeoutMs: 300 }).catch(
      (e: unknown) => e,
    )) as ExecError;
    expect(silent.result?.killedBy).toBe('idle-timeout');
    expect(silent.message).toContain('no output for 300 ms');

    const chatty = await run('sh', [join(SCRIPTS, 'drip.sh'), '6'], { idleTimeoutMs: 1000 });
    expect(chatty.exitCode).toBe(0);
    expect(chatty.stdout.split('\n').filter(Boolean)).toHaveLength(6);
  });

  it('a process that exited on its own keeps its exit code when a timer fires while its pipes drain', async () => {
    // The shell exits 75 at once; the sleep it left holds its pipes open, and the idle timer fires before
    // they close. Its leftover is stopped, but it was not "killed by the idle timeout": it ended itself.
    const r = await run('sh', ['-c', 'sleep 30 & echo "started $!"; exit 75'], {
      idleTimeoutMs: 1000,
      allowedExitCodes: 'any',
    });
    expect(r).toMatchObject({ exitCode: 75, killedBy: undefined });
    const leftover = Number(r.stdout.split(' ')[1]);
    for (let i = 0; i < 100 && isAlive(leftover); i++) await new Promise((res) => setTimeout(res, 50));
    expect(isAlive(leftover)).toBe(false);
  });

  it('stops on an abort signal', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200);
    const err = (await run('sh', ['-c', 'sleep 30'], { signal: ac.signal }).catch(
      (e: unknown) => e,
    )) as ExecError;
    expect(err.result?.killedBy).toBe('abort');
  });

  it('says "command not found" with a hint for a missing binary', async () => {
    const err = (await run('no-such-binary-hc', ['x']).catch((e: unknown) => e)) as ExecError;
    expect(err).toBeInstanceOf(ExecError);
    expect(err.message).toContain('command not found: no-such-binary-hc');
    expect(err.hint).toContain('PATH');
  });

  it('passes stdin input and keeps multibyte characters split across chunks intact', async () => {
    const text = 'ünïcødé ✓ '.repeat(20_000);
    const r = await run('cat', [], { input: text });
    expect(r.stdout).toBe(text);
  });

  it('succeeds when the child exits without reading its stdin input', async () => {
    const r = await run('sh', ['-c', 'echo done'], { input: 'x'.repeat(1 << 20) });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('done\n');
  });

  it('returns soon after the child exits even when a background grandchild keeps its stdout open', async () => {
    const r = await run('sh', ['-c', 'sleep 20 & echo $!; echo parent done']);
    const grandchild = Number(r.stdout.split('\n')[0]);
    cleanups.push(() => {
      try {
        process.kill(grandchild, 'SIGKILL');
      } catch {
        // already gone
      }
    });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('parent done');
    // The drain wait is 2 s; the grandchild's 20 s sleep must not hold the call.
    expect(r.durationMs).toBeLessThan(10_000);
  });

  it('hands a scrubbed environment to the child when inheritEnv is false', async () => {
    process.env.HC_TEST_LEAK = 'leaky';
    try {
      const r = await run('sh', ['-c', 'echo "[$HC_TEST_LEAK][$ONLY]"'], {
        inheritEnv: false,
        env: { ONLY: 'kept' },
      });
      expect(r.stdout.trim()).toBe('[][kept]');
    } finally {
      delete process.env.HC_TEST_LEAK;
    }
  });

  it('keeps only the tail of huge output in memory but writes all of it to the log', async () => {
    const t = tempDir();
    cleanups.push(t.cleanup);
    const log = join(t.dir, 'big.log');
    const r = await run('sh', ['-c', 'seq 1 20000'], { maxBufferChars: 1000, logFile: log });
    expect(r.stdout.length).toBeLessThanOrEqual(1000);
    expect(r.stdout.trim().endsWith('20000')).toBe(true);
    expect(existsSync(log)).toBe(true);
    expect(readFileSync(log, 'utf8').split('\n')[0]).toBe('1');
  });
});

describe('displayCommand', () => {
  it('quotes arguments that a shell would split, for display only', () => {
    expect(displayCommand('git', ['commit', '-m', "it's done"])).toBe("git commit -m 'it'\\''s done'");
    expect(displayCommand('ls', ['-la', '/tmp'])).toBe('ls -la /tmp');
  });
});
