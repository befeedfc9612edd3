/**
 * The agent's model credential stays with the harness. A small proxy on the harness's loopback forwards
 * the few requests an agent CLI needs (its model API's documented endpoints, listed per CLI) to the real
 * endpoint, replacing whatever credential the agent sent with the real one. The agent gets the proxy's
 * base URL and a placeholder key: its environment, argv and config copy never hold the key, so nothing
 * it runs can send the key anywhere. Anything outside the list is answered 403 and counted.
 *
 * Both transports the CLIs use pass through: HTTP requests with streamed (SSE) answers, and WebSocket
 * upgrades (codex's Responses transport), whose handshake gets the credential and whose bytes are then
 * piped both ways — only once the upstream has answered 101, so nothing the client sends before that
 * reaches it as a request of its own.
 *
 * It listens twice: on the loopback (an agent run without the sandbox), and on a UNIX socket in a
 * private folder, which the sandbox binds into an agent's network namespace of its own as its only way
 * out (src/exec/loopback-forward.ts), on the same port, so the base URL is the same either way.
 *
 * It holds under abuse, because the agent is an adversary:
 * - the loopback is open to every process of the machine's users, and to a page a browser shows
 *   (DNS rebinding): a request must carry the run's token as the first path segment of the base URL,
 *   and the Host of that URL;
 * - what it records of refused requests is a count and a capped sample, whatever an agent sends;
 * - request headers, bodies and WebSocket messages are capped, slow requests timed out, connections
 *   counted;
 * - a request or WebSocket message that asks the model API to reach something the user did not
 *   configure (an MCP server URL, an image or file fetched from a URL) is refused, by field.
 */

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer as createNetServer, connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { WebSocketMessages } from './websocket-frames.js';

/** What the agent sends instead of a key: recognisable in a log, worthless anywhere else. */
export const PLACEHOLDER_KEY = 'hillclimb-proxy-holds-the-key';

export interface KeyProxyOptions {
  /** The real endpoint, as the CLI would have used it: `https://api.openai.com/v1`. */
  upstream: string;
  /** Requests allowed through, by method and path (the path as the CLI sends it, query excluded). */
  allow: ReadonlyArray<{ method: string; path: string }>;
  /** The header that carries the credential upstream, and its value. */
  credential: { header: 'authorization' | 'x-api-key'; value: string };
  /** How long a request's headers, and the whole request, may take (ms); tests shorten them. */
  timeouts?: { headersMs: number; requestMs: number };
}

/** Refused requests: how many, and the first few (`METHOD path` or why), each capped. */
export interface Refusals {
  count: number;
  sample: string[];
}

export interface KeyProxy {
  /** The base URL to give the CLI: the proxy's origin, the run's token, the upstream's path. */
  url: string;
  /** The loopback port of `url`. */
  port: number;
  /** The same proxy on a UNIX socket, for a sandbox's forward. */
  socket: string;
  /** Requests refused, counted; a sample kept (bounded whatever the agent sends). */
  refusals: Refusals;
  close(): Promise<void>;
}

/** Refused requests kept as examples, and the length of each. */
export const REFUSAL_SAMPLE = 20;
const REFUSAL_CHARS = 160;
/** The largest request body (and WebSocket message) forwarded: model requests carry whole contexts. */
export const MAX_BODY_BYTES = 32 << 20;
/** Connections at once: the CLIs use a handful. */
const MAX_CONNECTIONS = 256;
/** A request's headers must arrive within the first, the whole request within the second (slowloris). */
const TIMEOUTS = { headersMs: 20_000, requestMs: 120_000 };

/** `3 request(s), e.g. GET /v1/files, …`: one bounded line for a warning. */
export function refusalText(r: Refusals): string {
  const more = r.count > r.sample.length ? `, … (${r.count} in all)` : '';
  return `${r.count} request(s): ${r.sample.join(', ')}${more}`;
}

/** Headers that carry a credential: dropped from the agent's request, whatever it put there. */
const CREDENTIAL_HEADERS = ['authorization', 'x-api-key', 'proxy-authorization', 'cookie'];
/** Per-hop headers (RFC 9110 §7.6.1) are the proxy's own on each side. */
const HOP_HEADERS = ['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host'];
/**
 * WebSocket handshake headers the proxy decides: no extension (permessage-deflate would hide the
 * messages it checks), and the upstream's key and accept are its own business.
 */
const WS_DROPPED = ['sec-websocket-extensions'];

