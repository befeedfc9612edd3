/**
 * The `hf` store: a Hugging Face Hub dataset repository, through @huggingface/hub.
 *
 * - The repository is created on the first write if it does not exist (private unless configured).
 * - `putDir` uploads a whole folder as one commit; `put` is a one-file commit.
 * - Large files go through the Hub's LFS "basic" transfer (`useXet: false`), the protocol our contract
 *   tests exercise; downloads likewise use the plain `resolve` URL (`xet: false`).
 * - The token comes from the variable named by `store.hf.token_env`; it is only ever handed to the
 *   library, never logged. Reads work without one on public repositories only: the Hub answers an
 *   anonymous read of a private (or missing) repository with 401, never 404, so `list` cannot tell
 *   "empty" from "not allowed" and fails instead of returning nothing, with an error that says no
 *   token was set (rather than blaming one).
 * - URLs: `<endpoint>/datasets/<repo>/resolve/main/<key>`.
 */

import { randomUUID } from 'node:crypto';
import { createWriteStream, mkdirSync, openAsBlob, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { createRepo, downloadFile, HubApiError, listFiles, repoExists, uploadFiles } from '@huggingface/hub';
import { HillclimbError, type Logger } from '../../util/index.js';
import { StoreApiError } from '../errors.js';
import { assertKey, assertPrefix, joinKey } from '../keys.js';
import { TEMP_MARKER, walkFiles } from '../local-files.js';
import type { Store, StoredObject } from '../store.js';

export const DEFAULT_HF_ENDPOINT = 'https://huggingface.co';
const REVISION = 'main';

export interface HfStoreOptions {
  /** Dataset repository, `namespace/name`. */
  repo: string;
  /** Hub root. Default https://huggingface.co. */
  endpoint?: string;
  /** The access token (`hf_…`); required for writes and private repositories. */
  token?: string;
  /** The variable the token comes from, named in errors. Default HF_TOKEN. */
  tokenEnv?: string;
  /** Visibility when the store creates the repository. Default true. */
  private?: boolean;
  logger: Logger;
}

export class HfStore implements Store {
  readonly name = 'hf';
  readonly publiclyReadable: boolean;
  private readonly endpoint: string;
  private readonly tokenEnv: string;
  private repoReady: Promise<void> | undefined;

  constructor(private readonly opts: HfStoreOptions) {
    if (!/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(opts.repo)) {
      throw new HillclimbError(`store.hf.repo must be namespace/name (got ${JSON.stringify(opts.repo)})`);
    }
    this.endpoint = (opts.endpoint ?? DEFAULT_HF_ENDPOINT).replace(/\/+$/, '');
    this.tokenEnv = opts.tokenEnv ?? 'HF_TOKEN';
    this.publiclyReadable = opts.private === false;
  }

  async put(key: string, file: string): Promise<StoredObject> {
    assertKey(key);
    const [stored] = await this.commitFiles([{ key, file }], `hillclimb: store ${key}`);
    return stored!;
  }

  async putDir(prefix: string, dir: string): Promise<StoredObject[]> {
    assertPrefix(prefix);
    const files = walkFiles(dir).map((rel) => ({ key: joinKey(prefix, rel), file: join(dir, rel) }));
    if (files.length === 0) return [];
    return this.commitFiles(files, `hillclimb: store ${files.length} files under ${prefix || '/'}`);
  }

  async get(key: string, dest: string): Promise<void> {
    assertKey(key);
    const blob = await this.hub('downloadFile', () =>
      downloadFile({ ...this.target(), path: key, revision: REVISION, xet: false }),
    );
    if (!blob) {
      throw new HillclimbError(`no object ${key} in datasets/${this.opts.repo}`, {
        hint: `list what is there with: hillclimb store list (or ${this.url(key)})`,
      });
    }
    mkdirSync(dirname(dest), { recursive: true });
    const tmp = join(dirname(dest), `${basename(dest)}${TEMP_MARKER}${process.pid}-${randomUUID()}`);
    try {
      await this.hub('downloadFile', () =>
        pipeline(Readable.fromWeb(blob.stream() as WebReadableStream<Uint8Array>), createWriteStream(tmp)),
      );
      renameSync(tmp, dest);
    } finally {
      rmSync(tmp, { force: true });
    }
  }

  async list(prefix: string): Promise<string[]> {
    assertPrefix(prefix);
    // List the deepest folder the prefix names, then filter, so "runs/r1/i00" finds runs/r1/i003/….
    const folder = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '';
    const keys: string[] = [];
    try {
      await this.hub('listFiles', async () => {
        for await (const entry of listFiles({
          ...this.target(),
          path: folder || undefined,
          recursive: true,
          revision: REVISION,
        })) {
          if (entry.type === 'file' && entry.path.startsWith(prefix)) keys.push(entry.path);
        }
      });
    } catch (e) {
      // A folder (or repository) that does not exist yet holds no keys. The token could see it were it
      // there: without a token the Hub says 401 instead, and that is no answer (see wrap).
      if (e instanceof StoreApiError && e.status === 404) return [];
      throw e;
    }
    return keys.sort();
  }

  url(key: string): string {
    const path = assertKey(key).split('/').map(encodeURIComponent).join('/');
    return `${this.endpoint}/datasets/${this.opts.repo}/resolve/${REVISION}/${path}`;
  }

  private async commitFiles(
    files: Array<{ key: string; file: string }>,
    title: string,
  ): Promise<StoredObject[]> {
    this.requireToken('write');
    await this.ensureRepo();
    const blobs = await Promise.all(
      files.map(async ({ key, file }) => ({ path: key, content: await openAsBlob(file) })),
    );
    await this.hub('commit', () =>
      uploadFiles({ ...this.target(), files: blobs, commitTitle: title, branch: REVISION, useXet: false }),
    );
    this.opts.logger.info(`stored ${files.length} file(s) in datasets/${this.opts.repo}`);
    return files.map(({ key, file }) => ({ key, url: this.url(key), bytes: statSync(file).size }));
  }

  /** Create the dataset repository once per store if it is missing. */
  private ensureRepo(): Promise<void> {
    this.repoReady ??= (async () => {
      const exists = await this.hub('repoExists', () => repoExists(this.target()));
      if (exists) return;
      const visibility = this.opts.private === false ? 'public' : 'private';
      try {
        await this.hub('createRepo', () =>
          createRepo({ ...this.target(), accessToken: this.requireToken('write'), visibility }),
        );
        this.opts.logger.info(`created ${visibility} dataset repository ${this.opts.repo}`);
      } catch (e) {
        // Created meanwhile by a concurrent run: what we wanted.
        if (!(e instanceof StoreApiError && e.status === 409)) throw e;
      }
    })();
    this.repoReady.catch(() => {
      this.repoReady = undefined;
    });
    return this.repoReady;
  }

  private target() {
    return {
      repo: { type: 'dataset' as const, name: this.opts.repo },
      hubUrl: this.endpoint,
      ...(this.opts.token ? { accessToken: this.opts.token } : {}),
    };
  }

  private requireToken(why: 'write'): string {
    if (!this.opts.token) {
      throw new HillclimbError(`$${this.tokenEnv} is not set; the hf store needs a token to ${why}`, {
        hint: `create a token with write access at ${this.endpoint}/settings/tokens and export it as ${this.tokenEnv}`,
      });
    }
    return this.opts.token;
  }

  /** Run one Hub call; failures become a StoreApiError that names the token variable where it matters. */
  private async hub<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      throw this.wrap(e, operation);
    }
  }

  private wrap(e: unknown, operation: string): unknown {
    if (e instanceof HillclimbError) return e;
    const repo = `datasets/${this.opts.repo}`;
    if (e instanceof TypeError && /access token must start with/.test(e.message)) {
      return new StoreApiError(operation, `the value of $${this.tokenEnv} is not a Hugging Face token`, {
        hint: `Hugging Face tokens start with hf_; create one at ${this.endpoint}/settings/tokens`,
        cause: e,
      });
    }
    if (!(e instanceof HubApiError)) {
      return new StoreApiError(operation, `${(e as Error).message ?? String(e)}`, {
        hint: `could not reach ${this.endpoint}; check the network and store.hf.endpoint`,
        cause: e,
      });
    }
    const status = e.statusCode;
    if (status === 401 && !this.opts.token) {
      return new StoreApiError(
        operation,
        `401: ${repo} refused a read without a token: it is private or does not exist, and $${this.tokenEnv} is not set`,
        {
          status,
          hint:
            `give this job $${this.tokenEnv} (read access is enough) or make ${repo} public; until then nothing ` +
            'stored there (history, profiles) can be read, so every run starts from main',
          cause: e,
        },
      );
    }
    const hints: Record<number, string> = {
      401: `the token in $${this.tokenEnv} was rejected: create a token with write access at ${this.endpoint}/settings/tokens and export it as ${this.tokenEnv}`,
      403: `the token in $${this.tokenEnv} may not write to ${repo}: give it write access to the ${this.opts.repo.split('/')[0]} namespace`,
      404: `${repo} was not found, or the token in $${this.tokenEnv} cannot see it`,
    };
    const who = status === 401 || status === 403 ? ` (token from $${this.tokenEnv})` : '';
    return new StoreApiError(operation, `${status} ${firstLine(e.message)}${who}`, {
      status,
      hint: hints[status],
      cause: e,
    });
  }
}

function firstLine(s: string): string {
  return s.split('\n')[0] ?? s;
}
