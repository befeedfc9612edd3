/**
 * A fake OpenAI Responses API for driving the real `codex` binary offline. It plays a script: the
 * n-th model request gets the n-th reply (a tool call, a final message, or an API error), and every
 * request is recorded so a test can check what codex sent back (tool outputs, credentials).
 *
 * Both transports codex 0.169 uses are modelled, as api.openai.com serves them:
 *   GET  /v1/responses  + `Upgrade: websocket`   codex tries this first (header
 *        `OpenAI-Beta: responses_websockets=…`); each text message from the client is a
 *        `{"type":"response.create", …request body…}` (or `response.processed`), each message back is
 *        one Responses stream event as JSON. An API error during a request is the wrapped
 *        `{"type":"error","status":N,"error":{…}}` event codex maps back to an HTTP status.
 *        A bad key is refused at the handshake with 401, as an HTTP request would be.
 *        (openai/codex codex-rs/codex-api/src/endpoint/responses_websocket.rs: connect_websocket,
 *        run_websocket_response_stream, parse_wrapped_websocket_error_event; common.rs
 *        ResponsesWsRequest.)
 *   POST /v1/responses                             the HTTP fallback: a `text/event-stream` of
 *        `event: <type>\ndata: <json>\n\n` records (codex-rs/codex-api/src/sse/responses.rs:
 *        process_sse reads `response.created`, `response.output_item.added/done`,
 *        `response.output_text.delta`, `response.completed` with `response.id` and `usage`,
 *        `response.failed`).
 *   GET  /v1/models                                the documented model list (hillclimb's key check
 *        before a run): `{"object":"list","data":[…]}`, 401 without the key.
 * With `websocket: false` the server behaves like an OpenAI-compatible proxy without the WebSocket
 * transport: the upgrade is answered 405 and codex falls back to HTTP after its WebSocket retries. With
 * `websocket: 'not-found'` it answers 404 with a chunked body, as a proxy in front of a web framework does
 * (codex quotes the raw body, chunk sizes and `\r\n` included, in its retry notices).
 *
 * Errors use the API's JSON shape `{"error":{"message","type","param","code"}}`. Anything outside
 * this list (another path, a missing or wrong key, a request after the script ran out) is recorded in
 * `violations`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { guardNetwork } from '../network-guard.js';
import { acceptWebSocket, type WebSocketConnection } from './websocket.js';

/** One scripted answer to one model request. */
export type ResponsesReply =
  /**
   * A call of a JSON function tool, e.g. `exec_command` with `{cmd}`; a tool a search exposed (an MCP
   * server's) is named by its namespace and name, as the search output listed it.
   */
  | { functionCall: { name: string; namespace?: string; arguments: Record<string, unknown> } }
  /**
   * A search of the tools codex defers (0.169 defers every MCP server's tools behind its client-executed
   * `tool_search`): a `tool_search_call` item; codex answers with a `tool_search_output` in the next
   * request, which exposes the tools found (codex-rs/codex-api sse tests: parses_tool_search_call).
   */
  | { toolSearch: { query: string; limit?: number } }
  /** A call of a freeform tool, e.g. `apply_patch` with the patch text. */
  | { customToolCall: { name: string; input: string } }
  /** The assistant's final message: the turn ends. */
  | { message: string }
  /** The API refuses the request with this HTTP status (429, 500, 503, …). */
  | { status: number; error?: { message?: string; type?: string; code?: string | null } };

export interface ResponsesServerOptions {
  replies: readonly ResponsesReply[];
  /** The answer once `replies` ran out (default: a violation and a final message). */
  whenExhausted?: ResponsesReply;
  /** The API key the server accepts as `Authorization: Bearer <key>`. */
  apiKey: string;
  /**
   * Serve the WebSocket transport (default true, as api.openai.com does); false: refuse the upgrade 405;
   * `'not-found'`: refuse it 404 with a chunked body.
   */
  websocket?: boolean | 'not-found';
  /** Listen on this port (default: any free one): a test can bring an API back where it was. */
  port?: number;
  /** Called after a `GET /v1/models` was answered (the harness's check before a run). */
  onModelList?: () => void;
}

