/**
 * The key proxy with `tools` (src/agent/key-proxy.ts): the MCP endpoint answers at
 * `/<token>/hillclimb/mcp` behind the same token and Host checks as the model API; that path never
 * reaches the upstream, with or without tools, whatever the allow list names; everything else is
 * forwarded as before; and the tools-only proxy (the command agent's) forwards nothing at all.
 */
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startKeyProxy, startToolsProxy, TOOLS_PATH } from '../../src/agent/key-proxy.js';
import { listenOnLoopback } from '../helpers/listen.js';
import { stubTools } from './stub-tools.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

/** An upstream that records every request (and upgrade) that reaches it, and answers 200. */
async function upstream() {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    res.end('{}');
  });
  server.on('upgrade', (req, socket) => {
    seen.push(`UPGRADE ${req.url}`);
    socket.destroy();
  });
  return { url: `${await listenOnLoopback(server, closers)}/v1`, seen };
}

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};

const post = (url: string, message: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(message),
  });

/** Raw HTTP on the proxy's port (to send a Host fetch would not): the status line of the answer. */
function rawStatus(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(text));
    let got = '';
    s.on('data', (d) => {
      got += d.toString('latin1');
      if (got.includes('\r\n')) {
        resolve(got.split('\r\n')[0]!);
        s.destroy();
      }
    });
    s.on('error', reject);
  });
}

describe('the key proxy with tools', () => {
  it('serves the tools at toolsUrl and still forwards the model API', async () => {
    const up = await upstream();
    const tools = stubTools({ check: ['passes'] });
    const proxy = await startKeyProxy({
      upstream: up.url,
      allow: [{ method: 'POST', path: '/v1/responses' }],
      credential: { header: 'authorization', value: 'Bearer sk-real' },
      tools,
    });
    closers.push(proxy.close);
    expect(proxy.toolsUrl).toBe(
      `${new URL(proxy.url).origin}${new URL(proxy.url).pathname.replace(/\/v1$/, '')}${TOOLS_PATH}`,
    );
    const init = await post(proxy.toolsUrl!, INIT);
    expect(init.status).toBe(200);
    const session = init.headers.get('mcp-session-id')!;
    const call = await post(
      proxy.toolsUrl!,
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'check', arguments: {} } },
      { 'mcp-session-id': session },
    );
    expect(await call.json()).toMatchObject({ result: { content: [{ type: 'text', text: 'passes' }] } });
    expect(tools.calls.map((c) => c.name)).toEqual(['check']);
    expect(proxy.tools?.calls).toBe(1);
    // The model API goes on as before.
    expect((await post(`${proxy.url}/responses`, {})).status).toBe(200);
    expect(up.seen).toEqual(['POST /v1/responses']);
  });

  it('without the run’s token, with another Host, or as a WebSocket upgrade: refused, and nothing reaches tools or upstream', async () => {
    const up = await upstream();
    const tools = stubTools({ check: ['passes'] });
    const proxy = await startKeyProxy({
      upstream: up.url,
      allow: [{ method: 'POST', path: '/v1/responses' }],
      credential: { header: 'authorization', value: 'Bearer sk-real' },
      tools,
    });
    closers.push(proxy.close);
    const toolsPath = new URL(proxy.toolsUrl!).pathname;
    expect((await post(`http://127.0.0.1:${proxy.port}${TOOLS_PATH}`, INIT)).status).toBe(403);
    expect((await post(`http://127.0.0.1:${proxy.port}/${'0'.repeat(32)}${TOOLS_PATH}`, INIT)).status).toBe(
      403,
    );
    const body = JSON.stringify(INIT);
    const rebound = await rawStatus(
      proxy.port,
      `POST ${toolsPath} HTTP/1.1\r\nHost: evil.example:${proxy.port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    expect(rebound).toMatch(/^HTTP\/1\.1 403/);
    const upgrade = await rawStatus(
      proxy.port,
      `GET ${toolsPath} HTTP/1.1\r\nHost: 127.0.0.1:${proxy.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
    expect(upgrade).toMatch(/^HTTP\/1\.1 403/);
    expect(tools.calls).toEqual([]);
    expect(up.seen).toEqual([]);
    expect(proxy.refusals.count).toBe(4);
  });

  it('without tools the path is refused, never forwarded, even when the allow list names it', async () => {
    const up = await upstream();
    const proxy = await startKeyProxy({
      upstream: up.url.replace(/\/v1$/, ''),
      allow: [{ method: 'POST', path: TOOLS_PATH }],
      credential: { header: 'authorization', value: 'Bearer sk-real' },
    });
    closers.push(proxy.close);
    expect(proxy.toolsUrl).toBeUndefined();
    const res = await post(`${proxy.url}${TOOLS_PATH}`, INIT);
    expect(res.status).toBe(403);
    expect(up.seen).toEqual([]);
    expect(proxy.refusals.sample).toEqual([`POST ${TOOLS_PATH} (no tools in this run)`]);
  });

  it('the tools-only proxy (the command agent’s) serves the tools and forwards nothing', async () => {
    const tools = stubTools({ check: ['passes'] });
    const proxy = await startToolsProxy(tools);
    closers.push(proxy.close);
    expect((await post(proxy.toolsUrl!, INIT)).status).toBe(200);
    const origin = new URL(proxy.toolsUrl!).origin;
    const token = new URL(proxy.toolsUrl!).pathname.split('/')[1];
    for (const path of ['/v1/responses', '/v1/messages', '/']) {
      expect((await post(`${origin}/${token}${path}`, {})).status, path).toBe(403);
    }
    expect(proxy.refusals.count).toBe(3);
  });
});
