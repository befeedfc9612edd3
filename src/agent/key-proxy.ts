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
 *
 * With `tools`, it also serves the agent's tools (tools.ts) over MCP (mcp-server.ts) at
 * `/<token>/hillclimb/mcp`, behind the same token and Host checks: that path is the harness's own and
 * never forwarded, whatever the allow list says.
 */

import { randomBytes, randomInt } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import {
  createServer as createNetServer,
  type Server as NetServer,
  connect as netConnect,
  type Socket,
} from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { createMcpEndpoint, type McpEndpoint } from './mcp-server.js';
import { refuseModelMessage, refuseModelRequest } from './model-request.js';
import { noRefusals, type Refusals, recordRefusal } from './refusals.js';
import type { AgentTools } from './tools.js';
import { WebSocketMessages } from './websocket-frames.js';

export { REFUSAL_SAMPLE, type Refusals, refusalText } from './refusals.js';

/** What the agent sends instead of a key: recognisable in a log, worthless anywhere else. */
export const PLACEHOLDER_KEY = 'hillclimb-proxy-holds-the-key';

export interface KeyProxyOptions {
  /** The real endpoint, as the CLI would have used it: `https://api.openai.com/v1`. */
  upstream: string;
  /** Requests allowed through, by method and path (the path as the CLI sends it, query excluded). */
  allow: ReadonlyArray<{ method: string; path: string }>;
  /** The header that carries the credential upstream, and its value. */
  credential: { header: 'authorization' | 'x-api-key'; value: string };
  /**
   * How long a request's headers, and the whole request, may take, and how long after a request went out
   * on a kept connection a reset still has it sent again (ms); tests shorten them.
   */
  timeouts?: { headersMs: number; requestMs: number; resendWindowMs?: number };
  /** Request-body bytes held at once (default BUFFERED_BYTES); tests lower it. */
  bufferedBytes?: number;
  /**
   * Listen on the loopback too (default true). An agent in the harness's sandbox reaches the proxy
   * only through the UNIX socket (forwarded to a loopback port inside its own network namespace), so
   * no other process on the machine can reach it at all.
   */
  loopback?: boolean;
  /** The agent's tools, served over MCP at TOOLS_PATH under the run's token (toolsUrl). */
  tools?: AgentTools;
}

/** Where the tools are served, after the run's token: never a path of the upstream's. */
export const TOOLS_PATH = '/hillclimb/mcp';

export interface KeyProxy {
  /** The base URL to give the CLI: the proxy's origin, the run's token, the upstream's path. */
  url: string;
  /** The real endpoint it forwards to (`KeyProxyOptions.upstream`): what the user configured. */
  upstream: string;
  /** The loopback port of `url`. */
  port: number;
  /** The same proxy on a UNIX socket, for a sandbox's forward. */
  socket: string;
  /** Requests refused, counted; a sample kept (bounded whatever the agent sends). */
  refusals: Refusals;
  /** With `tools`: the MCP endpoint's URL (the proxy's origin, the run's token, TOOLS_PATH). */
  toolsUrl?: string;
  /** With `tools`: the endpoint, for what it answered and refused. */
  tools?: Pick<McpEndpoint, 'calls' | 'refusals'>;
  close(): Promise<void>;
}

/** The largest request body (and WebSocket message) forwarded: model requests carry whole contexts. */
export const MAX_BODY_BYTES = 32 << 20;
/** Connections at once, on both listeners together: the CLIs use a handful. */
const MAX_CONNECTIONS = 256;
/** Request-body bytes held at once, all connections together (see BodyBudget). */
export const BUFFERED_BYTES = 256 << 20;
/** What a WebSocket client may send before the upstream has switched protocols. */
const HANDSHAKE_HELD_BYTES = 64 << 10;
/** A request's headers must arrive within the first, the whole request within the second (slowloris). */
const TIMEOUTS: NonNullable<KeyProxyOptions['timeouts']> = { headersMs: 20_000, requestMs: 120_000 };
/**
 * How long after a request went out on a kept connection a reset still counts as that connection's
 * idle close (and the request is sent again): such a close races the request's first bytes, while a
 * reset after the upstream worked on the request for a while may have billed it once already.
 */
const RESEND_WINDOW_MS = 5_000;
/** The errors a kept connection closed by the upstream gives (Node: "socket hang up", a broken pipe). */
const RESENDABLE = new Set(['ECONNRESET', 'EPIPE']);

