/**
 * The `branch` store: files on a git data branch (default `hillclimb-data`) of a remote (default
 * `origin`), so CI state such as the history survives from one workflow run to the next with nothing
 * but the repository itself.
 *
 * - Plumbing only, in a scratch bare repository per operation: fetch the branch tip (depth 1, blobs
 *   on demand where the server allows partial clones), build the new tree in a temporary index,
 *   `commit-tree`, push. The user's checkout, index and refs are never touched.
 * - A push rejected because another writer got there first (non-fast-forward) is retried: refetch the
 *   tip and re-apply the same files on top of it, up to `pushAttempts` times.
 * - The token (from `store.branch.token_env`) reaches git as an HTTP header through GIT_CONFIG_*
 *   environment variables, never the command line, and is redacted from every message.
 * - `url(key)` is the GitHub blob URL when the remote is on github.com, else `<remote>#<branch>:<key>`.
 * - The data branch stays small, because every `actions/checkout` with `fetch-depth: 0` downloads all of
 *   it and GitHub refuses any pushed file over 100 MiB (GH001): `putDir` leaves out profiler traces
 *   (`plugins/profile/…`, `*.xplane.pb`, `*.trace.json[.gz]`, `perfetto_trace.json[.gz]`) and any file
 *   over `maxFileBytes` (default 10 MiB), with a warning naming each one and why; the run's workflow
 *   artifact keeps them, and the `hf` store is the place for traces. `put` of a file over the limit
 *   fails instead (a single state file, such as the history, must not vanish quietly).
 */
import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ExecError, type ExecResult } from '../../exec/index.js';
import { basicAuth, HARNESS_IDENTITY, httpAuthEnv, identityEnv, redactUrl, runGit } from '../../git/index.js';
import { HillclimbError, type Logger } from '../../util/index.js';
import { StoreApiError } from '../errors.js';
import { assertKey, assertPrefix, joinKey } from '../keys.js';
import { TEMP_MARKER, walkFiles } from '../local-files.js';
import type { Store, StoredObject } from '../store.js';

export const DEFAULT_DATA_BRANCH = 'hillclimb-data';
const SCRATCH_REMOTE = 'store';
const GIT_TIMEOUT_MS = 5 * 60_000;
const DEFAULT_PUSH_ATTEMPTS = 6;
/**
 * The largest file the branch store pushes. GitHub warns above 50 MiB and refuses 100 MiB (GH001); a
 * data branch that every full clone downloads should hold far less. Evidence, history rows, logs and
 * patches fit; traces do not belong here at any size.
 */
export const BRANCH_STORE_MAX_FILE_BYTES = 10 * 1024 * 1024;
/** GitHub's refusals by branch protection (GH006) or a ruleset (GH013). */
const PROTECTED_BRANCH = /\bGH006\b|\bGH013\b|protected branch/i;
/** Profiler output in a bundle: jax.profiler's plugins/profile/<run>/ folder and its trace files. */
const TRACE_FILE =
  /(?:^|\/)plugins\/profile\/|\.xplane\.pb$|\.trace\.json(?:\.gz)?$|(?:^|\/)perfetto_trace\.json(?:\.gz)?$/;

export interface BranchStoreOptions {
  /** The repository whose remote is meant when `remote` names one (the project root). */
  repoDir: string;
  /** Data branch. Default hillclimb-data. */
  branch?: string;
  /** A remote name of `repoDir` (default origin), or a URL or path. */
  remote?: string;
  /** Token for https remotes; reads of public repositories work without one. */
  token?: string;
  /** The variable the token comes from, named in hints. Default GITHUB_TOKEN. */
  tokenEnv?: string;
  logger: Logger;
  /** Tries of a push that another writer keeps beating. Default 6. */
  pushAttempts?: number;
  /** Pause before retry n (ms); default a jittered 200·2^n. Tests shrink it. */
  retryDelayMs?: (attempt: number) => number;
  /** The git program. Default git. */
  gitBinary?: string;
  /** Files larger than this are not pushed (see the module comment). Default BRANCH_STORE_MAX_FILE_BYTES. */
  maxFileBytes?: number;
  /**
   * The repository's web page (e.g. https://github.com/owner/name), for blob URLs when `remote` is a
   * remote name; the factory fills it from the Actions environment or forge.github.
   */
  webUrl?: string;
}

