/**
 * A fake Anthropic Messages API for driving the real `claude` binary offline. It plays a script: the
 * n-th agent request gets the n-th reply (a tool call, a final text, or an API error), and every
 * request is recorded so a test can check what Claude Code sent back (tool results, credentials).
 *
 *   POST /v1/messages[?beta=true]   `stream: true` requests are answered with the documented
 *        server-sent events (docs.anthropic.com "Streaming Messages"): `message_start`,
 *        `content_block_start` / `content_block_delta` (`text_delta`, `input_json_delta`) /
 *        `content_block_stop` per block, `message_delta` with the `stop_reason` (`tool_use` or
 *        `end_turn`), `message_stop`. Errors are `{"type":"error","error":{"type","message"}}` with
 *        the status the API uses: 401 `authentication_error`, 429 `rate_limit_error` (with
 *        `retry-after`), 500 `api_error`, 529 `overloaded_error` (docs.anthropic.com "Errors").
 *   HEAD /api/hello                 Claude Code's connectivity probe (seen from 2.1.332): 200.
 *   GET  /v1/models                 the documented model list (hillclimb's key check before a run):
 *        `x-api-key` and `anthropic-version` required; `{data, has_more, first_id, last_id}`.
 *
 * Credentials: `x-api-key` (ANTHROPIC_API_KEY) or `Authorization: Bearer` (an OAuth token); any
 * other request is answered 401 before the script is consulted. Requests that are not the agent's
 * own turn (Claude Code also sends small side queries, e.g. without tools) get a short text answer
 * and do not consume the script. Paths outside this list are answered 404 and recorded in
 * `violations`, as is a request after the script ran out.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { guardNetwork } from '../network-guard.js';

export type MessagesReply =
  /** A `tool_use` block, e.g. `Edit` with `{file_path, old_string, new_string}`. */
  | { toolUse: { name: string; input: Record<string, unknown> } }
  /** A final text: `stop_reason: end_turn`. */
  | { text: string }
  /** The API refuses the request with this status (401, 429, 500, 529, …). */
  | { status: number; message?: string };

export interface MessagesServerOptions {
  replies: readonly MessagesReply[];
  /** The answer once `replies` ran out (default: a violation and a final text). */
  whenExhausted?: MessagesReply;
  /** The key accepted in `x-api-key` (or as a Bearer token). */
  apiKey: string;
  /** Listen on this port (default: any free one): a test can bring an API back where it was. */
  port?: number;
  /** Called after a `GET /v1/models` was answered (the harness's check before a run). */
  onModelList?: () => void;
  /** While this returns true, every authorized request is refused 529 (an outage; the script waits). */
  overloaded?: () => boolean;
}

export interface RecordedMessagesRequest {
  body: Record<string, unknown>;
  apiKey: string | undefined;
  /** Whether the request was the agent's own turn (it offers tools) and consumed a reply. */
  agentTurn: boolean;
}

export interface MessagesServer {
  /** What ANTHROPIC_BASE_URL is set to: `http://127.0.0.1:<port>`. */
  baseUrl: string;
  requests: RecordedMessagesRequest[];
  violations: string[];
  close(): Promise<void>;
}

const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

export async function startMessagesServer(opts: MessagesServerOptions): Promise<MessagesServer> {
  const requests: RecordedMessagesRequest[] = [];
  const violations: string[] = [];
  let next = 0;
  let ids = 0;
  const id = (prefix: string) => `${prefix}_${String(++ids).padStart(4, '0')}`;

  const nextReply = (): MessagesReply => {
    const reply = opts.replies[next++];
    if (reply) return reply;
    if (opts.whenExhausted) return opts.whenExhausted;
    violations.push(`agent request ${next} after the script's ${opts.replies.length} replies`);
    return { text: 'The script has no more replies.' };
  };

  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    handle(req, res).catch((e) => {
      violations.push(`server error: ${(e as Error).stack ?? e}`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method === 'HEAD' && path === '/api/hello') {
      res.writeHead(200);
      res.end();
      return;
    }
    if (req.method === 'GET' && path === '/v1/models') {
      // The documented model list; `anthropic-version` is a required header there.
      const key = req.headers['x-api-key'];
      if (key !== opts.apiKey) sendError(res, 401, 'invalid x-api-key');
      else if (!req.headers['anthropic-version'])
        sendError(res, 400, 'anthropic-version: header is required');
      else {
        const model = {
          type: 'model',
          id: 'claude-opus-4-5',
          display_name: 'Claude Opus 4.5',
          created_at: '2025-11-24T00:00:00Z',
        };
        sendJson(res, 200, { data: [model], has_more: false, first_id: model.id, last_id: model.id });
      }
      opts.onModelList?.();
      return;
    }
    if (req.method !== 'POST' || path !== '/v1/messages') {
      violations.push(`unexpected request: ${req.method} ${req.url}`);
      sendError(res, 404, `Not found: ${path}`);
      return;
    }
    const bearer = req.headers.authorization?.replace(/^Bearer /, '');
    const key = (req.headers['x-api-key'] as string | undefined) ?? bearer;
    if (key !== opts.apiKey) {
      sendError(res, 401, 'invalid x-api-key');
      return;
    }
    if (opts.overloaded?.()) {
      sendError(res, 529, 'Overloaded');
      return;
    }
    const parsed = JSON.parse(body) as Record<string, unknown>;
    const tools = Array.isArray(parsed.tools) ? (parsed.tools as Array<{ name?: string }>) : [];
    const agentTurn = tools.length > 0;
    requests.push({ body: parsed, apiKey: key, agentTurn });
    const reply: MessagesReply = agentTurn ? nextReply() : { text: 'ok' };
    if ('status' in reply) {
      sendError(res, reply.status, reply.message ?? `scripted ${reply.status}`);
      return;
    }
    if (parsed.stream !== true) {
      violations.push('a non-streaming /v1/messages request');
    }
    const model = typeof parsed.model === 'string' ? parsed.model : 'claude-test';
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'request-id': id('req'),
    });
    for (const event of streamEvents(reply, model, id)) {
      res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    }
    res.end();
  }

  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const restoreFetch = guardNetwork((url) => violations.push(`network access outside loopback: ${url}`));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    violations,
    async close() {
      restoreFetch();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type StreamEvent = Record<string, unknown> & { type: string };

function streamEvents(
  reply: Exclude<MessagesReply, { status: number }>,
  model: string,
  id: (prefix: string) => string,
): StreamEvent[] {
  const events: StreamEvent[] = [
    {
      type: 'message_start',
      message: {
        id: id('msg'),
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 100, output_tokens: 1 },
      },
    },
  ];
  if ('toolUse' in reply) {
    events.push(
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'tool_use', id: id('toolu'), name: reply.toolUse.name, input: {} },
      },
      {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'input_json_delta', partial_json: JSON.stringify(reply.toolUse.input) },
      },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'message_delta',
        delta: { stop_reason: 'tool_use', stop_sequence: null },
        usage: { output_tokens: 20 },
      },
    );
  } else {
    events.push(
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: reply.text } },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: 20 },
      },
    );
  }
  events.push({ type: 'message_stop' });
  return events;
}

function sendError(res: ServerResponse, status: number, message: string): void {
  const text = JSON.stringify({
    type: 'error',
    error: { type: ERROR_TYPES[status] ?? 'api_error', message },
  });
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'request-id': `req_error_${status}`,
    ...(status === 429 ? { 'retry-after': '1' } : {}),
  });
  res.end(text);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
