/**
 * The key proxy (src/agent/key-proxy.ts) between a client holding the placeholder and an upstream that
 * records what reached it: only listed requests pass, with the real credential and nothing the client
 * sent as one; everything else is refused and counted, with memory bounded whatever the client sends;
 * a process without the run's token, or a page behind a rebound DNS name, gets nothing through; a
 * WebSocket is opened only on a listed path and piped only after the upstream's 101; a request or a
 * message that asks the model API to reach an outside URL is refused; an unreachable upstream drops the
 * connection.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { type AddressInfo, connect, createServer as createNetServer, type Socket } from 'node:net';
import { deflateSync, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type KeyProxyOptions,
  PLACEHOLDER_KEY,
  REFUSAL_SAMPLE,
  startKeyProxy,
} from '../../src/agent/key-proxy.js';
import { duplicateKey, refuseModelMessage, refuseModelRequest } from '../../src/agent/model-request.js';
import { listenOnLoopback } from '../helpers/listen.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

interface Seen {
  method?: string;
  url?: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * An upstream that answers a streamed body and records each request's path and headers; a WebSocket
 * upgrade is answered 101 (or `refuseUpgrades`: 400) and every byte after it recorded.
 */
async function upstream(o: { refuseUpgrades?: boolean } = {}) {
  const seen: Seen[] = [];
  const wsBytes: Buffer[] = [];
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
  const upgraded: Socket[] = [];
  server.on('upgrade', (req, socket: Socket) => {
    upgraded.push(socket);
    seen.push({ method: req.method, url: req.url, headers: req.headers, body: '' });
    if (o.refuseUpgrades) {
      // A plain HTTP answer, and the connection kept: what follows would be read as a new request.
      socket.write('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n');
      socket.on('data', (d: Buffer) => wsBytes.push(d));
      return;
    }
    const accept = createHash('sha1')
      .update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
      .digest('base64');
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
    );
    socket.on('data', (d: Buffer) => wsBytes.push(d));
  });
  // Upgraded sockets are the server's no longer: destroyed first, so that closing it does not wait on them.
  closers.push(async () => {
    for (const s of upgraded) s.destroy();
  });
  return { url: `${await listenOnLoopback(server, closers)}/v1`, seen, wsBytes };
}

/**
 * An upstream each of whose connections answers its first request and does `drop` to any later one on
 * it, unanswered: as an upstream whose idle timer closes a kept connection the proxy reuses.
 */
async function dropsKeptRequests(drop: (socket: Socket) => void) {
  let arrivals = 0;
  const answered = new WeakSet<object>();
  const server = createServer((req, res) => {
    arrivals++;
    if (answered.has(req.socket)) {
      drop(req.socket);
      return;
    }
    answered.add(req.socket);
    req.resume();
    req.on('end', () => res.end('{"ok":true}'));
  });
  return { url: `${await listenOnLoopback(server, closers)}/v1`, arrivals: () => arrivals };
}

async function proxyTo(
  url: string,
  allow = [{ method: 'POST', path: '/v1/responses' }],
  extra: Partial<KeyProxyOptions> = {},
) {
  const proxy = await startKeyProxy({
    upstream: url,
    allow,
    credential: { header: 'authorization', value: 'Bearer sk-real-key-0123' },
    ...extra,
  });
  closers.push(proxy.close);
  return proxy;
}

/** A masked client frame (RFC 6455) carrying `text`. */
function frame(text: string, opcode = 1, fin = true): Buffer {
  const data = Buffer.from(text);
  const key = Buffer.from([1, 2, 3, 4]);
  const head =
    data.length < 126
      ? Buffer.from([(fin ? 0x80 : 0) | opcode, 0x80 | data.length])
      : Buffer.from([(fin ? 0x80 : 0) | opcode, 0x80 | 126, data.length >> 8, data.length & 0xff]);
  const masked = Buffer.from(data.map((b, i) => b ^ key[i & 3]!));
  return Buffer.concat([head, key, masked]);
}

/** Open a raw connection to the proxy's port and send `bytes`; collects what comes back. */
async function raw(port: number, bytes: Buffer | string) {
  const s = connect(port, '127.0.0.1');
  const got: Buffer[] = [];
  s.on('data', (d) => got.push(d));
  await new Promise<void>((r) => s.once('connect', () => r()));
  s.write(bytes);
  closers.push(async () => void s.destroy());
  return { socket: s, text: () => Buffer.concat(got).toString('latin1') };
}

const handshake = (path: string, port: number, host = `127.0.0.1:${port}`) =>
  `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Extensions: permessage-deflate\r\nAuthorization: Bearer ${PLACEHOLDER_KEY}\r\n\r\n`;