interface Change {
  key: string;
  file: string;
}

export class BranchStore implements Store {
  readonly name = 'branch';
  readonly publiclyReadable = false;
  readonly branch: string;
  private readonly tokenEnv: string;
  private remoteUrl: Promise<string> | undefined;

  constructor(private readonly opts: BranchStoreOptions) {
    this.branch = opts.branch ?? DEFAULT_DATA_BRANCH;
    this.tokenEnv = opts.tokenEnv ?? 'GITHUB_TOKEN';
    if (!/^[A-Za-z0-9][A-Za-z0-9._/-]*$/.test(this.branch) || this.branch.includes('..')) {
      throw new HillclimbError(
        `store.branch.name is not a usable branch name: ${JSON.stringify(this.branch)}`,
      );
    }
  }

  async put(key: string, file: string): Promise<StoredObject> {
    assertKey(key);
    const bytes = isFile(file) ? statSync(file).size : 0;
    if (bytes > this.maxFileBytes) {
      throw new HillclimbError(
        `cannot store ${key} on the ${this.branch} branch: ${mib(bytes)} is over the branch store's ${mib(this.maxFileBytes)} per-file limit`,
        {
          hint: 'the data branch is downloaded by every full checkout; store large files with store.kind: hf',
        },
      );
    }
    const [stored] = await this.commit([{ key, file }], `hillclimb: store ${key}`);
    return stored!;
  }

  /** Every file below `dir`, except traces and files over the limit (each named in a warning). */
  async putDir(prefix: string, dir: string): Promise<StoredObject[]> {
    assertPrefix(prefix);
    const changes: Change[] = [];
    const skipped: string[] = [];
    for (const rel of walkFiles(dir)) {
      const change = { key: joinKey(prefix, rel), file: join(dir, rel) };
      const bytes = statSync(change.file).size;
      if (TRACE_FILE.test(rel)) skipped.push(`${change.key} (a profiler trace, ${mib(bytes)})`);
      else if (bytes > this.maxFileBytes) {
        skipped.push(`${change.key} (${mib(bytes)}, over the ${mib(this.maxFileBytes)} limit)`);
      } else changes.push(change);
    }
    if (skipped.length > 0) {
      this.opts.logger.warn(
        `store: not putting ${skipped.length} file(s) on the ${this.branch} branch, which every full checkout ` +
          `downloads: ${skipped.join(', ')}; the run's artifact keeps them (use store.kind: hf to store traces)`,
      );
    }
    if (changes.length === 0) return [];
    return this.commit(changes, `hillclimb: store ${changes.length} files under ${prefix || '/'}`);
  }

  private get maxFileBytes(): number {
    return this.opts.maxFileBytes ?? BRANCH_STORE_MAX_FILE_BYTES;
  }

  async get(key: string, dest: string): Promise<void> {
    assertKey(key);
    await this.withScratch(async (s) => {
      const tip = await s.fetchTip();
      if (!tip || !(await s.exists(tip, key))) {
        throw new HillclimbError(`no object ${key} on the ${this.branch} branch of ${s.shownUrl}`);
      }
      const worktree = join(s.dir, 'checkout');
      mkdirSync(worktree);
      await s.git(['--work-tree', worktree, 'checkout', tip, '--', key], { index: 'checkout' });
      mkdirSync(dirname(dest), { recursive: true });
      const tmp = join(dirname(dest), `${basename(dest)}${TEMP_MARKER}${process.pid}-${randomUUID()}`);
      try {
        copyFileSync(join(worktree, key), tmp);
        renameSync(tmp, dest);
      } finally {
        rmSync(tmp, { force: true });
      }
    });
  }

  async list(prefix: string): Promise<string[]> {
    assertPrefix(prefix);
    return this.withScratch(async (s) => {
      const tip = await s.fetchTip();
      if (!tip) return [];
      const r = await s.git(['ls-tree', '-r', '-z', '--name-only', tip]);
      return r.stdout
        .split('\0')
        .filter((k) => k !== '' && k.startsWith(prefix))
        .sort();
    });
  }

