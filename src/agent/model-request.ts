/**
 * What the key proxy forwards to the model API, judged on the bytes it forwards (issue 35). A model
 * request is JSON the proxy can read whole: not compressed, UTF-8 without a byte-order mark, one value
 * per key (parsers disagree on which of two wins, so the API could see a field the proxy did not), and
 * it asks the API to reach nothing beyond itself. What the proxy cannot read is refused, never
 * forwarded unread.
 */

/** Content encodings a body may have: none. */
const IDENTITY = new Set(['', 'identity']);

/** Why a request body is refused, or undefined to forward it as it is. An empty body passes. */
export function refuseModelRequest(
  body: Buffer,
  headers: { contentType?: string | undefined; contentEncoding?: string | undefined },
): string | undefined {
  const encoding = (headers.contentEncoding ?? '').trim().toLowerCase();
  if (!IDENTITY.has(encoding))
    return `is encoded (${encoding.slice(0, 40)}): the proxy forwards what it can read`;
  if (body.length === 0) return undefined;
  if (!/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(headers.contentType ?? '')) {
    return `is not JSON (content type ${JSON.stringify((headers.contentType ?? '').slice(0, 60))})`;
  }
  return refuseModelMessage(body);
}

/** Why one JSON message (a request body, a WebSocket text message) is refused, or undefined. */
export function refuseModelMessage(bytes: Buffer): string | undefined {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return 'starts with a byte-order mark';
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return 'is not UTF-8';
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return 'is not JSON';
  }
  const dup = duplicateKey(text);
  if (dup !== undefined) return `repeats the key ${JSON.stringify(dup.slice(0, 60))} in one object`;
  const reach = reachesOutside(doc);
  return reach ? `asks the model API to reach ${reach}` : undefined;
}

/**
 * The first key that appears twice in one object of `text` (valid JSON), compared decoded (`"a"` and
 * `"\u0061"` are the same key), or undefined.
 */
export function duplicateKey(text: string): string | undefined {
  // One entry per open object or array: the keys seen (objects), and whether a key comes next.
  const open: Array<{ keys: Set<string>; expectKey: boolean } | undefined> = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const top = open.at(-1);
      if (top?.expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.keys.has(key)) return key;
        top.keys.add(key);
        top.expectKey = false;
      }
      i = j;
    } else if (c === '{') open.push({ keys: new Set(), expectKey: true });
    else if (c === '[') open.push(undefined);
    else if (c === '}' || c === ']') open.pop();
    else if (c === ',') {
      const top = open.at(-1);
      if (top) top.expectKey = true;
    }
  }
  return undefined;
}

/** Fields whose value is a URL the API would fetch; a `data:` URL is inline, the rest are refused. */
const URL_FIELDS = ['image_url', 'file_url', 'document_url', 'audio_url', 'video_url'];

/**
 * What a parsed model request asks the API to reach beyond itself, by field, or undefined: an MCP
 * server (a tool of type `mcp`, any `server_url`, Anthropic's `mcp_servers`), or anything fetched from a
 * URL (the fields above unless inline, a `source` of type `url`). Prose that mentions a URL is the
 * model's business. Walks every value (a body is at most 32 MiB), one at a time.
 */
export function reachesOutside(doc: unknown): string | undefined {
  const stack: unknown[] = [doc];
  while (stack.length > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) {
      for (const x of v) stack.push(x);
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    const o = v as Record<string, unknown>;
    if (o.type === 'mcp') return 'an MCP server (a tool of type mcp)';
    // A value, not a schema: tools describe their parameters in JSON schemas whose property names
    // can be these same words (`"image_url": {"type": "string"}`).
    if (isValue(o.server_url)) return `an MCP server (server_url ${preview(o.server_url)})`;
    if (Array.isArray(o.mcp_servers) && o.mcp_servers.length > 0) return 'MCP servers (mcp_servers)';
    for (const key of URL_FIELDS) {
      if (!(key in o)) continue;
      const u = o[key];
      const url = typeof u === 'object' && u !== null ? (u as { url?: unknown }).url : u;
      if (isValue(url) && !(typeof url === 'string' && /^data:/i.test(url.trim()))) {
        return `a URL (${key}: ${preview(url)})`;
      }
    }
    if (o.type === 'url' && isValue(o.url)) return `a URL (source: ${preview(o.url)})`;
    for (const x of Object.values(o)) stack.push(x);
  }
  return undefined;
}

/** A string, number or boolean: what a URL could be sent as (an object or array is a schema, or nested). */
function isValue(v: unknown): boolean {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}

function preview(v: unknown): string {
  return (typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v))).slice(0, 80);
}
