/**
 * The agent's tools (tools.ts) as an MCP server over streamable HTTP, the transport both CLIs speak to a
 * server they reach by URL (codex `mcp_servers.<name>.url`, Claude Code `{"type":"http","url":…}`). It
 * is mounted in the key proxy (key-proxy.ts), which has already checked the run's token and the Host, so
 * a sandboxed agent reaches it through the socket forward it has for its model API and nothing else.
 *
 * The protocol, as modelcontextprotocol.io/specification/2025-06-18 (basic/transports, basic/lifecycle,
 * server/tools) says it:
 * - POST carries one JSON-RPC message (or, for a session that negotiated 2025-03-26, a batch); a request
 *   is answered `application/json`, notifications and responses alone `202 Accepted` with no body;
 * - GET (a server-to-client stream) is `405 Method Not Allowed`: this server never calls the client;
 * - `initialize` opens a session and its answer carries `Mcp-Session-Id`; every later POST must carry it
 *   (400 without, 404 for one ended or unknown), DELETE with it ends it;
 * - an `MCP-Protocol-Version` header naming a revision this server does not speak is a 400;
 * - an `Origin` other than the endpoint's own is a 403 (a page a browser shows, DNS rebinding).
 *
 * The caller is the agent, an adversary: bodies are capped (64 KiB), a message's JSON nesting and size
 * bounded, sessions bounded (the oldest goes), tool calls run a few at a time with a few more waiting and
 * the rest refused with a JSON-RPC error at once, every refusal counted in a bounded record; nothing it
 * sends can make the harness hold more than that, or throw.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { noRefusals, type Refusals, recordRefusal } from './refusals.js';
import type { AgentTools } from './tools.js';

/** Revisions spoken, newest first; an unknown one asked for gets the newest (the client decides). */
export const MCP_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'] as const;
/** The one revision with JSON-RPC batches (2025-06-18 removed them). */
const BATCH_REVISION = '2025-03-26';

/** The largest POST body read (tool arguments are a few small values). */
export const MCP_MAX_BODY_BYTES = 64 << 10;
/** How deep a message's JSON may nest, and how many values it may hold. */
export const MCP_MAX_DEPTH = 32;
export const MCP_MAX_VALUES = 4096;
/** Messages in one batch. */
const MAX_BATCH = 8;

/** JSON-RPC 2.0 error codes (jsonrpc.org/specification §5.1), and the one this server adds. */
export const JsonRpcError = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  /** Too many tool calls running and waiting: the caller should wait for an answer first. */
  busy: -32000,
} as const;

export interface McpEndpointOptions {
  tools: AgentTools;
  /** Tool calls run at once (default 2), and waiting for one of them (default 4); the rest are refused. */
  running?: number;
  waiting?: number;
  /** Sessions kept (default 8): a new one past that ends the oldest. */
  sessions?: number;
  /** Name and version in `serverInfo`. */
  version?: string;
}

export interface McpEndpoint {
  /** Serve one HTTP request whose path is the endpoint's (the caller routed and authenticated it). */
  handle(req: IncomingMessage, res: ServerResponse): void;
  /** What it refused (busy, too large, malformed, unknown session), counted; a sample kept. */
  refusals: Refusals;
  /** Tool calls answered (by the tools, errors included). */
  readonly calls: number;
  /** Abort every running call and refuse what comes after. */
  close(): void;
}

type Id = string | number;
interface Session {
  version: string;
  /** Calls running or waiting, by request id: `notifications/cancelled` aborts one. */
  inflight: Map<Id, AbortController>;
}
interface Answer {
  jsonrpc: '2.0';
  id: Id | null;
  result?: unknown;
  error?: { code: number; message: string };
}

