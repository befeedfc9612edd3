/**
 * An in-process Hugging Face Hub server for store tests. It implements the HTTP endpoints that
 * @huggingface/hub calls for what the `hf` store does (read from the library's source:
 * lib/repo-exists.ts, create-repo.ts, commit.ts, list-files.ts, file-download-info.ts, WebBlob.ts),
 * keeps state (tokens, dataset repositories, files, commits, LFS objects) and validates each request
 * shape the store relies on with ajv:
 *
 *   GET  /api/datasets/{ns}/{name}                      repoExists
 *   POST /api/repos/create                               createRepo (JSON)
 *   POST /api/datasets/{ns}/{name}/preupload/{rev}       which files go through LFS (JSON)
 *   POST /datasets/{ns}/{name}.git/info/lfs/objects/batch  LFS batch, "basic" transfer (git-lfs JSON)
 *   PUT  /__lfs/{oid}                                    LFS upload target (sha256 and size checked)
 *   POST /api/datasets/{ns}/{name}/commit/{rev}          NDJSON: header, file, lfsFile, deletedFile
 *   GET  /api/datasets/{ns}/{name}/tree/{rev}[/{path}]   listing, paginated with a Link header
 *   GET  /datasets/{ns}/{name}/resolve/{rev}/{path}      download, with Range support
 *
 * Errors use the Hub's shape (`{"error": …}`, `X-Error-Code`). A request outside this list or with a
 * bad shape is answered 400/404 AND recorded in `violations`, which tests assert empty. While the
 * server runs, `fetch` to anything but loopback fails and is recorded.
 *
 * Upload mode follows the Hub's rule closely enough for tests: a file goes through LFS when it is
 * larger than 10 MB or its first 512 bytes contain a NUL byte (binary); text files are committed
 * inline (base64 in the NDJSON).
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Ajv, type ValidateFunction } from 'ajv';
import { type LoopbackServer, serveOnLoopback } from './loopback-server.js';

const LFS_SIZE_THRESHOLD = 10 * 1024 * 1024;
const DEFAULT_TREE_PAGE_SIZE = 1000;

export interface HfUser {
  name: string;
  /** Namespaces (the user's own name and organisations) the token may write to. */
  canWrite: string[];
}

interface StoredFile {
  content: Buffer;
  lfs: boolean;
  sha256: string;
}

interface Reply {
  status: number;
  body?: Buffer | string;
  headers?: Record<string, string>;
}

interface HfRepo {
  id: string;
  private: boolean;
  files: Map<string, StoredFile>;
  commits: Array<{ oid: string; title: string; paths: string[] }>;
}

export interface HfRequestRecord {
  method: string;
  path: string;
  status: number;
}

class HubError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

const ajv = new Ajv({ allErrors: true, strict: true });
const validators = {
  createRepo: ajv.compile({
    type: 'object',
    additionalProperties: false,
    required: ['name', 'type'],
    properties: {
      name: { type: 'string', pattern: '^[A-Za-z0-9_.-]+$' },
      organization: { type: 'string' },
      type: { enum: ['dataset'] },
      visibility: { enum: ['public', 'private', 'protected'] },
      license: { type: 'string' },
      resourceGroupId: { type: 'string' },
    },
  }),
  preupload: ajv.compile({
    type: 'object',
    additionalProperties: false,
    required: ['files'],
    properties: {
      gitAttributes: { type: 'string' },
      files: {
        type: 'array',
        minItems: 1,
        maxItems: 100,
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['path', 'size', 'sample'],
          properties: {
            path: { type: 'string', minLength: 1 },
            size: { type: 'integer', minimum: 0 },
            sample: { type: 'string', pattern: '^[A-Za-z0-9+/]*={0,2}$' },
          },
        },
      },
    },
  }),
  lfsBatch: ajv.compile({
    type: 'object',
    additionalProperties: false,
    required: ['operation', 'objects'],
    properties: {
      operation: { enum: ['upload', 'download'] },
      transfers: { type: 'array', items: { enum: ['basic', 'multipart', 'xet'] } },
      hash_algo: { enum: ['sha_256', 'sha256'] },
      ref: {
        type: 'object',
        additionalProperties: false,
        required: ['name'],
        properties: { name: { type: 'string' } },
      },
      objects: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['oid', 'size'],
          properties: {
            oid: { type: 'string', pattern: '^[0-9a-f]{64}$' },
            size: { type: 'integer', minimum: 0 },
          },
        },
      },
    },
  }),
  commitHeader: ajv.compile({
    type: 'object',
    additionalProperties: false,
    required: ['key', 'value'],
    properties: {
      key: { const: 'header' },
      value: {
        type: 'object',
        additionalProperties: false,
        required: ['summary'],
        properties: {
          summary: { type: 'string', minLength: 1 },
          description: { type: 'string' },
          parentCommit: { type: 'string' },
        },
      },
    },
  }),
  commitOperation: ajv.compile({
    oneOf: [
      {
        type: 'object',
        additionalProperties: false,
        required: ['key', 'value'],
        properties: {
          key: { const: 'file' },
          value: {
            type: 'object',
            additionalProperties: false,
            required: ['path', 'content', 'encoding'],
            properties: {
              path: { type: 'string', minLength: 1 },
              content: { type: 'string' },
              encoding: { const: 'base64' },
            },
          },
        },
      },
      {
        type: 'object',
        additionalProperties: false,
        required: ['key', 'value'],
        properties: {
          key: { const: 'lfsFile' },
          value: {
            type: 'object',
            additionalProperties: false,
            required: ['path', 'algo', 'oid', 'size'],
            properties: {
              path: { type: 'string', minLength: 1 },
              algo: { const: 'sha256' },
              oid: { type: 'string', pattern: '^[0-9a-f]{64}$' },
              size: { type: 'integer', minimum: 0 },
            },
          },
        },
      },
      {
        type: 'object',
        additionalProperties: false,
        required: ['key', 'value'],
        properties: {
          key: { const: 'deletedFile' },
          value: {
            type: 'object',
            additionalProperties: false,
            required: ['path'],
            properties: { path: { type: 'string', minLength: 1 } },
          },
        },
      },
    ],
  }),
};