export async function startKeyProxy(opts: KeyProxyOptions): Promise<KeyProxy> {
  const upstream = new URL(opts.upstream);
  const tls = upstream.protocol === 'https:';
  const port = Number(upstream.port) || (tls ? 443 : 80);
  const token = randomBytes(16).toString('hex');
  const refusals: Refusals = { count: 0, sample: [] };
  let local = 0; // the loopback port, once listening
  const refuse = (why: string) => {
    refusals.count++;
    if (refusals.sample.length < REFUSAL_SAMPLE) refusals.sample.push(why.slice(0, REFUSAL_CHARS));
  };

  /** The request's path without the token, or why it is refused (never the token itself). */
  const route = (req: IncomingMessage): { path: string; target: string } | { refused: string } => {
    const u = new URL(req.url ?? '/', 'http://x');
    const host = (req.headers.host ?? '').toLowerCase();
    if (host !== `127.0.0.1:${local}` && host !== `localhost:${local}`) {
      return { refused: `${req.method} (Host ${JSON.stringify(host.slice(0, 60))}, not the proxy's)` };
    }
    const prefix = `/${token}`;
    if (u.pathname !== prefix && !u.pathname.startsWith(`${prefix}/`)) {
      return { refused: `${req.method} ${u.pathname} (without the run's token)` };
    }
    const path = u.pathname.slice(prefix.length) || '/';
    if (!opts.allow.some((a) => a.method === req.method && a.path === path)) {
      return { refused: `${req.method} ${path}` };
    }
    return { path, target: `${path}${u.search}` };
  };
  const headersFor = (incoming: IncomingHttpHeaders, drop: readonly string[] = []) => {
    const out: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(incoming)) {
      if (v === undefined || CREDENTIAL_HEADERS.includes(k) || HOP_HEADERS.includes(k) || drop.includes(k))
        continue;
      out[k] = v;
    }
    out.host = upstream.host;
    out[opts.credential.header] = opts.credential.value;
    return out;
  };

  const forbid = (res: ServerResponse, status: number, message: string, close = false) => {
    res.writeHead(status, { 'content-type': 'application/json', ...(close ? { connection: 'close' } : {}) });
    res.end(JSON.stringify({ error: { message, type: 'forbidden' } }));
  };

  const sockets = new Set<Socket | Duplex>();
  const timeouts = opts.timeouts ?? TIMEOUTS;
  const server = createServer(
    {
      maxHeaderSize: 16 * 1024,
      headersTimeout: timeouts.headersMs,
      requestTimeout: timeouts.requestMs,
      // How often Node looks for connections past those (30 s by default: a slow client could hold a
      // connection for 50 s where it was given 20).
      connectionsCheckingInterval: Math.min(1000, timeouts.headersMs / 4),
    },
    (req, res) => {
      const r = route(req);
      if ('refused' in r) {
        refuse(r.refused);
        forbid(res, 403, 'not forwarded by the harness');
        req.resume();
        return;
      }
      readBody(req, MAX_BODY_BYTES).then(
        (body) => {
          if (body === undefined) {
            refuse(`${req.method} ${r.path} (a body over ${MAX_BODY_BYTES} bytes)`);
            forbid(res, 413, 'request body too large for the harness to forward', true);
            return;
          }
          const reach = reachesOutside(body, req.headers['content-type']);
          if (reach) {
            refuse(`${req.method} ${r.path} (asks the model API to reach ${reach})`);
            forbid(
              res,
              403,
              `not forwarded by the harness: the request asks the model API to reach ${reach}`,
            );
            return;
          }
          const send = tls ? httpsRequest : httpRequest;
          const headers = { ...headersFor(req.headers), 'content-length': String(body.length) };
          const out = send(
            { host: upstream.hostname, port, method: req.method, path: upstreamPath(r.target), headers },
            (answer) => {
              res.writeHead(answer.statusCode ?? 502, stripHop(answer.headers));
              answer.pipe(res);
            },
          );
          // An upstream that cannot be reached looks the same to the CLI: the connection drops, with no
          // answer (so its own "unreachable" handling, and ours, apply; a 502 would read as a server error).
          out.on('error', () => req.socket.destroy());
          out.end(body);
        },
        () => req.socket.destroy(),
      );
    },
  );
  server.maxConnections = MAX_CONNECTIONS;
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('upgrade', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    const r = route(req);
    if ('refused' in r || req.headers.upgrade?.toLowerCase() !== 'websocket') {
      refuse('refused' in r ? r.refused : `${req.method} ${r.path} (an upgrade to ${req.headers.upgrade})`);
      client.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return;
    }
    const remote = tls
      ? tlsConnect({ host: upstream.hostname, port, servername: upstream.hostname })
      : netConnect({ host: upstream.hostname, port });
    sockets.add(remote);
    remote.on('close', () => sockets.delete(remote));
    // What the client sends is held until the upstream has switched protocols, and then forwarded one
    // checked message at a time.
    const messages = new WebSocketMessages(MAX_BODY_BYTES);
    const held: Buffer[] = head.length > 0 ? [head] : [];
    let open = false;
    const fromClient = (chunk: Buffer) => {
      if (!open) {
        held.push(chunk);
        return;
      }
      const { forward, refused } = messages.push(chunk, (text) =>
        reachesOutside(Buffer.from(text), 'application/json'),
      );
      if (refused) {
        refuse(`${req.method} ${r.path} (a WebSocket message that ${refused})`);
        client.destroy();
        remote.destroy();
        return;
      }
      for (const b of forward) remote.write(b);
    };
    client.on('data', fromClient);
    remote.once(tls ? 'secureConnect' : 'connect', () => {
      const headers = { ...headersFor(req.headers, WS_DROPPED), connection: 'Upgrade', upgrade: 'websocket' };
      const lines = Object.entries(headers).flatMap(([k, v]) =>
        (Array.isArray(v) ? v : [v]).map((x) => `${k}: ${x}`),
      );
      remote.write(`GET ${upstreamPath(r.target)} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`);
      readResponseHead(remote).then(
        ({ head: answer, rest, status }) => {
          client.write(answer);
          if (status !== 101) {
            // Not upgraded: the answer goes back, and nothing the client sent ever reaches the upstream.
            if (rest.length > 0) client.write(rest);
            remote.pipe(client);
            return;
          }
          if (rest.length > 0) client.write(rest);
          remote.pipe(client);
          open = true;
          for (const b of held.splice(0)) fromClient(b);
        },
        () => client.destroy(),
      );
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
  unix.maxConnections = MAX_CONNECTIONS;
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
  local = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${local}/${token}${upstream.pathname.replace(/\/+$/, '')}`,
    port: local,
    socket,
    refusals,
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

/** A request's whole body, or undefined past `max` bytes. */
function readBody(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) over = true;
      else chunks.push(c);
    });
    req.on('end', () => resolve(over ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * What a model request asks the API to reach beyond itself, by field — an MCP server (`server_url`,
 * Anthropic's `mcp_servers`), an image or file fetched from a URL (`image_url`/`file_url` over http(s),
 * a `source` of type `url`) — or undefined. Only JSON bodies; anything else is forwarded as it is.
 */
export function reachesOutside(body: Buffer, contentType: string | undefined): string | undefined {
  if (body.length === 0 || !/json/i.test(contentType ?? 'application/json')) return undefined;
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined; // the API answers it; nothing in it is a field the proxy knows
  }
  const stack: unknown[] = [doc];
  let steps = 0;
  while (stack.length > 0 && steps++ < 1_000_000) {
    const v = stack.pop();
    if (Array.isArray(v)) {
      stack.push(...v);
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    const o = v as Record<string, unknown>;
    if (typeof o.server_url === 'string') return `an MCP server (${o.server_url.slice(0, 80)})`;
    if (Array.isArray(o.mcp_servers) && o.mcp_servers.length > 0) return 'MCP servers (mcp_servers)';
    for (const key of ['image_url', 'file_url']) {
      const u = o[key];
      const url =
        typeof u === 'string'
          ? u
          : typeof u === 'object' && u !== null
            ? (u as { url?: unknown }).url
            : undefined;
      if (typeof url === 'string' && /^https?:/i.test(url)) return `a URL (${key}: ${url.slice(0, 80)})`;
    }
    if (o.type === 'url' && typeof o.url === 'string') return `a URL (source: ${o.url.slice(0, 80)})`;
    stack.push(...Object.values(o));
  }
  return undefined;
}

/** The status line and headers of an HTTP response on `s`, and what followed them. */
function readResponseHead(s: Duplex): Promise<{ head: Buffer; rest: Buffer; status: number }> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const onData = (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      const end = buf.indexOf('\r\n\r\n');
      if (end === -1) {
        if (buf.length > 64 * 1024) done(new Error('response head too large'));
        return;
      }
      const head = buf.subarray(0, end + 4);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head.toString('latin1'))?.[1] ?? 0);
      done(undefined, { head, rest: buf.subarray(end + 4), status });
    };
    const onEnd = () => done(new Error('the upstream closed before answering'));
    const done = (err?: Error, v?: { head: Buffer; rest: Buffer; status: number }) => {
      s.pause(); // held until the caller pipes it on: no data event may go by unheard
      s.off('data', onData);
      s.off('end', onEnd);
      s.off('error', onEnd);
      if (err) reject(err);
      else resolve(v!);
    };
    s.on('data', onData);
    s.on('end', onEnd);
    s.on('error', onEnd);
  });
}

/** The request target sent upstream: path and query only, whatever form the client used. */
function upstreamPath(target: string): string {
  const u = new URL(target, 'http://x');
  return `${u.pathname}${u.search}`;
}

function stripHop(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v !== undefined && !HOP_HEADERS.includes(k)) out[k] = v;
  }
  return out;
}
