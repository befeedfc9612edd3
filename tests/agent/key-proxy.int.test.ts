/**
 * The key proxy (src/agent/key-proxy.ts) between a client holding the placeholder and an upstream that
 * records what reached it: only listed requests pass, with the real credential and nothing the client
 * sent as one; everything else is refused and counted; an unreachable upstream drops the connection.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { PLACEHOLDER_KEY, startKeyProxy } from '../../src/agent/key-proxy.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

/** An upstream that answers a streamed body and records each request's path and headers. */
async function upstream() {
  const seen: Array<{ method?: string; url?: string; headers: IncomingHttpHeaders; body: string }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => {
      body += d.toString();
    });
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: a\ndata: 1\n\n');
      setTimeout(() => res.end('event: b\ndata: 2\n\n'), 20);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, seen };
}

describe('the key proxy', () => {
  it('forwards a listed request with the real key in place of anything the client sent as one', async () => {
    const up = await upstream();
    const proxy = await startKeyProxy({
      upstream: up.url,
      allow: [{ method: 'POST', path: '/v1/responses' }],
      credential: { header: 'authorization', value: 'Bearer sk-real-key-0123' },
    });
    closers.push(proxy.close);
    const res = await fetch(`${proxy.url}/responses?stream=true`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${PLACEHOLDER_KEY}`,
        'x-api-key': 'something-else',
        cookie: 'session=1',
        'content-type': 'application/json',
      },
      body: '{"model":"m"}',
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('event: a\ndata: 1\n\nevent: b\ndata: 2\n\n');
    expect(up.seen).toHaveLength(1);
    const got = up.seen[0]!;
    expect(got).toMatchObject({ method: 'POST', url: '/v1/responses?stream=true', body: '{"model":"m"}' });
    expect(got.headers.authorization).toBe('Bearer sk-real-key-0123');
    expect(got.headers['x-api-key']).toBeUndefined();
    expect(got.headers.cookie).toBeUndefined();
    expect(proxy.refused).toEqual([]);
  });

  it('refuses every other method and path (403), and forwards nothing of them', async () => {
    const up = await upstream();
    const proxy = await startKeyProxy({
      upstream: up.url,
      allow: [{ method: 'POST', path: '/v1/responses' }],
      credential: { header: 'x-api-key', value: 'sk-real' },
    });
    closers.push(proxy.close);
    const origin = proxy.url.replace(/\/v1$/, '');
    for (const [method, path] of [
      ['GET', '/v1/responses/../files'],
      ['POST', '/v1/files'],
      ['DELETE', '/v1/responses'],
      ['GET', '/'],
    ] as const) {
      const res = await fetch(`${origin}${path}`, { method });
      expect(res.status, `${method} ${path}`).toBe(403);
    }
    expect(up.seen).toEqual([]);
    expect(proxy.refused).toEqual(['GET /v1/files', 'POST /v1/files', 'DELETE /v1/responses', 'GET /']);
  });

  it('an upstream that cannot be reached drops the connection, as an unreachable API would', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const proxy = await startKeyProxy({
      upstream: `http://127.0.0.1:${port}/v1`,
      allow: [{ method: 'POST', path: '/v1/responses' }],
      credential: { header: 'authorization', value: 'Bearer k' },
    });
    closers.push(proxy.close);
    await expect(fetch(`${proxy.url}/responses`, { method: 'POST', body: '{}' })).rejects.toThrow();
  });
});
