/**
 * The Ray Jobs REST API (the dashboard's /api/jobs and /api/packages) over HTTP. Endpoints and
 * behaviour follow ray/dashboard/modules/job/job_head.py (Ray 2.x): a duplicate submission_id is
 * refused with "already exists", an unknown job is a 404, packages are PUT as raw bytes.
 *
 * Transport is node:http(s), not fetch: Node's fetch always sends `Sec-Fetch-Mode: cors`, and the Ray
 * dashboard refuses POST/PUT from anything that looks like a browser ("method not allowed for
 * browser traffic", ray/dashboard/optional_utils.py), so submissions and uploads would fail.
 *
 * Security: the job server has no authentication unless the cluster runs RAY_AUTH_MODE=token, and
 * anyone who reaches it can run code on the cluster. Reach it only through an SSH/IAP tunnel or a
 * private network; see docs/compute.md.
 */

import { request as httpRequestRaw } from 'node:http';
import { request as httpsRequest } from 'node:https';

export type RayJobStatus = 'PENDING' | 'RUNNING' | 'STOPPED' | 'SUCCEEDED' | 'FAILED';

export const TERMINAL_STATUSES: readonly RayJobStatus[] = ['STOPPED', 'SUCCEEDED', 'FAILED'];

export interface RayJobDetails {
  submission_id: string;
  status: RayJobStatus;
  entrypoint: string;
  message?: string | null;
  error_type?: string | null;
  driver_exit_code?: number | null;
  start_time?: number | null;
  end_time?: number | null;
  metadata?: Record<string, string> | null;
}

export interface RaySubmitRequest {
  entrypoint: string;
  submission_id: string;
  runtime_env?: Record<string, unknown>;
  metadata?: Record<string, string>;
  entrypoint_resources?: Record<string, number>;
}

/** A request to the Ray head failed: it could not be reached (`status` undefined) or answered with an error. */
export class RayApiError extends Error {
  override name = 'RayApiError';
  constructor(
    message: string,
    readonly status?: number,
    readonly body?: string,
  ) {
    super(message);
  }

  /** The head could not be reached at all (refused, reset, DNS, timeout). */
  get unreachable(): boolean {
    return this.status === undefined;
  }
}

export interface RayClientOptions {
  /** Sent as `Authorization: Bearer …` (token-auth clusters). Never logged. */
  token?: string;
  /** Per-request limit. Default 30 s. */
  requestTimeoutMs?: number;
  /** Limit for a package upload. Default 10 min. */
  uploadTimeoutMs?: number;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const DEFAULT_UPLOAD_TIMEOUT_MS = 10 * 60_000;
/** Bodies quoted in error messages are cut to this many characters (Ray returns whole tracebacks). */
const MAX_ERROR_BODY = 600;

export class RayJobsClient {
  readonly address: string;

  constructor(
    address: string,
    private readonly opts: RayClientOptions = {},
  ) {
    this.address = address.replace(/\/+$/, '');
  }

  private async request(
    method: string,
    path: string,
    body?: { json?: unknown; bytes?: Buffer },
    timeoutMs = this.opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
  ): Promise<{ status: number; text: string }> {
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'hillclimb' };
    if (this.opts.token) headers.authorization = `Bearer ${this.opts.token}`;
    let payload: Buffer | undefined;
    if (body?.json !== undefined) {
      headers['content-type'] = 'application/json';
      payload = Buffer.from(JSON.stringify(body.json), 'utf8');
    } else if (body?.bytes !== undefined) {
      headers['content-type'] = 'application/octet-stream';
      payload = body.bytes;
    }
    if (payload) headers['content-length'] = String(payload.length);
    const url = new URL(`${this.address}${path}`);
    let res: { status: number; text: string };
    try {
      res = await httpRequest(url, method, headers, payload, timeoutMs);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      throw new RayApiError(
        `${method} ${this.address}${path}: cannot reach the Ray head (${err.code ?? err.message})`,
      );
    }
    if (res.status === 401 || res.status === 403) {
      throw new RayApiError(
        `${method} ${this.address}${path}: HTTP ${res.status}: the Ray head wants a valid token (set compute.ray.token_env)`,
        res.status,
        res.text,
      );
    }
    return res;
  }