export function createMcpEndpoint(opts: McpEndpointOptions): McpEndpoint {
  const refusals = noRefusals();
  const sessions = new Map<string, Session>();
  const maxSessions = opts.sessions ?? 8;
  const gate = new CallGate(opts.running ?? 2, opts.waiting ?? 4);
  let calls = 0;
  let closed = false;

  const fail = (id: Id | null, code: number, message: string): Answer => ({
    jsonrpc: '2.0',
    id,
    error: { code, message },
  });
  const answerError = (res: ServerResponse, status: number, why: string, id: Id | null, code: number) => {
    if (res.headersSent || res.destroyed) return;
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(fail(id, code, why)));
  };
  const refuse = (res: ServerResponse, status: number, why: string, id: Id | null = null, code?: number) => {
    recordRefusal(refusals, why);
    answerError(res, status, why, id, code ?? JsonRpcError.invalidRequest);
  };

  const openSession = (asked: unknown): { id: string; session: Session } => {
    const version = MCP_PROTOCOL_VERSIONS.find((v) => v === asked) ?? MCP_PROTOCOL_VERSIONS[0];
    if (sessions.size >= maxSessions) {
      const [oldest, old] = sessions.entries().next().value as [string, Session];
      for (const c of old.inflight.values()) c.abort();
      sessions.delete(oldest);
      recordRefusal(refusals, `a session over ${maxSessions} at once (the oldest ended)`);
    }
    const id = randomBytes(16).toString('hex');
    const session: Session = { version, inflight: new Map() };
    sessions.set(id, session);
    return { id, session };
  };

  /** One tool call, through the gate; its abort follows the session, the client's connection, close(). */
  const callTool = async (session: Session, id: Id, params: unknown, gone: AbortSignal): Promise<Answer> => {
    const p = isObject(params) ? params : {};
    if (typeof p.name !== 'string' || p.name.length === 0 || p.name.length > 128) {
      return fail(id, JsonRpcError.invalidParams, 'tools/call needs params.name, a tool name (tools/list)');
    }
    if (p.arguments !== undefined && !isObject(p.arguments)) {
      return fail(id, JsonRpcError.invalidParams, 'tools/call params.arguments must be an object');
    }
    if (session.inflight.has(id)) {
      return fail(id, JsonRpcError.invalidRequest, `request id ${JSON.stringify(id)} is already running`);
    }
    const abort = new AbortController();
    const onGone = () => abort.abort();
    gone.addEventListener('abort', onGone);
    session.inflight.set(id, abort);
    try {
      const entered = gate.enter(abort.signal);
      if (entered === 'full') {
        const why = `${gate.running} tool calls are running and ${gate.waitingCount} waiting: wait for an answer before calling again`;
        recordRefusal(refusals, `tools/call ${p.name.slice(0, 40)} (busy)`);
        return fail(id, JsonRpcError.busy, why);
      }
      if (!(await entered)) return fail(id, JsonRpcError.internal, 'the call was cancelled');
      try {
        const answer = await opts.tools.call(p.name, p.arguments ?? {}, abort.signal);
        calls++;
        return {
          jsonrpc: '2.0',
          id,
          result: { content: [{ type: 'text', text: answer.text }], isError: answer.isError },
        };
      } catch (e) {
        // The contract says a call never rejects for what the caller did: this is the harness's fault.
        return fail(id, JsonRpcError.internal, `the tool failed: ${(e as Error).message ?? String(e)}`);
      } finally {
        gate.leave();
      }
    } finally {
      gone.removeEventListener('abort', onGone);
      session.inflight.delete(id);
    }
  };

  /** One message of a POST: its answer, or undefined for a notification or a response. */
  const dispatch = async (session: Session, m: unknown, gone: AbortSignal): Promise<Answer | undefined> => {
    if (!isObject(m) || m.jsonrpc !== '2.0') {
      return fail(idOf(m), JsonRpcError.invalidRequest, 'not a JSON-RPC 2.0 message');
    }
    if (typeof m.method !== 'string') {
      // A response to a request of ours: this server sends none, so there is nothing to match.
      if ('result' in m || 'error' in m) return undefined;
      return fail(idOf(m), JsonRpcError.invalidRequest, 'a JSON-RPC request needs a method');
    }
    if (!('id' in m)) {
      if (m.method === 'notifications/cancelled' && isObject(m.params)) {
        const target = m.params.requestId;
        if (typeof target === 'string' || typeof target === 'number') session.inflight.get(target)?.abort();
      }
      return undefined; // notifications/initialized and any other notification: nothing to answer
    }
    const id = m.id;
    if (typeof id !== 'string' && typeof id !== 'number') {
      return fail(null, JsonRpcError.invalidRequest, 'a request id must be a string or a number');
    }
    switch (m.method) {
      case 'ping':
        return { jsonrpc: '2.0', id, result: {} };
      case 'tools/list':
        return { jsonrpc: '2.0', id, result: { tools: opts.tools.list() } };
      case 'tools/call':
        return callTool(session, id, m.params, gone);
      case 'initialize':
        return fail(
          id,
          JsonRpcError.invalidRequest,
          'initialize opens a session: send it alone, without one',
        );
      default:
        recordRefusal(refusals, `method ${m.method.slice(0, 60)}`);
        return fail(id, JsonRpcError.methodNotFound, `method not found: ${m.method.slice(0, 60)}`);
    }
  };

  const post = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const type = String(req.headers['content-type'] ?? '')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    if (type !== 'application/json') {
      return refuse(res, 415, 'Content-Type must be application/json');
    }
    let message: unknown;
    try {
      message = JSON.parse(body.toString('utf8'));
    } catch {
      return refuse(res, 400, 'the body is not JSON', null, JsonRpcError.parse);
    }
    const bounds = outOfBounds(message);
    if (bounds) return refuse(res, 400, bounds);

    if (isObject(message) && message.method === 'initialize') {
      const params = isObject(message.params) ? message.params : {};
      const id = idOf(message);
      if (id === null) return refuse(res, 400, 'initialize needs a request id');
      const { id: sessionId, session } = openSession(params.protocolVersion);
      const answer: Answer = {
        jsonrpc: '2.0',
        id,
        result: {
          protocolVersion: session.version,
          capabilities: { tools: { listChanged: false } },
          serverInfo: { name: 'hillclimb', version: opts.version ?? '0' },
          instructions:
            'The harness runs these tools on a snapshot of your working tree. What they answer is advice ' +
            'for you, never evidence: the iteration is still judged on fresh measurements.',
        },
      };
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': sessionId });
      res.end(JSON.stringify(answer));
      return;
    }

    const asked = req.headers['mcp-protocol-version'];
    if (asked !== undefined && !MCP_PROTOCOL_VERSIONS.some((v) => v === asked)) {
      // A client probing a newer revision first (Claude Code 2.1.332 opens with a 2026-07-28
      // `server/discover`) falls back to initialize on this 400: negotiation, not counted as a refusal.
      const why = `unsupported MCP-Protocol-Version ${JSON.stringify(String(asked).slice(0, 20))}: initialize`;
      return answerError(res, 400, why, idOf(message), JsonRpcError.invalidRequest);
    }
    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId !== 'string')
      return refuse(res, 400, 'Mcp-Session-Id is required (initialize first)');
    const session = sessions.get(sessionId);
    if (!session) return refuse(res, 404, 'no such session (ended or never opened): initialize again');
    const batch = Array.isArray(message);
    if (batch && session.version !== BATCH_REVISION) {
      return refuse(res, 400, `JSON-RPC batches are not part of MCP ${session.version}: send one message`);
    }
    const messages = batch ? (message as unknown[]) : [message];
    if (messages.length === 0 || messages.length > MAX_BATCH) {
      return refuse(res, 400, `a batch holds 1 to ${MAX_BATCH} messages`);
    }

    // The client gone before its answer (closed the connection, timed out) cancels what it asked for.
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) gone.abort();
    });
    Promise.all(messages.map((m) => dispatch(session, m, gone.signal))).then(
      (answers) => {
        const sent = answers.filter((a): a is Answer => a !== undefined);
        if (res.destroyed) return;
        if (sent.length === 0) {
          res.writeHead(202).end();
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(batch ? sent : sent[0]));
      },
      () => res.destroy(), // dispatch does not reject; if it ever did, this request ends, the server stays
    );
  };

  return {
    refusals,
    get calls() {
      return calls;
    },
    handle(req, res) {
      if (closed) return refuse(res, 503, 'the tools endpoint has closed (the agent run is over)');
      const origin = req.headers.origin;
      if (origin !== undefined && origin !== `http://${req.headers.host}`) {
        req.resume();
        return refuse(res, 403, `Origin ${JSON.stringify(origin.slice(0, 60))} is not the endpoint's`);
      }
      if (req.method === 'DELETE') {
        req.resume();
        const id = req.headers['mcp-session-id'];
        const session = typeof id === 'string' ? sessions.get(id) : undefined;
        if (!session) return refuse(res, 404, 'no such session');
        for (const c of session.inflight.values()) c.abort();
        sessions.delete(id as string);
        res.writeHead(200).end();
        return;
      }
      if (req.method !== 'POST') {
        req.resume();
        // A client may ask for a stream (GET) and take the 405 in its stride: both CLIs do; not counted.
        if (req.method !== 'GET') recordRefusal(refusals, `${req.method} (not an MCP method of HTTP)`);
        res.writeHead(405, { allow: 'POST, DELETE' }).end();
        return;
      }
      readCapped(req, MCP_MAX_BODY_BYTES).then(
        (body) => {
          if (body === 'over') {
            // Answered at once, and the connection ends: the rest of the body is never read.
            res.on('finish', () => req.socket.destroy());
            res.setHeader('connection', 'close');
            refuse(res, 413, `a body over ${MCP_MAX_BODY_BYTES} bytes`);
            return;
          }
          post(req, res, body);
        },
        () => res.destroy(),
      );
    },
    close() {
      closed = true;
      for (const s of sessions.values()) for (const c of s.inflight.values()) c.abort();
      sessions.clear();
    },
  };
}

