/**
 * The agent's model credential stays with the harness. A small proxy on the harness's loopback forwards
 * the few requests an agent CLI needs (its model API's documented endpoints, listed per CLI) to the real
 * endpoint, replacing whatever credential the agent sent with the real one. The agent gets the proxy's
 * base URL and a placeholder key: its environment, argv and config copy never hold the key, so nothing
 * it runs can send the key anywhere. Anything outside the list is answered 403 and counted.
 *
 * Both transports the CLIs use pass through: HTTP requests with streamed (SSE) answers, and WebSocket
 * upgrades (codex's Responses transport), whose handshake gets the credential and whose bytes are then
 * piped both ways.
 *
 * It listens twice: on the loopback (an agent run without the sandbox), and on a UNIX socket in a
 * private folder, which the sandbox binds into an agent's network namespace of its own as its only way
 * out (src/exec/loopback-forward.ts), on the same port, so the base URL is the same either way.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer as createNetServer, connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';

/** What the agent sends instead of a key: recognisable in a log, worthless anywhere else. */
export const PLACEHOLDER_KEY = 'hillclimb-proxy-holds-the-key';

export interface KeyProxyOptions {
  /** The real endpoint, as the CLI would have used it: `https://api.openai.com/v1`. */
  upstream: string;
  /** Requests allowed through, by method and path (the path as the CLI sends it, query excluded). */
  allow: ReadonlyArray<{ method: string; path: string }>;
  /** The header that carries the credential upstream, and its value. */
  credential: { header: 'authorization' | 'x-api-key'; value: string };
}

export interface KeyProxy {
  /** The base URL to give the CLI: the proxy's origin plus the upstream's path. */
  url: string;
  /** The loopback port of `url`. */
  port: number;
  /** The same proxy on a UNIX socket, for a sandbox's forward. */
  socket: string;
  /** Requests refused (`METHOD path`), for the log and for tests. */
  refused: string[];
  close(): Promise<void>;
}

/** Headers that carry a credential: dropped from the agent's request, whatever it put there. */
const CREDENTIAL_HEADERS = ['authorization', 'x-api-key', 'proxy-authorization', 'cookie'];
/** Per-hop headers (RFC 9110 §7.6.1) are the proxy's own on each side. */
const HOP_HEADERS = ['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host'];

export async function startKeyProxy(opts: KeyProxyOptions): Promise<KeyProxy> {
  const upstream = new URL(opts.upstream);
  const tls = upstream.protocol === 'https:';
  const port = Number(upstream.port) || (tls ? 443 : 80);
  const refused: string[] = [];
  const allowed = (method: string | undefined, url: string | undefined) => {
    const path = new URL(url ?? '/', 'http://x').pathname;
    return opts.allow.some((a) => a.method === method && a.path === path);
  };
  const headersFor = (incoming: IncomingHttpHeaders): Record<string, string | string[]> => {
    const out: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(incoming)) {
      if (v === undefined || CREDENTIAL_HEADERS.includes(k) || HOP_HEADERS.includes(k)) continue;
      out[k] = v;
    }
    out.host = upstream.host;
    out[opts.credential.header] = opts.credential.value;
    return out;
  };
  const refuse = (method: string | undefined, url: string | undefined) => {
    refused.push(`${method} ${new URL(url ?? '/', 'http://x').pathname}`);
  };

  const sockets = new Set<Socket | Duplex>();
  const server = createServer((req, res) => {
    if (!allowed(req.method, req.url)) {
      refuse(req.method, req.url);
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'not forwarded by the harness', type: 'forbidden' } }));
      req.resume();
      return;
    }
    const send = tls ? httpsRequest : httpRequest;
    const out = send(
      {
        host: upstream.hostname,
        port,
        method: req.method,
        path: target(req.url),
        headers: headersFor(req.headers),
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, stripHop(answer.headers));
        answer.pipe(res);
      },
    );
    // An upstream that cannot be reached looks the same to the CLI: the connection drops, with no
    // answer (so its own "unreachable" handling, and ours, apply; a 502 would read as a server error).
    out.on('error', () => req.socket.destroy());
    req.pipe(out);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('upgrade', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    if (!allowed(req.method, req.url) || req.headers.upgrade?.toLowerCase() !== 'websocket') {
      refuse(req.method, req.url);
      client.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return;
    }
    const remote = tls
      ? tlsConnect({ host: upstream.hostname, port, servername: upstream.hostname })
      : netConnect({ host: upstream.hostname, port });
    sockets.add(remote);
    remote.on('close', () => sockets.delete(remote));
    remote.once(tls ? 'secureConnect' : 'connect', () => {
      const headers = { ...headersFor(req.headers), connection: 'Upgrade', upgrade: 'websocket' };
      const lines = Object.entries(headers).flatMap(([k, v]) =>
        (Array.isArray(v) ? v : [v]).map((x) => `${k}: ${x}`),
      );
      remote.write(`GET ${target(req.url)} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`);
      if (head.length > 0) remote.write(head);
      remote.pipe(client);
      client.pipe(remote);
    });
    remote.on('error', () => client.destroy());
    remote.on('close', () => client.destroy());
    client.on('error', () => remote.destroy());
    client.on('close', () => remote.destroy());
  });

  // The socket's folder is private (mkdtemp: 0700), so only this user can connect outside the sandbox.
  const dir = mkdtempSync(join(tmpdir(), 'hillclimb-key-proxy-'));
  const socket = join(dir, 'model-api.sock');
  const unix = createNetServer((s) => server.emit('connection', s));
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    await new Promise<void>((resolve, reject) => {
      unix.once('error', reject);
      unix.listen(socket, resolve);
    });
  } catch (e) {
    server.close();
    unix.close();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const { port: local } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${local}${upstream.pathname.replace(/\/+$/, '')}`,
    port: local,
    socket,
    refused,
    async close() {
      for (const s of sockets) s.destroy();
      await Promise.all([
        new Promise<void>((resolve) => server.close(() => resolve())),
        new Promise<void>((resolve) => unix.close(() => resolve())),
      ]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The request target sent upstream: path and query only, whatever form the client used. */
function target(url: string | undefined): string {
  const u = new URL(url ?? '/', 'http://x');
  return `${u.pathname}${u.search}`;
}

function stripHop(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v !== undefined && !HOP_HEADERS.includes(k)) out[k] = v;
  }
  return out;
}