export class HfContractServer {
  readonly violations: string[] = [];
  readonly requests: HfRequestRecord[] = [];
  url = '';
  /** Entries per page of a tree listing (small values exercise the Link header). */
  treePageSize = DEFAULT_TREE_PAGE_SIZE;
  private listener: LoopbackServer | undefined;
  private readonly tokens = new Map<string, HfUser>();
  private readonly repos = new Map<string, HfRepo>();
  private readonly lfsObjects = new Map<string, Buffer>();

  static async start(): Promise<HfContractServer> {
    const s = new HfContractServer();
    s.listener = await serveOnLoopback((req, res) => s.handle(req, res), s.violations);
    s.url = s.listener.url;
    return s;
  }

  async close(): Promise<void> {
    await this.listener?.close();
  }

  addToken(token: string, user: HfUser): void {
    this.tokens.set(token, user);
  }

  /** Create a dataset repository directly (as if made on the website). */
  addRepo(id: string, opts: { private?: boolean } = {}): void {
    this.repos.set(id, { id, private: opts.private ?? true, files: new Map(), commits: [] });
  }

  repo(id: string): HfRepo | undefined {
    return this.repos.get(id);
  }

  fileText(repoId: string, path: string): string | undefined {
    return this.repos.get(repoId)?.files.get(path)?.content.toString('utf8');
  }

