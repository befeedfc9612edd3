// Failure classification of the ray backend at the HTTP boundary: a local server speaking the Jobs API
// shape plays heads that misbehave in ways a real head cannot be made to on demand (gone, restarted,
// refusing, demanding a token).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { JobSpec } from '../../src/compute/backend.js';
import { isPrivateAddress, RayBackend } from '../../src/compute/backends/ray.js';
import { raySubmissionId } from '../../src/compute/names.js';
import { runnerNonce } from '../../src/compute/runner/protocol.js';
import type { RayConfig } from '../../src/config/types.js';
import { HillclimbError } from '../../src/util/errors.js';
import { memoryLogger } from '../../src/util/log.js';
import { gitRepo } from './helpers.js';

interface Seen {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

type Handler = (req: Seen, res: ServerResponse) => void;

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function fakeHead(
  handler: Handler,
): Promise<{ address: string; seen: Seen[]; kill: () => Promise<void> }> {
  const seen: Seen[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const s = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      };
      seen.push(s);
      handler(s, res);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  let closed = false;
  const kill = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  };
  cleanups.push(kill);
  return { address: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, kill };
}

const json = (res: ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

function config(address: string, over: Partial<RayConfig> = {}): RayConfig {
  return {
    address,
    poll_seconds: 0.05,
    python: 'python3',
    pending_timeout_minutes: 15,
    max_output_mb: 32,
    ...over,
  };
}

async function repoJob(over: Partial<JobSpec> = {}): Promise<JobSpec> {
  const repo = await gitRepo({ 'a.py': '1\n' });
  cleanups.push(repo.cleanup);
  return {
    id: 'j1',
    command: ['{python}', 'a.py'],
    workdir: repo.dir,
    timeoutMs: 60_000,
    outputs: {},
    logFile: join(repo.dir, '..', `${repo.dir.split('/').pop()}-job.log`),
    ...over,
  };
}

/** A head where job `j1` runs for `runningPolls` polls and then ends as `final`. */
function scriptedHead(final: Record<string, unknown>, logs: string, runningPolls = 1): Handler {
  let polls = 0;
  return (req, res) => {
    if (req.path === '/api/version') return json(res, 200, { ray_version: '2.60.0' });
    if (req.path.startsWith('/api/packages/')) return json(res, 200, {});
    if (req.method === 'POST' && req.path === '/api/jobs/') return json(res, 200, { submission_id: 'x' });
    if (req.path.endsWith('/logs')) return json(res, 200, { logs });
    if (req.method === 'GET' && req.path.startsWith('/api/jobs/')) {
      if (polls === 0 && req.path.endsWith(raySubmissionId('j1'))) {
        polls += 1;
        return res.writeHead(404).end('Job does not exist');
      }
      polls += 1;
      const base = { submission_id: raySubmissionId('j1'), entrypoint: 'x' };
      return json(
        res,
        200,
        polls <= runningPolls + 1 ? { ...base, status: 'RUNNING' } : { ...base, ...final },
      );
    }
    res.writeHead(404).end();
  };
}

describe('RayBackend failure classification (HTTP boundary)', () => {
  it('open() names an unreachable head and says to start the tunnel', async () => {
    const head = await fakeHead(() => undefined);
    await head.kill();
    const b = new RayBackend({ config: config(head.address), logger: memoryLogger() });
    const err = (await b.open().catch((e: unknown) => e)) as HillclimbError;
    expect(err).toBeInstanceOf(HillclimbError);
    expect(err.message).toMatch(/does not answer.*cannot reach the Ray head \(ECONNREFUSED\)/);
    expect(err.hint).toMatch(/tunnel/);
  });

  it('sends the token as a Bearer header without a browser fingerprint, and never logs it', async () => {
    const head = await fakeHead(scriptedHead({ status: 'SUCCEEDED' }, ''));
    process.env.HC_TEST_RAY_TOKEN = 'ray-token-value-123';
    const logger = memoryLogger();
    try {
      const b = new RayBackend({ config: config(head.address, { token_env: 'HC_TEST_RAY_TOKEN' }), logger });
      await b.open();
    } finally {
      delete process.env.HC_TEST_RAY_TOKEN;
    }
    expect(head.seen[0]!.headers.authorization).toBe('Bearer ray-token-value-123');
    expect(Object.keys(head.seen[0]!.headers).filter((h) => /^sec-fetch|^origin$|^referer$/.test(h))).toEqual(
      [],
    );
    expect(logger.lines.join('\n')).not.toContain('ray-token-value-123');
  });

  it('refuses to start when token_env names an unset variable', () => {
    expect(
      () =>
        new RayBackend({
          config: config('http://127.0.0.1:1', { token_env: 'HC_UNSET_TOKEN_X' }),
          logger: memoryLogger(),
        }),
    ).toThrow(/HC_UNSET_TOKEN_X, which is not set/);
  });

  it('a 401 from a token cluster is an infra error that says which key to set', async () => {
    const head = await fakeHead((_req, res) => res.writeHead(401).end('unauthorized'));
    const b = new RayBackend({ config: config(head.address), logger: memoryLogger() });
    const r = await b.run(await repoJob());
    expect(r.infraError).toMatch(/HTTP 401.*compute\.ray\.token_env/);
  });

  it('a failing submit is an infrastructure error', async () => {
    const head = await fakeHead((req, res) => {
      if (req.method === 'GET' && req.path.startsWith('/api/jobs/')) return res.writeHead(404).end();
      if (req.path.startsWith('/api/packages/')) return json(res, 200, {});
      res.writeHead(500).end('Traceback ... No available agent to submit job, please try again later.');
    });
    const r = await new RayBackend({ config: config(head.address), logger: memoryLogger() }).run(
      await repoJob(),
    );
    expect(r.exitCode).toBeNull();
    expect(r.infraError).toMatch(/could not submit hillclimb-j1: POST .* HTTP 500: .*No available agent/);
  });

  it('a submit racing another one ("already exists") attaches to that job', async () => {
    const nonce = runnerNonce(raySubmissionId('j1'));
    const logs = `hi\n@@hillclimb ${nonce} outputs-begin sha256=${'0'.repeat(64)} bytes=0@@\n@@hillclimb ${nonce} outputs-end@@\n@@hillclimb ${nonce} result exit=4@@\n`;
    const inner = scriptedHead({ status: 'FAILED', driver_exit_code: 4 }, logs);
    const head = await fakeHead((req, res) => {
      if (req.method === 'POST' && req.path === '/api/jobs/') {
        return res.writeHead(500).end('ValueError: Job with submission_id hillclimb-j1 already exists.');
      }
      inner(req, res);
    });
    const logger = memoryLogger();
    const r = await new RayBackend({ config: config(head.address), logger }).run(await repoJob());
    // The fake's outputs digest is wrong on purpose: exit code kept, outputs reported as damaged.
    expect(r.exitCode).toBe(4);
    expect(r.infraError).toMatch(/outputs damaged in transit/);
    expect(logger.lines.join('\n')).toContain('submitted meanwhile; attaching');
  });

  it('a job that vanishes from the head (restart) is an infrastructure error', async () => {
    let polls = 0;
    const head = await fakeHead((req, res) => {
      if (req.path.startsWith('/api/packages/')) return json(res, 200, {});
      if (req.method === 'POST') return json(res, 200, {});
      if (req.path.endsWith('/logs')) return json(res, 200, { logs: 'x\n' });
      polls += 1;
      if (polls === 2)
        return json(res, 200, { submission_id: 'hillclimb-j1', status: 'RUNNING', entrypoint: '' });
      res.writeHead(404).end('Job does not exist');
    });
    const r = await new RayBackend({ config: config(head.address), logger: memoryLogger() }).run(
      await repoJob(),
    );
    expect(r.infraError).toMatch(/disappeared from the cluster/);
  });

  it('losing contact with the head for longer than the grace period is an infrastructure error', async () => {
    let polls = 0;
    const head = await fakeHead((req, res) => {
      if (req.path.startsWith('/api/packages/')) return json(res, 200, {});
      if (req.method === 'POST') return json(res, 200, {});
      if (req.path.endsWith('/logs')) return json(res, 200, { logs: '' });
      polls += 1;
      if (polls === 1) return res.writeHead(404).end();
      json(res, 200, { submission_id: 'hillclimb-j1', status: 'RUNNING', entrypoint: '' });
      if (polls === 3) void head.kill();
    });
    const b = new RayBackend({
      config: config(head.address),
      logger: memoryLogger(),
      connectionGraceMs: 300,
    });
    const r = await b.run(await repoJob());
    expect(r.infraError).toMatch(/lost contact with the Ray head .*ECONNREFUSED/);
  });

  it('a job stopped by someone else, or failing before the runner reported, is an infrastructure error', async () => {
    const head1 = await fakeHead(scriptedHead({ status: 'STOPPED' }, 'x\n'));
    const r1 = await new RayBackend({ config: config(head1.address), logger: memoryLogger() }).run(
      await repoJob(),
    );
    expect(r1.infraError).toMatch(/stopped outside hillclimb/);
    const head2 = await fakeHead(
      scriptedHead({ status: 'FAILED', error_type: 'RUNTIME_ENV_SETUP_FAILURE', message: 'pip failed' }, ''),
    );
    const r2 = await new RayBackend({ config: config(head2.address), logger: memoryLogger() }).run(
      await repoJob(),
    );
    expect(r2.infraError).toMatch(
      /FAILED before the runner reported \(RUNTIME_ENV_SETUP_FAILURE: pip failed\)/,
    );
  });
});

describe('isPrivateAddress', () => {
  it('accepts loopback and private ranges, warns for anything else', () => {
    for (const a of [
      'http://127.0.0.1:8265',
      'http://localhost:8265',
      'http://10.1.2.3:8265',
      'http://172.20.0.1',
      'http://192.168.1.9',
      'http://[::1]:8265',
      'http://head.internal:8265',
    ]) {
      expect(isPrivateAddress(a), a).toBe(true);
    }
    for (const a of ['http://34.1.2.3:8265', 'https://ray.example.com', 'http://172.32.0.1']) {
      expect(isPrivateAddress(a), a).toBe(false);
    }
  });
});