const JSON_TYPE = { 'content-type': 'application/json' };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the key proxy', () => {
  it('forwards a listed request with the real key in place of anything the client sent as one', async () => {
    const up = await upstream();
    const proxy = await proxyTo(up.url);
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
    expect(proxy.refusals).toEqual({ count: 0, sample: [] });
  });

  it('refuses every other method and path (403), and forwards nothing of them', async () => {
    const up = await upstream();
    const proxy = await proxyTo(up.url);
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
    expect(proxy.refusals).toEqual({
      count: 4,
      sample: ['GET /v1/files', 'POST /v1/files', 'DELETE /v1/responses', 'GET /'],
    });
  });

  it('a local process without the run’s token, or a page behind a rebound name (another Host), gets nothing through', async () => {
    const up = await upstream();
    const proxy = await proxyTo(up.url);
    const bare = await fetch(`http://127.0.0.1:${proxy.port}/v1/responses`, { method: 'POST', body: '{}' });
    expect(bare.status).toBe(403);
    const page = await raw(
      proxy.port,
      `POST ${new URL(proxy.url).pathname}/responses HTTP/1.1\r\nHost: evil.example:${proxy.port}\r\nContent-Length: 2\r\n\r\n{}`,
    );
    await sleep(200);
    expect(page.text()).toMatch(/^HTTP\/1\.1 403/);
    expect(up.seen).toEqual([]);
    expect(proxy.refusals.sample).toEqual([
      "POST /v1/responses (without the run's token)",
      `POST (Host "evil.example:${proxy.port}", not the proxy's)`,
    ]);
  });

  it('a flood of refused requests is counted, its sample bounded, its memory flat', async () => {
    const up = await upstream();
    const proxy = await proxyTo(up.url);
    const base = new URL(proxy.url).pathname.replace(/\/v1$/, '');
    const before = process.memoryUsage().heapUsed;
    // 34,000 refused requests (the attack that once took the loop down), pipelined on 8 connections,
    // every 50th with an 8 KiB path.
    const N = 34_000;
    const long = 'x'.repeat(8 * 1024);
    const perSocket = N / 8;
    await Promise.all(
      Array.from({ length: 8 }, async (_, s) => {
        const lines = Array.from(
          { length: perSocket },
          (_, i) =>
            `GET ${base}/v1/${(s * perSocket + i) % 50 === 0 ? long : 'files'} HTTP/1.1\r\nHost: 127.0.0.1:${proxy.port}\r\n\r\n`,
        );
        const c = await raw(proxy.port, lines.join(''));
        for (let waited = 0; (c.text().match(/HTTP\/1\.1 403/g) ?? []).length < perSocket; waited += 50) {
          if (waited > 60_000) throw new Error('the proxy stopped answering');
          await sleep(50);
        }
      }),
    );
    expect(proxy.refusals.count).toBe(N);
    expect(proxy.refusals.sample).toHaveLength(REFUSAL_SAMPLE);
    expect(proxy.refusals.sample.every((s) => s.length <= 160)).toBe(true);
    global.gc?.();
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(64 * 1024 * 1024);
  }, 120_000);

  it('slow and oversized requests are cut off, and the proxy still forwards the next one', async () => {
    const up = await upstream();
    // Timeouts shortened for the test (20 s and 120 s in a run): the point is that they are enforced.
    const proxy = await proxyTo(up.url, undefined, { timeouts: { headersMs: 400, requestMs: 1_500 } });
    const path = new URL(proxy.url).pathname;
    const host = `Host: 127.0.0.1:${proxy.port}\r\n`;
    // Slowloris: 40 connections that send a request line and then one header byte every 100 ms,
    // and 10 that send their headers and then trickle a body they said was 1 MB long.
    const slow = await Promise.all([
      ...Array.from({ length: 40 }, () => raw(proxy.port, `POST ${path}/responses HTTP/1.1\r\n${host}`)),
      ...Array.from({ length: 10 }, () =>
        raw(proxy.port, `POST ${path}/responses HTTP/1.1\r\n${host}Content-Length: 1048576\r\n\r\n{`),
      ),
    ]);
    const closed = slow.map((c) => new Promise<void>((r) => c.socket.once('close', () => r())));
    const trickle = setInterval(() => {
      for (const c of slow) if (!c.socket.destroyed) c.socket.write('x');
    }, 100);
    try {
      // 64 KiB of headers (the cap is 16 KiB): 431, and the connection closed.
      const big = await raw(
        proxy.port,
        `POST ${path}/responses HTTP/1.1\r\n${host}X-Pad: ${'a'.repeat(64 << 10)}\r\n\r\n`,
      );
      await new Promise<void>((r) => big.socket.once('close', () => r()));
      expect(big.text()).toMatch(/^HTTP\/1\.1 431/);
      // Every slow connection is closed by the proxy, however long the client keeps sending.
      await Promise.all(closed);
    } finally {
      clearInterval(trickle);
    }
    expect(up.seen).toEqual([]);
    const res = await fetch(`${proxy.url}/responses`, {
      method: 'POST',
      headers: JSON_TYPE,
      body: '{"model":"m"}',
    });
    expect(res.status).toBe(200);
    expect(up.seen).toHaveLength(1);
  }, 60_000);

  it('a request that asks the model API to reach an outside URL is refused, by field', async () => {
    const up = await upstream();
    const proxy = await proxyTo(up.url);
    for (const body of [
      { tools: [{ type: 'mcp', server_label: 'x', server_url: 'https://collector.example/mcp' }] },
      { input: [{ content: [{ type: 'input_image', image_url: 'http://collector.example/i.png' }] }] },
      { messages: [{ content: [{ type: 'image', source: { type: 'url', url: 'https://c.example/i' } }] }] },
      { mcp_servers: [{ type: 'url', url: 'https://c.example/mcp', name: 'c' }] },
    ]) {
      const res = await fetch(`${proxy.url}/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status, JSON.stringify(body)).toBe(403);
      expect(await res.text()).toContain('asks the model API to reach');
    }
    expect(up.seen).toEqual([]);
    // An inline image (a data URL) and prose that mentions a URL are the model's business.
    const check = (doc: unknown) => refuseModelMessage(Buffer.from(JSON.stringify(doc)));
    expect(check({ image_url: 'data:image/png;base64,AAAA' })).toBeUndefined();
    expect(check({ image_url: { url: ' DATA:image/png;base64,AAAA' } })).toBeUndefined();
    expect(check({ text: 'see https://x.example', image_url: null })).toBeUndefined();
    // A tool's parameter schema names these fields without being them (codex's own tools do).
    const schema = {
      type: 'object',
      properties: { image_url: { type: 'string' }, server_url: { type: 'string' } },
    };
    expect(check({ tools: [{ type: 'function', name: 'view', parameters: schema }] })).toBeUndefined();
  });

  it('what the proxy cannot read is refused, never forwarded unread (the filter cannot be stepped around)', async () => {
    const up = await upstream();
    const proxy = await proxyTo(up.url);
    const mcp = JSON.stringify({
      tools: [{ type: 'mcp', server_label: 'x', server_url: 'https://c.example/mcp' }],
    });
    const junk = Array.from({ length: 1100 }, () => Array.from({ length: 1000 }, () => 0));
    const cases: Array<[string, Record<string, string>, Buffer | string]> = [
      ['text/plain', { 'content-type': 'text/plain' }, mcp],
      ['gzip', { ...JSON_TYPE, 'content-encoding': 'gzip' }, gzipSync(mcp)],
      ['deflate', { ...JSON_TYPE, 'content-encoding': 'deflate' }, deflateSync(mcp)],
      ['a byte-order mark', JSON_TYPE, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(mcp)])],
      ['UTF-16', JSON_TYPE, Buffer.from(mcp, 'utf16le')],
      [
        'a key twice',
        JSON_TYPE,
        '{"tools":[{"type":"function","server_url":"https://c.example","server_url":1}]}',
      ],
      ['a key twice, escaped', JSON_TYPE, '{"a":1,"\\u0061":2}'],
      [
        'a million values before the tool',
        JSON_TYPE,
        JSON.stringify({ input: junk, tools: JSON.parse(mcp).tools }),
      ],
      ['an image URL behind a space', JSON_TYPE, JSON.stringify({ image_url: ' https://c.example/i.png' })],
      ['a scheme-relative file URL', JSON_TYPE, JSON.stringify({ file_url: '//c.example/f' })],
      [
        'an MCP tool by connector',
        JSON_TYPE,
        JSON.stringify({ tools: [{ type: 'mcp', connector_id: 'gmail' }] }),
      ],
      ['not JSON', JSON_TYPE, '{"tools": ['],
    ];
    for (const [what, headers, body] of cases) {
      const res = await fetch(`${proxy.url}/responses`, { method: 'POST', headers, body });
      expect(res.status, what).toBe(403);
      expect(await res.text(), what).toContain('not forwarded by the harness');
    }
    expect(up.seen).toEqual([]);
    expect(proxy.refusals.count).toBe(cases.length);
    expect(duplicateKey('{"a":{"b":1},"b":[{"a":1}],"c":"a"}')).toBeUndefined();
    expect(refuseModelRequest(Buffer.alloc(0), {})).toBeUndefined(); // a GET's empty body
  });

  it('a large body is answered whatever its shape (300,000 elements, 300,000 keys, 100,000 levels deep)', async () => {
    const up = await upstream();
    const proxy = await proxyTo(up.url);
    const wide = JSON.stringify({ input: Array.from({ length: 300_000 }, () => 0) });
    const keys = JSON.stringify(Object.fromEntries(Array.from({ length: 300_000 }, (_, i) => [`k${i}`, i])));
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    for (const body of [wide, keys, deep]) {
      const res = await fetch(`${proxy.url}/responses`, { method: 'POST', headers: JSON_TYPE, body });
      expect(res.status).toBe(200);
      await res.text();
    }
    expect(up.seen).toHaveLength(3);
  }, 60_000);

  it('bodies held at once are bounded across connections: over the budget, 503 and nothing held', async () => {
    const up = await upstream();
    const proxy = await proxyTo(up.url, undefined, { bufferedBytes: 1 << 20 });
    const path = new URL(proxy.url).pathname;
    const host = `Host: 127.0.0.1:${proxy.port}\r\n`;
    // Three connections each announce 400 KB and send 350 KB of it: together they pass the 1 MiB budget,
    // and the one that does is refused (what it held dropped), so the other two finish.
    const half = Array.from({ length: 3 }, () =>
      raw(
        proxy.port,
        `POST ${path}/responses HTTP/1.1\r\n${host}Content-Type: application/json\r\nContent-Length: 400000\r\n\r\n${' '.repeat(350_000)}`,
      ),
    );
    const conns = await Promise.all(half);
    await sleep(300);
    for (const c of conns) c.socket.write(`${' '.repeat(49_998)}{}`);
    await sleep(500);
    const statuses = conns.map((c) => /^HTTP\/1\.1 (\d{3})/.exec(c.text())?.[1]).sort();
    expect(statuses).toEqual(['200', '200', '503']);
    // Released: the next body is held and forwarded.
    const res = await fetch(`${proxy.url}/responses`, {
      method: 'POST',
      headers: JSON_TYPE,
      body: '{"model":"m"}',
    });
    expect(res.status).toBe(200);
  });

  it('in the sandbox: no loopback port at all, only the socket the sandbox forwards', async () => {
    const up = await upstream();
    const proxy = await proxyTo(up.url, undefined, { loopback: false });
    await expect(
      fetch(`${proxy.url}/responses`, { method: 'POST', headers: JSON_TYPE, body: '{}' }),
    ).rejects.toThrow();
    const answer = await new Promise<string>((resolve, reject) => {
      const body = '{"model":"m"}';
      const c = connect(proxy.socket, () =>
        c.write(
          `POST ${new URL(proxy.url).pathname}/responses HTTP/1.1\r\nHost: 127.0.0.1:${proxy.port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
        ),
      );
      let got = '';
      c.on('data', (d) => {
        got += d.toString();
      });
      c.on('end', () => resolve(got));
      c.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(up.seen).toHaveLength(1);
  });

  it('a WebSocket: refused off the list; on it, the handshake gets the key, no extension, and messages are checked', async () => {
    const up = await upstream();
    const proxy = await proxyTo(up.url, [{ method: 'GET', path: '/v1/responses' }]);
    const path = `${new URL(proxy.url).pathname}/responses`;
    const off = await raw(proxy.port, handshake(path.replace('/responses', '/files'), proxy.port));
    await sleep(200);
    expect(off.text()).toMatch(/^HTTP\/1\.1 403/);

    const ws = await raw(proxy.port, handshake(path, proxy.port));
    await sleep(300);
    expect(ws.text()).toMatch(/^HTTP\/1\.1 101/);
    const hs = up.seen.find((s) => s.url === '/v1/responses')!;
    expect(hs.headers.authorization).toBe('Bearer sk-real-key-0123');
    expect(hs.headers['sec-websocket-extensions']).toBeUndefined();
    ws.socket.write(frame('{"type":"response.create","input":"hi"}'));
    await sleep(200);
    expect(Buffer.concat(up.wsBytes)).toEqual(frame('{"type":"response.create","input":"hi"}'));
    // A message that would have the model API call out: the connection ends, nothing of it arrives.
    const upTo = Buffer.concat(up.wsBytes).length;
    ws.socket.write(
      frame('{"type":"response.create","tools":[{"type":"mcp","server_url":"https://c.example"}]}'),
    );
    await sleep(300);
    expect(Buffer.concat(up.wsBytes).length).toBe(upTo);
    expect(ws.socket.destroyed || ws.socket.readableEnded).toBe(true);
    expect(proxy.refusals.sample.at(-1)).toMatch(
      /a WebSocket message that asks the model API to reach an MCP server/,
    );
  });

  it('a WebSocket the upstream does not switch to: bytes sent after the handshake never reach it (no smuggled request)', async () => {
    const up = await upstream({ refuseUpgrades: true });
    const proxy = await proxyTo(up.url, [{ method: 'GET', path: '/v1/responses' }]);
    const path = `${new URL(proxy.url).pathname}/responses`;
    const smuggled = `GET /v1/files HTTP/1.1\r\nHost: upstream\r\n\r\n`;
    const ws = await raw(proxy.port, `${handshake(path, proxy.port)}${smuggled}`);
    await sleep(400);
    expect(ws.text()).toMatch(/^HTTP\/1\.1 400/);
    // What it sends after the refusal is dropped, not held: nothing arrives, nothing is refused.
    ws.socket.write(Buffer.alloc(1 << 20));
    await sleep(200);
    expect(Buffer.concat(up.wsBytes).toString()).toBe('');
    expect(ws.socket.destroyed).toBe(false);
  });

  it('a WebSocket client sending more than 64 KiB before the upstream answers is cut off', async () => {
    // An upstream that accepts the connection and never answers the handshake.
    const silent = createNetServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise((r) => silent.close(() => r())));
    const proxy = await proxyTo(`http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`, [
      { method: 'GET', path: '/v1/responses' },
    ]);
    const path = `${new URL(proxy.url).pathname}/responses`;
    const ws = await raw(proxy.port, handshake(path, proxy.port));
    const closed = new Promise<void>((r) => ws.socket.once('close', () => r()));
    ws.socket.write(Buffer.alloc(80 << 10));
    await closed;
    expect(proxy.refusals.sample.at(-1)).toMatch(/a WebSocket sending \d+ bytes before its handshake/);
  });

  it('an upstream that cannot be reached drops the connection, as an unreachable API would', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const proxy = await proxyTo(`http://127.0.0.1:${port}/v1`);
    await expect(
      fetch(`${proxy.url}/responses`, { method: 'POST', headers: JSON_TYPE, body: '{}' }),
    ).rejects.toThrow();
  });

  it('a kept connection the upstream closes as a request goes out on it: sent once more, on a fresh one', async () => {
    // Each connection answers its first request and drops any later one unanswered, as an upstream whose
    // idle timer runs out as the proxy reuses the connection (in one process under load, the test's own
    // upstream did: "other side closed" on the second of three large bodies).
    const up = await dropsKeptRequests((socket) => socket.destroy());
    const proxy = await proxyTo(up.url);
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${proxy.url}/responses`, { method: 'POST', headers: JSON_TYPE, body: '{}' });
      expect([res.status, await res.text()]).toEqual([200, '{"ok":true}']);
    }
    // The second request: dropped on the kept connection, answered on a fresh one.
    expect(up.arrivals()).toBe(3);
  });

  it('a kept connection reset after the upstream worked on the request a while: not sent again (it may be billed)', async () => {
    // Reset past the proxy's resend window.
    const up = await dropsKeptRequests((socket) => setTimeout(() => socket.destroy(), 600));
    const proxy = await proxyTo(up.url, undefined, {
      timeouts: { headersMs: 20_000, requestMs: 120_000, resendWindowMs: 100 },
    });
    const first = await fetch(`${proxy.url}/responses`, { method: 'POST', headers: JSON_TYPE, body: '{}' });
    expect(first.status).toBe(200);
    await first.text();
    await expect(
      fetch(`${proxy.url}/responses`, { method: 'POST', headers: JSON_TYPE, body: '{}' }),
    ).rejects.toThrow();
    expect(up.arrivals()).toBe(2);
  });

  it('an upstream that drops every request is not asked again and again', async () => {
    let arrivals = 0;
    const up = createServer((req) => {
      arrivals++;
      req.socket.destroy();
    });
    const proxy = await proxyTo(`${await listenOnLoopback(up, closers)}/v1`);
    await expect(
      fetch(`${proxy.url}/responses`, { method: 'POST', headers: JSON_TYPE, body: '{}' }),
    ).rejects.toThrow();
    // A fresh connection failed: nothing to retry.
    expect(arrivals).toBe(1);
  });
});
