#!/usr/bin/env node
// The harness's tools for a `command` agent (docs/agents.md, "Tools"): one MCP call over HTTP, no
// dependencies. The harness sets HILLCLIMB_TOOLS_URL (and HILLCLIMB_TOOLS_CLIENT, this file's path):
//
//   node "$HILLCLIMB_TOOLS_CLIENT" list                  the tools, one per line: name, then what it does
//   node "$HILLCLIMB_TOOLS_CLIENT" check                 call a tool; its answer's text goes to stdout
//   node "$HILLCLIMB_TOOLS_CLIENT" ledger '{"last": 3}'  with arguments, one JSON object
//
// Exit 0: the tool answered; 1: it answered with an error (a failing check, a spent budget); 2: a
// mistake in the command line; 3: the endpoint could not be reached or refused the call.

const USAGE = 'usage: hillclimb-tool.mjs list | <tool> [<arguments as a JSON object>]';
const PROTOCOL = '2025-06-18';

function fail(code, message) {
  process.stderr.write(`hillclimb-tool: ${message}\n`);
  process.exit(code);
}

const url = process.env.HILLCLIMB_TOOLS_URL;
const [command, argsText, ...extra] = process.argv.slice(2);
if (!url) fail(2, 'HILLCLIMB_TOOLS_URL is not set: the harness sets it when the run has tools');
if (!command || extra.length > 0 || command.startsWith('-')) fail(2, USAGE);
let args = {};
if (argsText !== undefined) {
  try {
    args = JSON.parse(argsText);
  } catch {
    fail(2, `the arguments are not JSON: ${argsText.slice(0, 80)}`);
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    fail(2, 'the arguments must be one JSON object, e.g. \'{"last": 3}\'');
  }
}

let session;
let ids = 0;
/** POST one JSON-RPC message; the answer's JSON (or undefined for a 202). */
async function post(method, params, notification = false) {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (session) Object.assign(headers, { 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL });
  const message = {
    jsonrpc: '2.0',
    method,
    ...(params ? { params } : {}),
    ...(notification ? {} : { id: ++ids }),
  };
  let res;
  try {
    res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(message) });
  } catch (e) {
    fail(3, `cannot reach the tools at ${new URL(url).host}: ${e.cause?.code ?? e.message}`);
  }
  if (res.status === 202) return undefined;
  const text = await res.text();
  let answer;
  try {
    answer = JSON.parse(text);
  } catch {
    fail(3, `${method}: HTTP ${res.status}, not JSON: ${text.slice(0, 200)}`);
  }
  if (answer.error) fail(3, `${method}: ${answer.error.message}`);
  if (!res.ok) fail(3, `${method}: HTTP ${res.status}`);
  session ??= res.headers.get('mcp-session-id') ?? undefined;
  return answer.result;
}

await post('initialize', {
  protocolVersion: PROTOCOL,
  capabilities: {},
  clientInfo: { name: 'hillclimb-tool', version: '1' },
});
await post('notifications/initialized', undefined, true);
let code = 0;
if (command === 'list') {
  const { tools } = await post('tools/list', {});
  for (const t of tools) process.stdout.write(`${t.name}\t${t.description.split('\n')[0]}\n`);
} else {
  const result = await post('tools/call', { name: command, arguments: args });
  const text = result.content
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  code = result.isError ? 1 : 0;
}
await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': session } }).catch(() => {});
process.exit(code);