  private fail(method: string, path: string, r: { status: number; text: string }): never {
    const body = r.text.length > MAX_ERROR_BODY ? `…${r.text.slice(-MAX_ERROR_BODY)}` : r.text;
    throw new RayApiError(
      `${method} ${this.address}${path}: HTTP ${r.status}: ${body.trim()}`,
      r.status,
      r.text,
    );
  }

  /** GET /api/version: the head's Ray version. */
  async version(): Promise<string> {
    const r = await this.request('GET', '/api/version');
    if (r.status !== 200) this.fail('GET', '/api/version', r);
    return (JSON.parse(r.text) as { ray_version?: string }).ray_version ?? 'unknown';
  }

  /** GET /api/jobs/<id>; undefined when no such job exists. */
  async getJob(id: string): Promise<RayJobDetails | undefined> {
    const path = `/api/jobs/${encodeURIComponent(id)}`;
    const r = await this.request('GET', path);
    if (r.status === 404) return undefined;
    if (r.status !== 200) this.fail('GET', path, r);
    return JSON.parse(r.text) as RayJobDetails;
  }

  /** POST /api/jobs/. 'exists' when a job with this submission id is already there (a retried submit). */
  async submit(req: RaySubmitRequest): Promise<'submitted' | 'exists'> {
    const r = await this.request('POST', '/api/jobs/', { json: req });
    if (r.status === 200) return 'submitted';
    if (/already exists/i.test(r.text)) return 'exists';
    this.fail('POST', '/api/jobs/', r);
  }

  /** POST /api/jobs/<id>/stop. True when the job was running; a missing job is not an error here. */
  async stop(id: string): Promise<boolean> {
    const path = `/api/jobs/${encodeURIComponent(id)}/stop`;
    const r = await this.request('POST', path);
    if (r.status === 404) return false;
    if (r.status !== 200) this.fail('POST', path, r);
    return Boolean((JSON.parse(r.text) as { stopped?: boolean }).stopped);
  }

  /** GET /api/jobs/<id>/logs: the job's whole log so far. */
  async logs(id: string): Promise<string> {
    const path = `/api/jobs/${encodeURIComponent(id)}/logs`;
    const r = await this.request('GET', path);
    if (r.status !== 200) this.fail('GET', path, r);
    return (JSON.parse(r.text) as { logs?: string }).logs ?? '';
  }

  /** GET /api/packages/<protocol>/<name>: whether the head holds a package (the check also pins it). */
  async packageExists(uri: string): Promise<boolean> {
    const path = packagePath(uri);
    const r = await this.request('GET', path);
    if (r.status === 200) return true;
    if (r.status === 404) return false;
    this.fail('GET', path, r);
  }

  /** PUT /api/packages/<protocol>/<name> with the zip's bytes. */
  async uploadPackage(uri: string, data: Buffer): Promise<void> {
    const path = packagePath(uri);
    const r = await this.request(
      'PUT',
      path,
      { bytes: data },
      this.opts.uploadTimeoutMs ?? DEFAULT_UPLOAD_TIMEOUT_MS,
    );
    if (r.status !== 200) this.fail('PUT', path, r);
  }
}

/** One HTTP request; rejects on connection errors and on the time limit (code ETIMEDOUT). */
function httpRequest(
  url: URL,
  method: string,
  headers: Record<string, string>,
  payload: Buffer | undefined,
  timeoutMs: number,
): Promise<{ status: number; text: string }> {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequestRaw;
  return new Promise((resolve, reject) => {
    const req = send(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => {
      req.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** `gcs://_ray_pkg_<hash>.zip` → `/api/packages/gcs/_ray_pkg_<hash>.zip`. */
export function packagePath(uri: string): string {
  const m = /^([a-z0-9]+):\/\/([^/]+\.zip)$/.exec(uri);
  if (!m) throw new Error(`not a package URI: ${uri}`);
  return `/api/packages/${m[1]}/${encodeURIComponent(m[2]!)}`;
}