export interface RecordedResponsesRequest {
  transport: 'http' | 'websocket';
  /** The request body (for WebSocket, the `response.create` message without its `type`). */
  body: Record<string, unknown>;
  authorization: string | undefined;
}

export interface ResponsesServer {
  /** The base URL a client puts before `/responses`: `http://127.0.0.1:<port>/v1`. */
  baseUrl: string;
  requests: RecordedResponsesRequest[];
  /** WebSocket handshakes seen, with their status (101 accepted). */
  handshakes: Array<{ status: number; authorization: string | undefined; beta: string | undefined }>;
  violations: string[];
  close(): Promise<void>;
}

type StreamEvent = Record<string, unknown> & { type: string };

export async function startResponsesServer(opts: ResponsesServerOptions): Promise<ResponsesServer> {
  const requests: RecordedResponsesRequest[] = [];
  const handshakes: ResponsesServer['handshakes'] = [];
  const violations: string[] = [];
  const websocket = opts.websocket ?? true;
  let next = 0;
  let ids = 0;
  const id = (prefix: string) => `${prefix}_${String(++ids).padStart(4, '0')}`;

  const nextReply = (): ResponsesReply => {
    const reply = opts.replies[next++];
    if (reply) return reply;
    if (opts.whenExhausted) return opts.whenExhausted;
    violations.push(`model request ${next} after the script's ${opts.replies.length} replies`);
    return { message: 'The script has no more replies.' };
  };

  const authorized = (header: string | undefined) => header === `Bearer ${opts.apiKey}`;

  const sockets = new Set<Socket | Duplex>();
  const server = createServer((req, res) => {
    handleHttp(req, res).catch((e) => {
      violations.push(`server error: ${(e as Error).stack ?? e}`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  async function handleHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method === 'GET' && path === '/v1/models') {
      // The documented model list: `{"object":"list","data":[{id, object:"model", created, owned_by}]}`.
      if (!authorized(req.headers.authorization)) sendJson(res, 401, unauthorized(req.headers.authorization));
      else {
        const model = { id: 'gpt-5.5', object: 'model', created: 1_767_225_600, owned_by: 'openai' };
        sendJson(res, 200, { object: 'list', data: [model] });
      }
      opts.onModelList?.();
      return;
    }
    if (req.method !== 'POST' || path !== '/v1/responses') {
      violations.push(`unexpected request: ${req.method} ${req.url}`);
      sendJson(res, 404, apiError(`Invalid URL (${req.method} ${path})`, 'invalid_request_error', null));
      return;
    }
    const authorization = req.headers.authorization;
    if (!authorized(authorization)) {
      sendJson(res, 401, unauthorized(authorization));
      return;
    }
    const parsed = JSON.parse(body) as Record<string, unknown>;
    requests.push({ transport: 'http', body: parsed, authorization });
    const reply = nextReply();
    if ('status' in reply) {
      sendJson(res, reply.status, errorBody(reply));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const event of streamEvents(reply, id)) {
      res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    }
    res.end();
  }

  server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const authorization = req.headers.authorization;
    const beta = req.headers['openai-beta'] as string | undefined;
    const refuse = (status: number, reason: string, body: unknown) => {
      handshakes.push({ status, authorization, beta });
      const text = JSON.stringify(body);
      socket.end(
        `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
      );
    };
    if (path !== '/v1/responses') {
      violations.push(`unexpected upgrade: ${req.url}`);
      refuse(404, 'Not Found', apiError('Not found', 'invalid_request_error', null));
      return;
    }
    if (websocket === 'not-found') {
      handshakes.push({ status: 404, authorization, beta });
      const text = JSON.stringify(apiError('Not found', 'invalid_request_error', null));
      const size = Buffer.byteLength(text).toString(16);
      socket.end(
        `HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n${size}\r\n${text}\r\n0\r\n\r\n`,
      );
      return;
    }
    if (!websocket) {
      refuse(405, 'Method Not Allowed', apiError('Method not allowed', 'invalid_request_error', null));
      return;
    }
    if (!authorized(authorization)) {
      refuse(401, 'Unauthorized', unauthorized(authorization));
      return;
    }
    handshakes.push({ status: 101, authorization, beta });
    acceptWebSocket(req, socket, (text, ws) => onWebSocketMessage(text, ws, authorization));
  });

  function onWebSocketMessage(
    text: string,
    ws: WebSocketConnection,
    authorization: string | undefined,
  ): void {
    const message = JSON.parse(text) as Record<string, unknown>;
    if (message.type === 'response.processed') return;
    if (message.type !== 'response.create') {
      violations.push(`unexpected websocket message type: ${String(message.type)}`);
      return;
    }
    const { type: _type, ...body } = message;
    // `generate: false` warms the connection up: answered with an empty response, no script reply.
    if (body.generate === false) {
      for (const event of streamEvents({ message: '' }, id, true)) ws.send(JSON.stringify(event));
      return;
    }
    requests.push({ transport: 'websocket', body, authorization });
    const reply = nextReply();
    if ('status' in reply) {
      ws.send(JSON.stringify({ type: 'error', status: reply.status, ...errorBody(reply) }));
      return;
    }
    for (const event of streamEvents(reply, id)) ws.send(JSON.stringify(event));
  }

  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const restoreFetch = guardNetwork((url) => violations.push(`network access outside loopback: ${url}`));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    handshakes,
    violations,
    async close() {
      restoreFetch();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The stream events of one reply, in the order the API sends them. */
function streamEvents(
  reply: Exclude<ResponsesReply, { status: number }>,
  id: (prefix: string) => string,
  empty = false,
): StreamEvent[] {
  const responseId = id('resp');
  const items: Array<Record<string, unknown>> = [];
  if (!empty) {
    if ('functionCall' in reply) {
      items.push({
        type: 'function_call',
        id: id('fc'),
        call_id: id('call'),
        name: reply.functionCall.name,
        ...(reply.functionCall.namespace ? { namespace: reply.functionCall.namespace } : {}),
        arguments: JSON.stringify(reply.functionCall.arguments),
        status: 'completed',
      });
    } else if ('toolSearch' in reply) {
      items.push({
        type: 'tool_search_call',
        id: id('ts'),
        call_id: id('call'),
        execution: 'client',
        arguments: { limit: 8, ...reply.toolSearch },
        status: 'completed',
      });
    } else if ('customToolCall' in reply) {
      items.push({
        type: 'custom_tool_call',
        id: id('ctc'),
        call_id: id('call'),
        name: reply.customToolCall.name,
        input: reply.customToolCall.input,
        status: 'completed',
      });
    } else {
      items.push({
        type: 'message',
        id: id('msg'),
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: reply.message, annotations: [] }],
      });
    }
  }
  const events: StreamEvent[] = [
    { type: 'response.created', response: { id: responseId, status: 'in_progress', output: [] } },
  ];
  items.forEach((item, output_index) => {
    events.push({ type: 'response.output_item.added', output_index, item });
    if (item.type === 'message') {
      const text = (item.content as Array<{ text: string }>)[0]!.text;
      events.push({ type: 'response.output_text.delta', output_index, content_index: 0, delta: text });
    }
    events.push({ type: 'response.output_item.done', output_index, item });
  });
  events.push({
    type: 'response.completed',
    response: {
      id: responseId,
      status: 'completed',
      output: items,
      usage: {
        input_tokens: 100,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 10,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 110,
      },
    },
  });
  return events;
}

function apiError(message: string, type: string, code: string | null) {
  return { error: { message, type, param: null, code } };
}

/** What api.openai.com answers without a key, or with a wrong one. */
function unauthorized(authorization: string | undefined) {
  return authorization === undefined
    ? apiError(
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        'invalid_request_error',
        null,
      )
    : apiError('Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key');
}

function errorBody(reply: {
  status: number;
  error?: { message?: string; type?: string; code?: string | null };
}) {
  const type = reply.error?.type ?? (reply.status === 429 ? 'rate_limit_exceeded' : 'server_error');
  return apiError(reply.error?.message ?? `scripted ${reply.status}`, type, reply.error?.code ?? null);
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