  // ---- request handling -------------------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const method = req.method ?? 'GET';
    const record: HfRequestRecord = { method, path: url.pathname, status: 0 };
    this.requests.push(record);
    const body = await readBody(req);
    try {
      const out = this.route(method, url, req, body);
      record.status = out.status;
      res.writeHead(out.status, { 'x-request-id': `req-${this.requests.length}`, ...out.headers });
      res.end(method === 'HEAD' ? undefined : out.body);
    } catch (e) {
      if (!(e instanceof HubError)) throw e;
      record.status = e.status;
      res.writeHead(e.status, {
        'content-type': 'application/json',
        'x-request-id': `req-${this.requests.length}`,
        ...(e.code ? { 'x-error-code': e.code } : {}),
      });
      res.end(method === 'HEAD' ? undefined : JSON.stringify({ error: e.message }));
    }
  }

  private route(method: string, url: URL, req: IncomingMessage, body: Buffer): Reply {
    const ds = '/([^/]+/[^/]+)';
    const routes: Array<[string[], RegExp, (m: string[]) => Reply]> = [
      [['POST'], /^\/api\/repos\/create$/, () => this.createRepo(req, body)],
      [['GET'], new RegExp(`^/api/datasets${ds}$`), (m) => this.repoInfo(req, m[1]!)],
      [
        ['POST'],
        new RegExp(`^/api/datasets${ds}/preupload/([^/]+)$`),
        (m) => this.preupload(req, m[1]!, decodeURIComponent(m[2]!), body),
      ],
      [
        ['POST'],
        new RegExp(`^/datasets${ds}\\.git/info/lfs/objects/batch$`),
        (m) => this.lfsBatch(req, m[1]!, body),
      ],
      [['PUT'], /^\/__lfs\/([0-9a-f]{64})$/, (m) => this.lfsUpload(m[1]!, body)],
      [
        ['POST'],
        new RegExp(`^/api/datasets${ds}/commit/([^/]+)$`),
        (m) => this.commit(req, m[1]!, decodeURIComponent(m[2]!), body),
      ],
      [
        ['GET'],
        new RegExp(`^/api/datasets${ds}/tree/([^/]+)(?:/(.*))?$`),
        (m) => this.tree(req, url, m[1]!, decodeURIComponent(m[2]!), decodePath(m[3] ?? '')),
      ],
      [
        ['GET', 'HEAD'],
        new RegExp(`^/datasets${ds}/resolve/([^/]+)/(.+)$`),
        (m) => this.resolve(req, m[1]!, decodeURIComponent(m[2]!), decodePath(m[3]!)),
      ],
    ];
    for (const [methods, pattern, handle] of routes) {
      const m = methods.includes(method) ? pattern.exec(url.pathname) : null;
      if (m) return handle([...m].map((x) => x ?? ''));
    }
    this.violations.push(`${method} ${url.pathname}: not an endpoint of this Hub contract`);
    throw new HubError(404, 'Not Found');
  }

  private createRepo(req: IncomingMessage, raw: Buffer) {
    const body = this.json(raw, validators.createRepo, 'POST /api/repos/create') as {
      name: string;
      organization?: string;
      visibility?: string;
    };
    const user = this.auth(req, true)!;
    const namespace = body.organization ?? user.name;
    if (!user.canWrite.includes(namespace))
      throw new HubError(403, `You don't have the rights to create a dataset under ${namespace}`);
    const id = `${namespace}/${body.name}`;
    if (this.repos.has(id)) throw new HubError(409, 'You already created this dataset repo');
    this.addRepo(id, { private: body.visibility !== 'public' });
    return jsonReply(200, { url: `${this.url}/datasets/${id}`, name: id, id: `hc-${id}` });
  }

  private repoInfo(req: IncomingMessage, id: string) {
    const repo = this.readable(req, id);
    return jsonReply(200, { id: `hc-${id}`, name: id, private: repo.private, likes: 0 });
  }

  private preupload(req: IncomingMessage, id: string, rev: string, raw: Buffer) {
    const body = this.json(raw, validators.preupload, `POST preupload ${id}`) as {
      files: Array<{ path: string; size: number; sample: string }>;
    };
    this.writable(req, id);
    this.checkRevision(rev);
    return jsonReply(200, {
      files: body.files.map((f) => ({
        path: f.path,
        uploadMode: needsLfs(f.size, Buffer.from(f.sample, 'base64')) ? 'lfs' : 'regular',
        shouldIgnore: false,
      })),
    });
  }

  private lfsBatch(req: IncomingMessage, id: string, raw: Buffer) {
    const where = `POST lfs batch ${id}`;
    for (const h of ['accept', 'content-type'] as const) {
      if (!String(req.headers[h] ?? '').includes('application/vnd.git-lfs+json')) {
        this.violations.push(`${where}: ${h} must be application/vnd.git-lfs+json`);
      }
    }
    const body = this.json(raw, validators.lfsBatch, where) as {
      operation: string;
      transfers?: string[];
      objects: Array<{ oid: string; size: number }>;
    };
    this.writable(req, id);
    if (body.operation !== 'upload') this.violations.push(`${where}: the store only uploads`);
    if (body.transfers && !body.transfers.includes('basic')) {
      this.violations.push(`${where}: the client must accept the basic transfer`);
    }
    return {
      status: 200,
      headers: { 'content-type': 'application/vnd.git-lfs+json' },
      body: JSON.stringify({
        transfer: 'basic',
        objects: body.objects.map((o) => ({
          oid: o.oid,
          size: o.size,
          authenticated: true,
          ...(this.lfsObjects.has(o.oid)
            ? {}
            : { actions: { upload: { href: `${this.url}/__lfs/${o.oid}`, expires_in: 3600 } } }),
        })),
      }),
    };
  }

  private lfsUpload(oid: string, body: Buffer) {
    const actual = sha256(body);
    if (actual !== oid) {
      this.violations.push(`PUT /__lfs/${oid}: content hashes to ${actual}`);
      throw new HubError(400, 'sha256 mismatch');
    }
    this.lfsObjects.set(oid, body);
    return { status: 200 };
  }

  private commit(req: IncomingMessage, id: string, rev: string, raw: Buffer) {
    const where = `POST commit ${id}`;
    if (!String(req.headers['content-type'] ?? '').startsWith('application/x-ndjson')) {
      this.violations.push(`${where}: content-type must be application/x-ndjson`);
    }
    const repo = this.writable(req, id);
    this.checkRevision(rev);
    const lines = raw
      .toString('utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l, i) => {
        try {
          return JSON.parse(l) as { key: string; value: Record<string, unknown> };
        } catch {
          this.violations.push(`${where}: line ${i + 1} is not JSON`);
          throw new HubError(400, `line ${i + 1} is not JSON`);
        }
      });
    const [header, ...ops] = lines;
    if (!header || !validators.commitHeader(header)) {
      this.violations.push(`${where}: first line must be the header: ${ajvText(validators.commitHeader)}`);
      throw new HubError(400, 'Invalid commit header');
    }
    const staged = new Map(repo.files);
    for (const op of ops) {
      if (!validators.commitOperation(op)) {
        this.violations.push(
          `${where}: bad operation ${JSON.stringify(op).slice(0, 200)}: ${ajvText(validators.commitOperation)}`,
        );
        throw new HubError(400, 'Invalid commit operation');
      }
      const path = String(op.value.path);
      if (op.key === 'deletedFile') {
        if (!staged.delete(path)) throw new HubError(404, `File not found: ${path}`, 'EntryNotFound');
      } else if (op.key === 'file') {
        const content = Buffer.from(String(op.value.content), 'base64');
        if (needsLfs(content.length, content.subarray(0, 512))) {
          this.violations.push(`${where}: ${path} must go through LFS (binary or over 10 MB)`);
          throw new HubError(400, `Your push was rejected because it contains binary files: ${path}`);
        }
        staged.set(path, { content, lfs: false, sha256: sha256(content) });
      } else {
        const oid = String(op.value.oid);
        const object = this.lfsObjects.get(oid);
        if (!object || object.length !== op.value.size) {
          this.violations.push(
            `${where}: LFS object ${oid} for ${path} was not uploaded (or has another size)`,
          );
          throw new HubError(422, `LFS object ${oid} not found`);
        }
        staged.set(path, { content: object, lfs: true, sha256: oid });
      }
    }
    repo.files = staged;
    const oid = createHash('sha1').update(`${repo.commits.length}:${header.value.summary}`).digest('hex');
    repo.commits.push({
      oid,
      title: String(header.value.summary),
      paths: ops.map((o) => String(o.value.path)),
    });
    return jsonReply(200, {
      success: true,
      commitOid: oid,
      commitUrl: `${this.url}/datasets/${id}/commit/${oid}`,
      hookOutput: '',
    });
  }

  private tree(req: IncomingMessage, url: URL, id: string, rev: string, path: string) {
    const repo = this.readable(req, id);
    this.checkRevision(rev);
    for (const key of url.searchParams.keys()) {
      if (!['recursive', 'expand', 'cursor'].includes(key))
        this.violations.push(`GET tree ${id}: unknown query ${key}`);
    }
    for (const key of ['recursive', 'expand']) {
      const v = url.searchParams.get(key);
      if (v !== null && v !== 'true' && v !== 'false')
        this.violations.push(`GET tree ${id}: ${key}=${v} is not a boolean`);
    }
    const recursive = url.searchParams.get('recursive') === 'true';
    const base = path === '' ? '' : `${path.replace(/\/$/, '')}/`;
    const filePaths = [...repo.files.keys()].filter((f) => f.startsWith(base));
    if (path !== '' && filePaths.length === 0) {
      throw new HubError(404, `${path} does not exist on "${rev}"`, 'EntryNotFound');
    }
    const entries = new Map<
      string,
      { type: 'file' | 'directory'; path: string; size: number; oid: string; lfs?: object }
    >();
    for (const f of filePaths) {
      const rest = f.slice(base.length).split('/');
      // Directories on the way down are entries too, as on the Hub.
      for (let depth = 1; depth < rest.length && (recursive || depth === 1); depth++) {
        const dir = base + rest.slice(0, depth).join('/');
        entries.set(dir, { type: 'directory', path: dir, size: 0, oid: sha1(dir) });
      }
      if (recursive || rest.length === 1) {
        const file = repo.files.get(f)!;
        entries.set(f, {
          type: 'file',
          path: f,
          size: file.content.length,
          oid: sha1(file.content),
          ...(file.lfs ? { lfs: { oid: file.sha256, size: file.content.length, pointerSize: 134 } } : {}),
        });
      }
    }
    const all = [...entries.values()].sort((a, b) => a.path.localeCompare(b.path));
    const start = Number(url.searchParams.get('cursor') ?? 0);
    const page = all.slice(start, start + this.treePageSize);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (start + this.treePageSize < all.length) {
      const next = new URL(url.href);
      next.searchParams.set('cursor', String(start + this.treePageSize));
      headers.link = `<${next.href}>; rel="next"`;
    }
    return { status: 200, headers, body: JSON.stringify(page) };
  }

  private resolve(req: IncomingMessage, id: string, rev: string, path: string): Reply {
    const repo = this.readable(req, id);
    this.checkRevision(rev);
    const file = repo.files.get(path);
    if (!file) throw new HubError(404, `Entry not found: ${path}`, 'EntryNotFound');
    const etag = `"${file.lfs ? file.sha256 : sha1(file.content)}"`;
    const total = file.content.length;
    const range = req.headers.range;
    if (range !== undefined) {
      const m = /^bytes=(\d+)-(\d*)$/.exec(range);
      if (!m) {
        this.violations.push(`GET resolve ${path}: malformed Range ${range}`);
        throw new HubError(416, 'Range Not Satisfiable');
      }
      const from = Number(m[1]);
      const to = Math.min(m[2] === '' ? total - 1 : Number(m[2]), total - 1);
      return {
        status: 206,
        headers: {
          'content-range': `bytes ${from}-${to}/${total}`,
          etag,
          'content-type': 'application/octet-stream',
        },
        body: file.content.subarray(from, to + 1),
      };
    }
    return { status: 200, headers: { etag, 'content-type': 'application/octet-stream' }, body: file.content };
  }

  // ---- helpers ----------------------------------------------------------------------------------

  private json(raw: Buffer, validate: ValidateFunction, where: string): unknown {
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      this.violations.push(`${where}: body is not JSON`);
      throw new HubError(400, 'Invalid JSON');
    }
    if (!validate(body)) {
      this.violations.push(`${where}: ${ajvText(validate)}`);
      throw new HubError(400, `Invalid request: ${ajvText(validate)}`);
    }
    return body;
  }

  /** The token's user; 401 for an unknown token, or for none when `required`. */
  private auth(req: IncomingMessage, required: boolean): HfUser | undefined {
    const header = req.headers.authorization;
    if (header === undefined) {
      if (required) throw new HubError(401, 'You must be authenticated to access this resource');
      return undefined;
    }
    const m = /^Bearer (hf_\S+)$/.exec(header);
    const user = m ? this.tokens.get(m[1]!) : undefined;
    if (!user) throw new HubError(401, 'Invalid credentials in Authorization header');
    return user;
  }

  /**
   * The repository, when the caller may read it. The Hub does not reveal whether a private repository
   * exists: a caller without a token gets 401 for a private or missing repository alike, a token
   * that cannot see it gets 404, both with `X-Error-Code: RepoNotFound` (huggingface_hub
   * utils/_http.py hf_raise_for_status: "401 is misleading as it is returned for: private and gated
   * repos if user is not authenticated; missing repos").
   */
  private readable(req: IncomingMessage, id: string): HfRepo {
    const user = this.auth(req, false);
    const repo = this.repos.get(id);
    const namespace = id.split('/')[0]!;
    if (!repo || (repo.private && !user?.canWrite.includes(namespace))) {
      throw new HubError(user ? 404 : 401, 'Repository not found', 'RepoNotFound');
    }
    return repo;
  }

  private writable(req: IncomingMessage, id: string): HfRepo {
    const user = this.auth(req, true)!;
    const repo = this.readable(req, id);
    if (!user.canWrite.includes(id.split('/')[0]!))
      throw new HubError(403, `You don't have write access to ${id}`);
    return repo;
  }

  private checkRevision(rev: string): void {
    if (rev !== 'main') throw new HubError(404, `Revision not found: ${rev}`, 'RevisionNotFound');
  }
}

function needsLfs(size: number, sample: Buffer): boolean {
  return size > LFS_SIZE_THRESHOLD || sample.includes(0);
}

function jsonReply(status: number, value: unknown) {
  return { status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(value) };
}

function ajvText(v: ValidateFunction): string {
  return (v.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
}

function decodePath(p: string): string {
  return p.split('/').map(decodeURIComponent).join('/');
}

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

function sha1(data: Buffer | string): string {
  return createHash('sha1').update(data).digest('hex');
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