  url(key: string): string {
    const path = assertKey(key).split('/').map(encodeURIComponent).join('/');
    const remote = this.configuredUrlSync();
    const gh = githubRepository(remote);
    const web = gh ? `https://github.com/${gh}` : this.opts.webUrl?.replace(/\/+$/, '');
    if (web) return `${web}/blob/${this.branch.split('/').map(encodeURIComponent).join('/')}/${path}`;
    return `${remote}#${this.branch}:${key}`;
  }

  /** One commit with every change on top of the current tip; retried when another writer wins. */
  private async commit(changes: Change[], message: string): Promise<StoredObject[]> {
    for (const c of changes) {
      if (!isFile(c.file)) throw new HillclimbError(`cannot store ${c.file} as ${c.key}: not a file`);
    }
    const attempts = this.opts.pushAttempts ?? DEFAULT_PUSH_ATTEMPTS;
    await this.withScratch(async (s) => {
      const blobs = await s.hashFiles(changes.map((c) => c.file));
      for (let attempt = 1; ; attempt++) {
        const tip = await s.fetchTip();
        const commit = await s.commitOnTop(
          tip,
          changes.map((c, i) => ({ key: c.key, blob: blobs[i]! })),
          message,
        );
        if (commit === undefined) {
          this.opts.logger.debug(`store: ${this.branch} already holds these ${changes.length} file(s)`);
          return;
        }
        const pushed = await s.push(commit);
        if (pushed === 'ok') {
          this.opts.logger.info(`stored ${changes.length} file(s) on the ${this.branch} branch`);
          return;
        }
        if (attempt >= attempts) {
          throw new StoreApiError('git push', `the ${this.branch} branch kept moving (${attempts} tries)`, {
            hint: 'several writers race for the data branch; serialize them with a workflow concurrency group',
          });
        }
        this.opts.logger.info(`store: ${this.branch} moved meanwhile; re-applying on the new tip`);
        await sleep(
          this.opts.retryDelayMs?.(attempt) ?? Math.round(200 * 2 ** attempt * (0.5 + Math.random())),
        );
      }
    });
    return changes.map((c) => ({ key: c.key, url: this.url(c.key), bytes: statSync(c.file).size }));
  }