/**
 * Tool calls at once: `running` run, `waiting` wait their turn in order, the rest are refused. A waiting
 * call whose signal aborts leaves the line.
 */
class CallGate {
  running = 0;
  private readonly line: Array<() => void> = [];

  constructor(
    private readonly maxRunning: number,
    private readonly maxWaiting: number,
  ) {}

  get waitingCount(): number {
    return this.line.length;
  }

  /** `full` at once, or a promise: true once it may run (call leave() after), false if aborted first. */
  enter(signal: AbortSignal): 'full' | Promise<boolean> {
    if (this.running < this.maxRunning) {
      this.running++;
      return Promise.resolve(true);
    }
    if (this.line.length >= this.maxWaiting) return 'full';
    return new Promise<boolean>((resolve) => {
      const turn = () => {
        signal.removeEventListener('abort', quit);
        this.running++;
        resolve(true);
      };
      const quit = () => {
        const i = this.line.indexOf(turn);
        if (i !== -1) this.line.splice(i, 1);
        resolve(false);
      };
      if (signal.aborted) return resolve(false);
      signal.addEventListener('abort', quit, { once: true });
      this.line.push(turn);
    });
  }

  leave(): void {
    this.running--;
    this.line.shift()?.();
  }
}

/** Why a parsed message is too deep or too big to handle, or undefined. */
function outOfBounds(value: unknown): string | undefined {
  const stack: Array<[unknown, number]> = [[value, 1]];
  let values = 0;
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (++values > MCP_MAX_VALUES) return `a message of more than ${MCP_MAX_VALUES} JSON values`;
    if (v === null || typeof v !== 'object') continue;
    if (depth > MCP_MAX_DEPTH) return `a message nested deeper than ${MCP_MAX_DEPTH}`;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function idOf(m: unknown): Id | null {
  const id = isObject(m) ? m.id : undefined;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** The whole body, or `over` as soon as it passes `max` bytes (what came is dropped, the rest unread). */
function readCapped(req: IncomingMessage, max: number): Promise<Buffer | 'over'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer) => {
      size += c.length;
      if (size <= max) return void chunks.push(c);
      chunks.length = 0;
      req.off('data', onData);
      req.pause();
      resolve('over');
    };
    req.on('data', onData);
    req.on('end', () => resolve(size > max ? 'over' : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