/**
 * `text` (a CLI's error line) with the proxy's address put back as the endpoint the user configured: the
 * proxy's port lives for one run and its URL carries the run's token, so a message naming it tells the
 * user nothing they can check. `ws://127.0.0.1:<port>/<token>/v1/responses` becomes
 * `wss://api.openai.com/v1/responses`; a bare `127.0.0.1:<port>` becomes the upstream's host.
 */
export function withUpstreamNamed(text: string, proxy: Pick<KeyProxy, 'port' | 'upstream'>): string {
  const upstream = new URL(proxy.upstream);
  const origin = upstream.origin;
  const proxied = new RegExp(
    // The token may be cut short where a long line was (a stop message keeps 300 characters).
    `\\b(https?|wss?)://(?:127\\.0\\.0\\.1|localhost):${proxy.port}/[0-9a-f]{1,32}`,
    'g',
  );
  return text
    .replace(proxied, (_all, scheme: string) =>
      scheme.startsWith('ws') ? origin.replace(/^http/, 'ws') : origin,
    )
    .replace(new RegExp(`\\b127\\.0\\.0\\.1:${proxy.port}(?!\\d)`, 'g'), upstream.host);
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
  const refusals = noRefusals();
  let local = 0; // the loopback port, once listening
  const refuse = (why: string) => recordRefusal(refusals, why);
  const tools = opts.tools ? createMcpEndpoint({ tools: opts.tools }) : undefined;

  /**
   * The request's path without the token, or why it is refused (never the token itself), or `tools`
   * for the MCP endpoint.
   */
  const route = (
    req: IncomingMessage,
  ): { path: string; target: string } | { refused: string } | { tools: McpEndpoint } => {
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
    if (path === TOOLS_PATH) {
      return tools ? { tools } : { refused: `${req.method} ${path} (no tools in this run)` };
    }
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
  const budget = new BodyBudget(opts.bufferedBytes ?? BUFFERED_BYTES);
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
      if ('tools' in r) return r.tools.handle(req, res);
      readBody(req, MAX_BODY_BYTES, budget)
        .then((body) => {
          if (body === 'over') {
            refuse(`${req.method} ${r.path} (a body over ${MAX_BODY_BYTES} bytes)`);
            forbid(res, 413, 'request body too large for the harness to forward', true);
            return;
          }
          if (body === 'busy') {
            refuse(`${req.method} ${r.path} (bodies held at once over ${BUFFERED_BYTES} bytes)`);
            forbid(res, 503, 'the harness holds too many request bodies at once; retry', true);
            return;
          }
          const why = refuseModelRequest(body, {
            contentType: req.headers['content-type'],
            contentEncoding: req.headers['content-encoding'],
          });
          if (why) {
            refuse(`${req.method} ${r.path} (a request that ${why})`);
            forbid(res, 403, `not forwarded by the harness: the request ${why}`);
            return;
          }
          const send = tls ? httpsRequest : httpRequest;
          const headers = { ...headersFor(req.headers), 'content-length': String(body.length) };
          // The body is kept for one resend only while the upstream may still drop, unanswered, the kept
          // connection it went out on: until the answer starts, or RESEND_WINDOW_MS after it was sent,
          // and only within the budget for bodies held at once (its own share: req's is released below).
          const share = {};
          let resend: Buffer | undefined = budget.take(share, body.length) ? body : undefined;
          let window: NodeJS.Timeout | undefined;
          const forget = () => {
            resend = undefined;
            clearTimeout(window);
            budget.release(share);
          };
          res.on('close', forget);
          const forward = (fresh: boolean, bytes: Buffer) => {
            const out = send(
              {
                host: upstream.hostname,
                port,
                method: req.method,
                path: upstreamPath(r.target),
                headers,
                // A fresh connection of its own (a one-request agent), not another kept one.
                ...(fresh ? { agent: false } : {}),
              },
              (answer) => {
                forget();
                res.writeHead(answer.statusCode ?? 502, stripHop(answer.headers));
                answer.pipe(res);
              },
            );
            out.on('finish', () => {
              if (fresh) forget();
              else window = setTimeout(forget, timeouts.resendWindowMs ?? RESEND_WINDOW_MS);
            });
            out.on('error', (e: NodeJS.ErrnoException) => {
              const again = resend;
              forget();
              // A kept-alive connection the upstream closed as this request went out on it (its idle
              // timer ran out meanwhile): reset at once, nothing answered, so the request is sent once
              // more on a fresh connection, as Node's documentation of reusedSocket advises.
              if (!fresh && again && out.reusedSocket && !res.headersSent && RESENDABLE.has(e.code ?? '')) {
                forward(true, again);
                return;
              }
              // An upstream that cannot be reached looks the same to the CLI: the connection drops, with
              // no answer (its own "unreachable" handling, and ours, apply; a 502 would read as a server
              // error).
              req.socket.destroy();
            });
            out.end(bytes);
          };
          forward(false, body);
        })
        .catch(() => req.socket.destroy()) // whatever went wrong, this request goes no further
        .finally(() => budget.release(req));
    },
  );
  // One cap for both listeners (the UNIX socket's connections are handed to this server).
  server.on('connection', (s) => {
    if (sockets.size >= MAX_CONNECTIONS) {
      refuse(`a connection over ${MAX_CONNECTIONS} at once`);
      s.destroy();
      return;
    }
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('upgrade', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    const r = route(req);
    if ('refused' in r || 'tools' in r || req.headers.upgrade?.toLowerCase() !== 'websocket') {
      refuse(
        'refused' in r
          ? r.refused
          : 'tools' in r
            ? `${req.method} ${TOOLS_PATH} (an upgrade)`
            : `${req.method} ${r.path} (an upgrade to ${req.headers.upgrade})`,
      );
      client.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return;
    }
    const remote = tls
      ? tlsConnect({ host: upstream.hostname, port, servername: upstream.hostname })
      : netConnect({ host: upstream.hostname, port });
    sockets.add(remote);
    remote.on('close', () => sockets.delete(remote));
    // What the client sends is held (64 KiB at most) until the upstream has switched protocols, then
    // forwarded one checked message at a time; messages being gathered count against the body budget.
    const messages = new WebSocketMessages(MAX_BODY_BYTES);
    const held: Buffer[] = head.length > 0 ? [head] : [];
    let heldBytes = head.length;
    let state: 'handshake' | 'open' | 'refused' = 'handshake';
    const end = (why: string) => {
      refuse(`${req.method} ${r.path} (${why})`);
      client.destroy();
      remote.destroy();
    };
    const fromClient = (chunk: Buffer) => {
      if (state === 'refused') return; // not upgraded: nothing the client sends goes anywhere
      if (state === 'handshake') {
        heldBytes += chunk.length;
        if (heldBytes > HANDSHAKE_HELD_BYTES)
          return end(`a WebSocket sending ${heldBytes} bytes before its handshake`);
        held.push(chunk);
        return;
      }
      const { forward, refused } = messages.push(chunk, (payload, opcode) =>
        opcode === 1 ? refuseModelMessage(payload) : 'is binary: the proxy forwards text it can read',
      );
      if (refused) return end(`a WebSocket message that ${refused}`);
      if (!budget.hold(client, messages.buffered())) {
        return end(`a WebSocket message while bodies held at once are over ${BUFFERED_BYTES} bytes`);
      }
      for (const b of forward) {
        // A slow upstream slows the client, never the harness's memory.
        if (!remote.write(b)) {
          client.pause();
          remote.once('drain', () => client.resume());
        }
      }
    };
    client.on('data', fromClient);
    client.on('close', () => budget.release(client));
    const handshake = setTimeout(
      () => end('a WebSocket handshake the upstream never answered'),
      timeouts.requestMs,
    );
    remote.once(tls ? 'secureConnect' : 'connect', () => {
      const headers = { ...headersFor(req.headers, WS_DROPPED), connection: 'Upgrade', upgrade: 'websocket' };
      const lines = Object.entries(headers).flatMap(([k, v]) =>
        (Array.isArray(v) ? v : [v]).map((x) => `${k}: ${x}`),
      );
      remote.write(`GET ${upstreamPath(r.target)} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`);
      readResponseHead(remote).then(
        ({ head: answer, rest, status }) => {
          clearTimeout(handshake);
          client.write(answer);
          if (rest.length > 0) client.write(rest);
          remote.pipe(client);
          if (status !== 101) {
            // Not upgraded: the answer goes back, and nothing the client sent ever reaches the upstream.
            state = 'refused';
            held.length = 0;
            return;
          }
          state = 'open';
          for (const b of held.splice(0)) fromClient(b);
        },
        () => client.destroy(),
      );
    });
    remote.on('close', () => clearTimeout(handshake));
    remote.on('error', () => client.destroy());
    remote.on('close', () => client.destroy());
    client.on('error', () => remote.destroy());
    client.on('close', () => remote.destroy());
  });

  // The socket's folder is private (mkdtemp: 0700), so only this user can connect outside the sandbox.
  const dir = mkdtempSync(join(tmpdir(), 'hillclimb-key-proxy-'));
  const socket = join(dir, 'model-api.sock');
  // With the loopback listener too, the socket's connections are handed to the HTTP server, which
  // listens on TCP; without, it listens on the socket itself (either way it is listening, which is what
  // starts Node's checks of the timeouts above).
  const loopback = opts.loopback ?? true;
  const unix = loopback ? createNetServer((s) => server.emit('connection', s)) : undefined;
  try {
    if (unix) {
      await listening(server, () => server.listen(0, '127.0.0.1'));
      await listening(unix, () => unix.listen(socket));
    } else {
      await listening(server, () => server.listen(socket));
    }
  } catch (e) {
    server.close();
    unix?.close();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  // Without a loopback listener the port is only a name for the sandbox's forward, in a network
  // namespace where every port is free.
  local = loopback ? (server.address() as { port: number }).port : 20_000 + randomInt(40_000);
  return {
    url: `http://127.0.0.1:${local}/${token}${upstream.pathname.replace(/\/+$/, '')}`,
    upstream: opts.upstream,
    port: local,
    socket,
    refusals,
    ...(tools ? { toolsUrl: `http://127.0.0.1:${local}/${token}${TOOLS_PATH}`, tools } : {}),
    async close() {
      tools?.close();
      for (const s of sockets) s.destroy();
      await Promise.all([
        new Promise<void>((resolve) => server.close(() => resolve())),
        new Promise<void>((resolve) => (unix ? unix.close(() => resolve()) : resolve())),
      ]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The bytes every request body being read holds at once, across connections: one agent's requests
 * must not be able to make the harness hold gigabytes (256 connections × 32 MiB).
 */
class BodyBudget {
  private used = 0;
  private readonly held = new Map<object, number>();

  constructor(private readonly max: number) {}

  /** Add `n` bytes to what `holder` holds; false (nothing added) when that would pass the budget. */
  take(holder: object, n: number): boolean {
    return this.hold(holder, (this.held.get(holder) ?? 0) + n);
  }

  /** `holder` now holds `n` bytes; false (unchanged) when that would pass the budget. */
  hold(holder: object, n: number): boolean {
    const before = this.held.get(holder) ?? 0;
    if (this.used - before + n > this.max) return false;
    this.used += n - before;
    this.held.set(holder, n);
    return true;
  }

  release(holder: object): void {
    this.used -= this.held.get(holder) ?? 0;
    this.held.delete(holder);
  }
}

/** A request's whole body; `over` past `max` bytes, `busy` when the budget for all bodies is spent. */
function readBody(req: IncomingMessage, max: number, budget: BodyBudget): Promise<Buffer | 'over' | 'busy'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let refused: 'over' | 'busy' | undefined;
    req.on('data', (c: Buffer) => {
      if (refused) return;
      size += c.length;
      if (size > max) refused = 'over';
      else if (!budget.take(req, c.length)) refused = 'busy';
      else chunks.push(c);
      if (refused) {
        chunks.length = 0;
        budget.release(req); // what it held is dropped: the other requests may have it
      }
    });
    req.on('end', () => resolve(refused ?? Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Start a server listening (`listen`), resolving once it is, rejecting on its error. */
function listening(server: NetServer, listen: () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.once('listening', () => resolve());
    listen();
  });
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

/**
 * An address nothing is ever sent to: a tools-only proxy forwards nothing (its allow list is empty, so
 * every request but the tools' is refused before an upstream is named).
 */
const NO_UPSTREAM = 'http://127.0.0.1:9';

/**
 * The tools endpoint alone, for an agent whose model API the harness does not hold (the command agent):
 * the key proxy with nothing to forward, the same token, Host check, socket and forward.
 */
export function startToolsProxy(tools: AgentTools, opts: { loopback?: boolean } = {}): Promise<KeyProxy> {
  return startKeyProxy({
    upstream: NO_UPSTREAM,
    allow: [],
    credential: { header: 'authorization', value: '' },
    tools,
    ...opts,
  });
}
