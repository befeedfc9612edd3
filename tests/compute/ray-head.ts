// A real local Ray head for the ray backend tests: `ray start --head --block` in its own temp dir and
// session, on free non-default ports, with one CPU. Stopped by signalling the process we started (it
// drains and stops its own daemons), then any survivor of that session is killed by pid. Never
// `ray stop`, which would kill every Ray process of the user on this shared machine.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/paths.js';

export const RAY_BIN = join(REPO_ROOT, '.venv', 'bin', 'ray');
export const VENV_PYTHON = join(REPO_ROOT, '.venv', 'bin', 'python');

/** Why the Ray tests cannot run here, or undefined when they can. */
export function rayUnavailableReason(): string | undefined {
  if (!existsSync(RAY_BIN)) return `${RAY_BIN} not found (run hillclimb setup --dev)`;
  try {
    execFileSync(VENV_PYTHON, ['-c', 'import ray.dashboard.modules.job'], {
      stdio: 'ignore',
      timeout: 60_000,
    });
    return undefined;
  } catch {
    return 'ray[default] is not importable from the project venv';
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface RayHead {
  address: string;
  tempDir: string;
  stop(): Promise<void>;
}

/** Processes whose session id is `sid` (the `ray start` process leads its own session). */
function sessionMembers(sid: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // fields: state ppid pgrp session ...
      if (Number(fields[3]) === sid && fields[0] !== 'Z') pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

/**
 * A Ray head on ports free a moment ago. Another process can take one of them before Ray binds it (a
 * busy machine hands out ephemeral ports all the time): a head that exits saying a port is taken is
 * started again on fresh ports.
 */
export async function startRayHead(attempts = 3): Promise<RayHead> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startRayHeadOnce();
    } catch (e) {
      const taken =
        e instanceof Error &&
        /already in use|already occupied|address in use|failed to bind|is not available/i.test(e.message);
      if (!taken || attempt >= attempts) throw e;
    }
  }
}

async function startRayHeadOnce(): Promise<RayHead> {
  // Short path: Ray puts unix sockets under the temp dir (107-character limit).
  const tempDir = mkdtempSync('/tmp/hcray-');
  const ports = await Promise.all(Array.from({ length: 10 }, () => freePort()));
  // Worker ports: a range below Linux's ephemeral ports (32768+), where the OS hands out the free ports
  // above, and clear of every one of them (Ray refuses overlapping ranges).
  let workerBase = 0;
  do {
    workerBase = 20000 + Math.floor(Math.random() * 12000);
  } while (ports.some((p) => p !== undefined && p >= workerBase && p <= workerBase + 200));
  const [gcs, dash, client, nodeMgr, objMgr, agentHttp, agentGrpc, rtEnv, metrics] = ports;
  const out = openSync(join(tempDir, 'ray-start.log'), 'a');
  const child: ChildProcess = spawn(
    RAY_BIN,
    [
      'start',
      '--head',
      '--block',
      '--temp-dir',
      tempDir,
      '--num-cpus',
      '1',
      '--object-store-memory',
      String(100 * 1024 * 1024),
      '--include-dashboard',
      'true',
      '--dashboard-host',
      '127.0.0.1',
      '--disable-usage-stats',
      `--port=${gcs}`,
      `--dashboard-port=${dash}`,
      `--ray-client-server-port=${client}`,
      `--node-manager-port=${nodeMgr}`,
      `--object-manager-port=${objMgr}`,
      `--dashboard-agent-listen-port=${agentHttp}`,
      `--dashboard-agent-grpc-port=${agentGrpc}`,
      `--runtime-env-agent-port=${rtEnv}`,
      `--metrics-export-port=${metrics}`,
      `--min-worker-port=${workerBase}`,
      `--max-worker-port=${workerBase + 200}`,
    ],
    {
      detached: true,
      stdio: ['ignore', out, out],
      env: { ...process.env, RAY_USAGE_STATS_ENABLED: '0' },
    },
  );
  const pid = child.pid!;
  let exited = false;
  child.on('exit', () => {
    exited = true;
  });
  const address = `http://127.0.0.1:${dash}`;

  const stop = async (): Promise<void> => {
    if (!exited) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // gone
      }
      const deadline = Date.now() + 45_000;
      while (!exited && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    }
    for (const p of sessionMembers(pid)) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // gone
      }
    }
    rmSync(tempDir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 110_000;
  for (;;) {
    if (exited) {
      const log = readFileSync(join(tempDir, 'ray-start.log'), 'utf8');
      await stop();
      throw new Error(`ray start exited early:\n${log.slice(-3000)}`);
    }
    try {
      const r = await fetch(`${address}/api/version`, { signal: AbortSignal.timeout(2000) });
      if (r.ok) {
        // The job agent comes up a little after the head's HTTP server.
        const jobs = await fetch(`${address}/api/jobs/`, { signal: AbortSignal.timeout(5000) });
        if (jobs.ok) break;
      }
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error('the Ray head did not answer within 110 s');
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  return { address, tempDir, stop };
}