  private async withScratch<T>(fn: (s: Scratch) => Promise<T>): Promise<T> {
    const url = await this.resolveRemoteUrl();
    const dir = mkdtempSync(join(tmpdir(), 'hc-branch-store-'));
    try {
      const s = new Scratch(
        dir,
        url,
        this.branch,
        this.gitEnv(url),
        this.secrets(),
        this.opts,
        this.tokenEnv,
      );
      await s.init();
      return await fn(s);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /** The remote as a URL: a remote name of the repository resolved, a relative path made absolute. */
  private resolveRemoteUrl(): Promise<string> {
    this.remoteUrl ??= (async () => {
      const remote = this.opts.remote ?? 'origin';
      if (remote === '' || remote.startsWith('-')) {
        throw new HillclimbError(`store.branch.remote is not usable: ${JSON.stringify(remote)}`);
      }
      if (isUrl(remote)) return remote;
      const named = await runGit(['remote', 'get-url', '--', remote], {
        ...(this.opts.gitBinary ? { binary: this.opts.gitBinary } : {}),
        cwd: this.opts.repoDir,
        allowedExitCodes: 'any',
        timeoutMs: GIT_TIMEOUT_MS,
      });
      if (named.exitCode === 0 && named.stdout.trim() !== '')
        return toUrl(named.stdout.trim(), this.opts.repoDir);
      if (remote.includes('/') || remote.startsWith('.')) return toUrl(remote, this.opts.repoDir);
      throw new HillclimbError(`store.branch.remote "${remote}" is not a remote of ${this.opts.repoDir}`, {
        hint: 'name an existing remote (git remote -v) or give a URL',
      });
    })();
    this.remoteUrl.catch(() => {
      this.remoteUrl = undefined;
    });
    return this.remoteUrl;
  }

  /** url() is synchronous: use the configured remote as written when it is a URL or path. */
  private configuredUrlSync(): string {
    const remote = this.opts.remote ?? 'origin';
    if (isUrl(remote) || remote.includes('/') || remote.startsWith('.'))
      return toUrl(remote, this.opts.repoDir);
    return remote;
  }

  /** Commits on the data branch are the harness's; a token goes to git as an HTTP header (src/git/auth.ts). */
  private gitEnv(url: string): Record<string, string> {
    const token = this.opts.token;
    return { ...identityEnv(HARNESS_IDENTITY), ...(token ? httpAuthEnv(url, token).env : {}) };
  }

  private secrets(): string[] {
    const token = this.opts.token;
    return token ? [token, basicAuth(token)] : [];
  }
}

/** One operation's scratch bare repository, its temporary indexes and its git calls. */
class Scratch {
  readonly shownUrl: string;
  private readonly gitDir: string;

  constructor(
    readonly dir: string,
    private readonly url: string,
    private readonly branch: string,
    private readonly env: Record<string, string>,
    private readonly redact: string[],
    private readonly opts: BranchStoreOptions,
    private readonly tokenEnv: string,
  ) {
    this.gitDir = join(dir, 'repo.git');
    this.shownUrl = redactUrl(url);
  }

  async init(): Promise<void> {
    await runGit(['init', '-q', '--bare', this.gitDir], {
      ...(this.opts.gitBinary ? { binary: this.opts.gitBinary } : {}),
      env: this.env,
      timeoutMs: GIT_TIMEOUT_MS,
    });
    await this.git(['remote', 'add', SCRATCH_REMOTE, this.url]);
  }

  git(
    args: string[],
    o: { index?: string; input?: string; allowedExitCodes?: 'any' } = {},
  ): Promise<ExecResult> {
    return runGit(args, {
      ...(this.opts.gitBinary ? { binary: this.opts.gitBinary } : {}),
      env: {
        ...this.env,
        GIT_DIR: this.gitDir,
        ...(o.index ? { GIT_INDEX_FILE: join(this.dir, `${o.index}.index`) } : {}),
      },
      redact: this.redact,
      timeoutMs: GIT_TIMEOUT_MS,
      ...(o.input !== undefined ? { input: o.input } : {}),
      ...(o.allowedExitCodes ? { allowedExitCodes: o.allowedExitCodes } : {}),
    });
  }

  /** Fetch the branch tip; undefined when the remote has no such branch yet. */
  async fetchTip(): Promise<string | undefined> {
    const ref = `refs/remotes/${SCRATCH_REMOTE}/${this.branch}`;
    const r = await this.git(
      [
        'fetch',
        '--quiet',
        '--no-tags',
        '--depth=1',
        '--filter=blob:none',
        SCRATCH_REMOTE,
        `+refs/heads/${this.branch}:${ref}`,
      ],
      { allowedExitCodes: 'any' },
    );
    if (r.exitCode !== 0) {
      if (/couldn't find remote ref/i.test(r.stderr)) return undefined;
      throw this.failure('git fetch', r, 'read');
    }
    return (await this.git(['rev-parse', '--verify', ref])).stdout.trim();
  }

  async exists(tip: string, key: string): Promise<boolean> {
    const r = await this.git(['cat-file', '-e', `${tip}:${key}`], { allowedExitCodes: 'any' });
    return r.exitCode === 0;
  }

  /** Blob ids of local files, written into the scratch repository. */
  async hashFiles(files: string[]): Promise<string[]> {
    const r = await this.git(['hash-object', '-w', '--no-filters', '--stdin-paths'], {
      input: `${files.join('\n')}\n`,
    });
    const ids = r.stdout.trim().split('\n');
    if (ids.length !== files.length)
      throw new Error(`git hash-object returned ${ids.length} ids for ${files.length} files`);
    return ids;
  }

  /** A commit of `tip`'s tree with the entries replaced; undefined when nothing would change. */
  async commitOnTop(
    tip: string | undefined,
    entries: Array<{ key: string; blob: string }>,
    message: string,
  ): Promise<string | undefined> {
    const index = `commit-${randomUUID()}`;
    if (tip) await this.git(['read-tree', tip], { index });
    else await this.git(['read-tree', '--empty'], { index });
    const info = entries.map((e) => `100644 ${e.blob}\t${e.key}`).join('\n');
    await this.git(['update-index', '--add', '--index-info'], { index, input: `${info}\n` });
    const tree = (await this.git(['write-tree', '--missing-ok'], { index })).stdout.trim();
    if (tip) {
      const current = (await this.git(['rev-parse', `${tip}^{tree}`])).stdout.trim();
      if (current === tree) return undefined;
    }
    const args = ['commit-tree', tree, '-m', message, ...(tip ? ['-p', tip] : [])];
    return (await this.git(args)).stdout.trim();
  }

  /** Push without force: 'rejected' when the branch moved since the fetch. */
  async push(commit: string): Promise<'ok' | 'rejected'> {
    const r = await this.git(
      ['push', '--porcelain', '--no-verify', SCRATCH_REMOTE, `${commit}:refs/heads/${this.branch}`],
      { allowedExitCodes: 'any' },
    );
    if (r.exitCode === 0) return 'ok';
    const text = `${r.stdout}\n${r.stderr}`;
    if (
      /\[rejected\]|\[remote rejected\].*(?:failed to update ref|cannot lock ref)|fetch first|non-fast-forward|stale info/i.test(
        text,
      )
    ) {
      return 'rejected';
    }
    throw this.failure('git push', r, 'write');
  }

  private failure(operation: string, r: ExecResult, need: 'read' | 'write'): StoreApiError {
    const rejected = r.stdout.split('\n').filter((l) => l.startsWith('!'));
    const detail = [...rejected, ...r.stderr.trim().split('\n').slice(-3)]
      .map((l) => l.trim())
      .filter(Boolean)
      .join(' ');
    const denied = /\b40[13]\b|denied|not granted|authentication failed|could not read username/i.test(
      detail,
    );
    const tooLarge = `${r.stdout}\n${r.stderr}`.match(
      /File (.+?) is ([\d.]+ MB); this exceeds GitHub's file size limit/,
    );
    if (tooLarge || /\bGH001\b/.test(r.stderr)) {
      return new StoreApiError(
        operation,
        `${this.shownUrl} (${this.branch}) refused a file over GitHub's size limit (GH001)${tooLarge ? `: ${tooLarge[1]} is ${tooLarge[2]}` : ''}`,
        {
          hint: "GitHub refuses files over 100 MiB; keep the branch store's maxFileBytes below that, or store large files with store.kind: hf",
          cause: new ExecError(detail, operation, r),
        },
      );
    }
    return new StoreApiError(
      operation,
      `${this.shownUrl} (${this.branch}): ${detail || `exit code ${r.exitCode}`}`,
      {
        hint: PROTECTED_BRANCH.test(`${r.stdout}\n${r.stderr}`)
          ? `a branch protection rule or ruleset covers ${this.branch}: exclude it, or add the token's GitHub App ` +
            'to its bypass list (docs/setup.md, "Branch protection")'
          : denied
            ? `the token in $${this.tokenEnv} may not ${need} ${this.shownUrl}: it needs "contents: ${need}"`
            : `check that ${this.shownUrl} is reachable`,
        cause: new ExecError(detail, operation, r),
      },
    );
  }
}

function isUrl(remote: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(remote) || /^[^/@\s]+@[^:/\s]+:/.test(remote);
}

function toUrl(remote: string, repoDir: string): string {
  if (isUrl(remote)) return remote;
  return pathToFileURL(isAbsolute(remote) ? remote : resolve(repoDir, remote)).href;
}

/** owner/name when `url` is a github.com remote (https or ssh), else undefined. */
export function githubRepository(url: string): string | undefined {
  const m =
    /^https?:\/\/(?:[^/@]*@)?github\.com\/([^/]+)\/([^/]+?)(?:\.git)?\/?$/i.exec(url) ??
    /^(?:ssh:\/\/)?git@github\.com[:/]([^/]+)\/([^/]+?)(?:\.git)?\/?$/i.exec(url);
  return m ? `${m[1]}/${m[2]}` : undefined;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
