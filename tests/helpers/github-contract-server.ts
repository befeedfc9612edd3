/**
 * An in-process GitHub REST (+ two GraphQL queries) server for forge tests. It keeps state (users
 * by token, repositories backed by real bare git repos, PRs, issue comments, labels) and validates
 * every request against GitHub's published OpenAPI description (the vendored subset in
 * tests/fixtures/github-openapi/, see scripts/vendor-github-openapi.mjs):
 *
 * - the route must be an operation of the subset (OpenAPI path template + method);
 * - path and query parameters must be declared and match their schemas (ajv, with type coercion
 *   because they arrive as strings);
 * - JSON bodies must match the request-body schema (ajv, no coercion); stricter than the schema,
 *   undeclared top-level body properties are flagged too, because GitHub ignores them silently and
 *   that hides typos.
 *
 * A request that breaks the contract is answered the way GitHub would (404 unknown route, 422
 * "Validation Failed") AND recorded in `violations`, which each test asserts empty in afterEach.
 * GraphQL is not in the REST description: the two query documents the forge sends (viewer login,
 * IssueComment.isMinimized by node id) are recognised and their variables checked; any other
 * document is a violation.
 *
 * While a server runs, `fetch` to anything but loopback fails and is recorded as a violation.
 * Faults (5xx, secondary and primary rate limits, the 422 "was submitted too quickly") and gates
 * (hold requests until N arrive, to force races) are injected per test. People's actions on the web
 * UI have helpers: close a PR, merge it with the head branch auto-deleted (GitHub then retargets the
 * open PRs based on that branch to the merged PR's base), mark a PR ready.
 *
 * What GitHub does that the tests rely on, modelled here: `pulls.create` / `pulls.update` with a base
 * branch that does not exist answer 422 `{"resource":"PullRequest","field":"base","code":"invalid"}`;
 * `pulls.list` filters by `state` (`open` by default), so a closed PR is only found with `state=all`;
 * a new PR may be opened for a head whose earlier PR is closed (only an open one blocks it).
 *
 * For the workflows' own `gh` calls (tests/workflows/act/): a PR gets `refs/pull/<n>/head` and GitHub's
 * test merge commit `refs/pull/<n>/merge` (parents: base, head) in the bare repository, as GitHub makes
 * them, refreshed by `syncPullRefs` after a push; collaborators' roles answer the permission check
 * (`maintain` reads as `write`, `triage` as `read`; a login that is no collaborator is a 404); a
 * workflow dispatch is recorded, refused like GitHub when the ref or the workflow file does not exist
 * there or an input is one the file does not declare.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { type LoopbackServer, serveOnLoopback } from './loopback-server.js';
import { FIXTURES } from './paths.js';

export const GITHUB_OPENAPI_SUBSET = join(FIXTURES, 'github-openapi', 'api.github.com.subset.json');
/** GitHub's limit for bodies of PRs and comments. */
const BODY_LIMIT = 65_536;
const TITLE_LIMIT = 256;
const DOCS = 'https://docs.github.com/rest';

type Permission = 'none' | 'read' | 'write';

export interface ContractUser {
  login: string;
  /** Installation tokens (GitHub Apps, GITHUB_TOKEN) may not call GET /user. */
  kind: 'user' | 'installation';
  permissions?: {
    pull_requests?: Permission;
    issues?: Permission;
    contents?: Permission;
    actions?: Permission;
  };
}

export interface RequestRecord {
  method: string;
  path: string;
  query: Record<string, string>;
  operationId: string | undefined;
  status: number;
  at: number;
}

export interface Fault {
  method?: string;
  /** Matches the path (without query). */
  path?: RegExp;
  /** How many matching requests get this answer. */
  count: number;
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

interface Label {
  id: number;
  name: string;
  color: string;
  description: string | null;
}

interface Pull {
  number: number;
  head: string;
  base: string;
  title: string;
  body: string | null;
  draft: boolean;
  state: 'open' | 'closed';
  user: UserRecord;
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
  mergedAt: string | null;
}

export interface CommentRecord {
  /** owner/name, lower-cased. */
  repo: string;
  id: number;
  nodeId: string;
  issue: number;
  body: string;
  user: UserRecord;
  minimized: boolean;
  createdAt: string;
  updatedAt: string;
}

interface UserRecord {
  login: string;
  id: number;
  type: 'User' | 'Bot';
}

interface Repo {
  owner: string;
  name: string;
  bareDir: string;
  /** The repository setting "Allow GitHub Actions to create and approve pull requests". */
  actionsCanCreatePullRequests: boolean;
  /** False for private repositories on plans without draft PRs. */
  draftsSupported: boolean;
  pulls: Map<number, Pull>;
  labels: Map<string, Label>;
  issueLabels: Map<number, string[]>;
  /** Collaborators' roles, by login (lower-cased). */
  collaborators: Map<string, CollaboratorRole>;
  dispatches: WorkflowDispatch[];
}

export type CollaboratorRole = 'admin' | 'maintain' | 'write' | 'triage' | 'read';

/** A `POST …/actions/workflows/{workflow_id}/dispatches` GitHub accepted. */
export interface WorkflowDispatch {
  workflow: string;
  ref: string;
  inputs: Record<string, unknown>;
  by: string;
}

interface ParamSpec {
  in: 'path' | 'query';
  required: boolean;
  validate: ValidateFunction;
}

interface Operation {
  method: string;
  template: string;
  regex: RegExp;
  pathParams: string[];
  operationId: string;
  params: Map<string, ParamSpec>;
  body?: { required: boolean; validate: ValidateFunction; properties: Set<string> | undefined };
}

interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  op: Operation;
  params: Record<string, string>;
  query: Record<string, string>;
  body: unknown;
  user: UserRecord & ContractUser;
  repo: Repo | undefined;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly payload: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
  ) {
    super(String(payload.message));
  }
}

export class GitHubContractServer {
  readonly violations: string[] = [];
  readonly requests: RequestRecord[] = [];
  url = '';
  private listener: LoopbackServer | undefined;
  private readonly operations: Operation[];
  private readonly tokens = new Map<string, UserRecord & ContractUser>();
  private readonly repos = new Map<string, Repo>();
  private readonly comments = new Map<number, CommentRecord>();
  private readonly faults: Fault[] = [];
  private gates: Array<{ method?: string; path: RegExp; count: number; waiting: Array<() => void> }> = [];
  private nextId = 1000;
  private nextNumber = 1;
  private rateRemaining = 5000;

  private constructor() {
    this.operations = loadOperations();
  }

  static async start(): Promise<GitHubContractServer> {
    const s = new GitHubContractServer();
    s.listener = await serveOnLoopback((req, res) => s.handle(req, res), s.violations);
    s.url = s.listener.url;
    return s;
  }

  async close(): Promise<void> {
    await this.listener?.close();
  }

  // ---- state set-up -----------------------------------------------------------------------------

  addToken(token: string, user: ContractUser): UserRecord {
    const record = {
      ...user,
      id: this.nextId++,
      type: user.login.endsWith('[bot]') ? ('Bot' as const) : ('User' as const),
    };
    this.tokens.set(token, record);
    return record;
  }

  addRepo(
    fullName: string,
    bareDir: string,
    opts: { actionsCanCreatePullRequests?: boolean; draftsSupported?: boolean } = {},
  ): void {
    const [owner, name] = fullName.split('/') as [string, string];
    this.repos.set(fullName.toLowerCase(), {
      owner,
      name,
      bareDir,
      actionsCanCreatePullRequests: opts.actionsCanCreatePullRequests ?? true,
      draftsSupported: opts.draftsSupported ?? true,
      pulls: new Map(),
      labels: new Map(),
      issueLabels: new Map(),
      collaborators: new Map(),
      dispatches: [],
    });
  }

  /** Add comments directly (not through the API), e.g. to fill pages. */
  seedComment(fullName: string, issue: number, login: string, body: string): CommentRecord {
    const user = this.userByLogin(login);
    const id = this.nextId++;
    const now = new Date().toISOString();
    const c = {
      id,
      nodeId: nodeId('IC', id),
      issue,
      body,
      user,
      minimized: false,
      createdAt: now,
      updatedAt: now,
      repo: fullName.toLowerCase(),
    };
    this.comments.set(id, c);
    return c;
  }

  /** Hide a comment, as "Hide → Outdated" does on GitHub. */
  minimize(commentId: number): void {
    const c = this.comments.get(commentId);
    if (!c) throw new Error(`no comment ${commentId}`);
    c.minimized = true;
  }

  /** Mark a PR ready for review (a person's action). */
  /** A collaborator of the repository with this role (what the permission check reads). */
  setCollaborator(fullName: string, login: string, role: CollaboratorRole): void {
    this.mustRepo(fullName).collaborators.set(login.toLowerCase(), role);
  }

  /** The workflow dispatches GitHub accepted for the repository, in order. */
  dispatchesOf(fullName: string): WorkflowDispatch[] {
    return [...this.mustRepo(fullName).dispatches];
  }

  /**
   * `refs/pull/<n>/head` and the test merge commit `refs/pull/<n>/merge` as GitHub keeps them: the head
   * branch's commit, and a merge of it into the base branch (first parent the base). A conflict leaves
   * no merge ref. GitHub refreshes both after a push to either branch; tests call this after pushing.
   */
  syncPullRefs(fullName: string, number: number): void {
    const repo = this.mustRepo(fullName);
    const pull = repo.pulls.get(number);
    if (!pull) throw new Error(`no PR ${number}`);
    const git = (...args: string[]) =>
      execFileSync('git', ['--git-dir', repo.bareDir, ...args], {
        encoding: 'utf8',
        env: {
          ...process.env,
          GIT_AUTHOR_NAME: 'GitHub',
          GIT_AUTHOR_EMAIL: 'noreply@github.com',
          GIT_COMMITTER_NAME: 'GitHub',
          GIT_COMMITTER_EMAIL: 'noreply@github.com',
        },
      }).trim();
    const head = refSha(repo.bareDir, pull.head);
    const base = refSha(repo.bareDir, pull.base);
    if (!head || !base) throw new Error(`PR ${number}: head ${pull.head} or base ${pull.base} is gone`);
    git('update-ref', `refs/pull/${number}/head`, head);
    let tree: string;
    try {
      tree = git('merge-tree', '--write-tree', base, head).split('\n')[0]!;
    } catch {
      git('update-ref', '-d', `refs/pull/${number}/merge`);
      return;
    }
    const merge = git('commit-tree', tree, '-p', base, '-p', head, '-m', `Merge ${head} into ${base}`);
    git('update-ref', `refs/pull/${number}/merge`, merge);
  }

  markReady(fullName: string, number: number): void {
    const pr = this.mustRepo(fullName).pulls.get(number);
    if (!pr) throw new Error(`no PR ${number}`);
    pr.draft = false;
  }

  /** Close a PR without merging it (a person's "Close pull request"). */
  closeByPerson(fullName: string, number: number): void {
    const pr = this.mustRepo(fullName).pulls.get(number);
    if (!pr) throw new Error(`no PR ${number}`);
    pr.state = 'closed';
    pr.closedAt = new Date().toISOString();
  }

  /**
   * Merge a PR into its base (a fast-forward of the base is enough here) and delete its head branch,
   * as "Automatically delete head branches" does. Like GitHub, open PRs whose base was that branch
   * are retargeted to the merged PR's base.
   */
  mergeAndDeleteHead(fullName: string, number: number): void {
    const repo = this.mustRepo(fullName);
    const pr = repo.pulls.get(number);
    if (!pr) throw new Error(`no PR ${number}`);
    const head = refSha(repo.bareDir, pr.head);
    if (!head) throw new Error(`PR ${number} has no head branch`);
    execFileSync('git', ['--git-dir', repo.bareDir, 'update-ref', `refs/heads/${pr.base}`, head]);
    execFileSync('git', ['--git-dir', repo.bareDir, 'update-ref', '-d', `refs/heads/${pr.head}`]);
    const now = new Date().toISOString();
    Object.assign(pr, { state: 'closed', closedAt: now, mergedAt: now, updatedAt: now });
    for (const other of repo.pulls.values()) {
      if (other.state === 'open' && other.base === pr.head) other.base = pr.base;
    }
  }

  /** Delete a branch (as the branches page, or a person's `git push --delete`, does). */
  deleteBranch(fullName: string, branch: string): void {
    execFileSync('git', [
      '--git-dir',
      this.mustRepo(fullName).bareDir,
      'update-ref',
      '-d',
      `refs/heads/${branch}`,
    ]);
  }

  addLabelToIssue(fullName: string, number: number, name: string): void {
    const repo = this.mustRepo(fullName);
    this.labelFor(repo, name);
    const names = repo.issueLabels.get(number) ?? [];
    repo.issueLabels.set(number, [...names, name]);
  }

  // ---- inspection -------------------------------------------------------------------------------

  pullsOf(fullName: string): Array<Pull & { labels: string[] }> {
    const repo = this.mustRepo(fullName);
    return [...repo.pulls.values()].map((p) => ({ ...p, labels: repo.issueLabels.get(p.number) ?? [] }));
  }

  commentsOn(fullName: string, issue: number): CommentRecord[] {
    return [...this.comments.values()]
      .filter((c) => c.repo === fullName.toLowerCase() && c.issue === issue)
      .sort((a, b) => a.id - b.id);
  }

  labelsOf(fullName: string): Label[] {
    return [...this.mustRepo(fullName).labels.values()];
  }

  countRequests(operationId: string): number {
    return this.requests.filter((r) => r.operationId === operationId).length;
  }

  // ---- faults and gates ---------------------------------------------------------------------------

  inject(fault: Fault): void {
    this.faults.push({ ...fault });
  }

  injectServerErrors(count: number, status = 502, path?: RegExp): void {
    this.inject({ count, status, path, body: { message: 'Server Error' } });
  }

  injectSecondaryRateLimit(retryAfterSeconds: number, count = 1, path?: RegExp): void {
    this.inject({
      count,
      status: 403,
      path,
      headers: { 'retry-after': String(retryAfterSeconds) },
      body: {
        message:
          'You have exceeded a secondary rate limit. Please wait a few minutes before you try again. ' +
          'If you reach out to GitHub Support for help, please include the request ID.',
        documentation_url: `${DOCS}/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits`,
      },
    });
  }

  /**
   * GitHub's other secondary limit on creating content: a 422 validation error with no retry-after
   * (seen on PRs, issues and comments created in quick succession).
   */
  injectSubmittedTooQuickly(count = 1, path?: RegExp, resource = 'IssueComment'): void {
    this.inject({
      count,
      method: 'post',
      status: 422,
      path,
      body: {
        message: 'Validation Failed',
        errors: [{ resource, code: 'custom', field: 'body', message: 'was submitted too quickly' }],
        documentation_url: DOCS,
        status: '422',
      },
    });
  }

  injectPrimaryRateLimit(resetInSeconds: number, count = 1, path?: RegExp): void {
    this.inject({
      count,
      status: 403,
      path,
      headers: {
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + resetInSeconds),
      },
      body: {
        message: 'API rate limit exceeded for installation ID 1.',
        documentation_url: `${DOCS}/overview/rate-limits-for-the-rest-api`,
      },
    });
  }

  /** Hold matching requests until `count` of them wait, then release them together. */
  holdUntil(count: number, method: string, path: RegExp): void {
    this.gates.push({ method, path, count, waiting: [] });
  }

  // ---- request handling -------------------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const raw = await readBody(req);
    const method = (req.method ?? 'GET').toLowerCase();
    const record: RequestRecord = {
      method: method.toUpperCase(),
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      operationId: undefined,
      status: 0,
      at: Date.now(),
    };
    this.requests.push(record);
    const send = (status: number, payload: unknown, headers: Record<string, string> = {}): void => {
      record.status = status;
      const text = payload === undefined ? '' : JSON.stringify(payload);
      res.writeHead(status, {
        'content-type': 'application/json; charset=utf-8',
        'x-github-media-type': 'github.v3; format=json',
        ...this.rateHeaders(),
        ...headers,
      });
      res.end(text);
    };

    try {
      if (method === 'post' && url.pathname === '/graphql') {
        record.operationId = 'graphql';
        await this.passGates(method, url.pathname);
        const fault = this.takeFault(method, url.pathname);
        if (fault) return send(fault.status, fault.body, fault.headers);
        const user = this.authenticate(req);
        return send(200, this.graphql(parseJson(raw), user));
      }
      const match = this.route(method, url.pathname);
      if (!match) {
        this.violations.push(
          `${method.toUpperCase()} ${url.pathname}: no such operation in the GitHub contract`,
        );
        return send(404, { message: 'Not Found', documentation_url: DOCS, status: '404' });
      }
      const { op, params } = match;
      record.operationId = op.operationId;
      const query = Object.fromEntries(url.searchParams);
      const body = this.validate(op, params, query, req, raw);
      await this.passGates(method, url.pathname);
      const fault = this.takeFault(method, url.pathname);
      if (fault) return send(fault.status, fault.body, fault.headers);
      const user = this.authenticate(req);
      const repo = params.owner ? this.repos.get(`${params.owner}/${params.repo}`.toLowerCase()) : undefined;
      if (params.owner && !repo) throw notFound();
      const ctx: Ctx = { req, res, url, op, params, query, body, user, repo };
      const out = this.dispatch(ctx);
      return send(out.status, out.body, out.headers);
    } catch (e) {
      if (e instanceof HttpError) return send(e.status, e.payload, e.headers);
      throw e;
    }
  }

  private route(method: string, path: string): { op: Operation; params: Record<string, string> } | undefined {
    for (const op of this.operations) {
      if (op.method !== method) continue;
      const m = op.regex.exec(path);
      if (!m) continue;
      const params: Record<string, string> = {};
      op.pathParams.forEach((name, i) => {
        params[name] = decodeURIComponent(m[i + 1]!);
      });
      return { op, params };
    }
    return undefined;
  }

  /** Check parameters and body against the contract; a violation is recorded and answered with 422. */
  private validate(
    op: Operation,
    params: Record<string, string>,
    query: Record<string, string>,
    req: IncomingMessage,
    raw: string,
  ): unknown {
    const where = `${op.method.toUpperCase()} ${op.template} (${op.operationId})`;
    const problems: string[] = [];
    for (const [name, value] of [...Object.entries(params), ...Object.entries(query)]) {
      const spec = op.params.get(name);
      if (!spec) {
        problems.push(`undeclared parameter "${name}"`);
        continue;
      }
      const holder = { v: value as unknown };
      if (!spec.validate(holder)) problems.push(`parameter ${name}=${value}: ${ajvText(spec.validate)}`);
    }
    for (const [name, spec] of op.params) {
      if (spec.required && params[name] === undefined && query[name] === undefined) {
        problems.push(`missing required parameter "${name}"`);
      }
    }
    let body: unknown;
    if (raw !== '') {
      if (!op.body) problems.push('a body was sent but the operation takes none');
      else if (!String(req.headers['content-type'] ?? '').startsWith('application/json')) {
        problems.push(`body content-type ${req.headers['content-type']} is not application/json`);
      } else {
        try {
          body = JSON.parse(raw);
        } catch {
          problems.push('body is not valid JSON');
        }
      }
    } else if (op.body?.required) {
      problems.push('missing required body');
    }
    if (op.body && body !== undefined) {
      if (!op.body.validate(body)) problems.push(`body: ${ajvText(op.body.validate)}`);
      const declared = op.body.properties;
      if (declared && typeof body === 'object' && body !== null && !Array.isArray(body)) {
        for (const k of Object.keys(body))
          if (!declared.has(k)) problems.push(`undeclared body property "${k}"`);
      }
    }
    if (problems.length > 0) {
      for (const p of problems) this.violations.push(`${where}: ${p}`);
      throw new HttpError(422, {
        message: 'Validation Failed',
        errors: problems.map((p) => ({ resource: 'Request', code: 'invalid', message: p })),
        documentation_url: DOCS,
        status: '422',
      });
    }
    return body;
  }

  private authenticate(req: IncomingMessage): UserRecord & ContractUser {
    const header = String(req.headers.authorization ?? '');
    const m = /^(?:token|bearer)\s+(.+)$/i.exec(header);
    const user = m ? this.tokens.get(m[1]!) : undefined;
    if (!user)
      throw new HttpError(401, { message: 'Bad credentials', documentation_url: DOCS, status: '401' });
    return user;
  }

  private async passGates(method: string, path: string): Promise<void> {
    const gate = this.gates.find(
      (g) => (!g.method || g.method.toLowerCase() === method) && g.path.test(path),
    );
    if (!gate) return;
    await new Promise<void>((resolve) => {
      gate.waiting.push(resolve);
      if (gate.waiting.length >= gate.count) {
        this.gates = this.gates.filter((g) => g !== gate);
        for (const release of gate.waiting) release();
      }
    });
  }

  private takeFault(method: string, path: string): Fault | undefined {
    const fault = this.faults.find(
      (f) =>
        f.count > 0 && (!f.method || f.method.toLowerCase() === method) && (!f.path || f.path.test(path)),
    );
    if (fault) fault.count -= 1;
    return fault;
  }

  private rateHeaders(): Record<string, string> {
    this.rateRemaining = Math.max(0, this.rateRemaining - 1);
    return {
      'x-ratelimit-limit': '5000',
      'x-ratelimit-remaining': String(this.rateRemaining),
      'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + 3600),
      'x-ratelimit-used': String(5000 - this.rateRemaining),
      'x-ratelimit-resource': 'core',
    };
  }

  // ---- operations -------------------------------------------------------------------------------

  private dispatch(ctx: Ctx): { status: number; body?: unknown; headers?: Record<string, string> } {
    switch (ctx.op.operationId) {
      case 'users/get-authenticated':
        if (ctx.user.kind === 'installation') throw forbidden('Resource not accessible by integration');
        return { status: 200, body: userJson(ctx.user) };
      case 'pulls/list':
        return this.listPulls(ctx);
      case 'pulls/create':
        return { status: 201, body: this.createPull(ctx) };
      case 'pulls/update':
        return { status: 200, body: this.updatePull(ctx) };
      case 'issues/list-comments':
        return this.listComments(ctx);
      case 'issues/create-comment':
        return { status: 201, body: this.createComment(ctx) };
      case 'issues/update-comment':
        return { status: 200, body: this.updateComment(ctx) };
      case 'issues/delete-comment':
        this.requireWrite(ctx, 'issues', 'pull_requests');
        if (!this.comments.delete(this.mustComment(ctx).id)) throw notFound();
        return { status: 204 };
      case 'issues/add-labels':
        return { status: 200, body: this.addLabels(ctx) };
      case 'issues/remove-label':
        return { status: 200, body: this.removeLabel(ctx) };
      case 'issues/create-label':
        return { status: 201, body: this.createLabel(ctx) };
      case 'pulls/get':
        return { status: 200, body: this.getPull(ctx) };
      case 'repos/get-collaborator-permission-level':
        return { status: 200, body: this.collaboratorPermission(ctx) };
      case 'actions/create-workflow-dispatch':
        return this.createWorkflowDispatch(ctx);
      default:
        this.violations.push(
          `${ctx.op.operationId} is in the contract subset but not implemented by the server`,
        );
        throw new HttpError(501, { message: 'Not Implemented' });
    }
  }

  private listPulls(ctx: Ctx) {
    const repo = ctx.repo!;
    this.requireRead(ctx, 'pull_requests');
    const state = ctx.query.state ?? 'open';
    let pulls = [...repo.pulls.values()].filter((p) => state === 'all' || p.state === state);
    if (ctx.query.head) {
      const [owner, branch] = ctx.query.head.includes(':')
        ? ctx.query.head.split(':', 2)
        : [repo.owner, ctx.query.head];
      pulls = owner?.toLowerCase() === repo.owner.toLowerCase() ? pulls.filter((p) => p.head === branch) : [];
    }
    if (ctx.query.base) pulls = pulls.filter((p) => p.base === ctx.query.base);
    pulls.sort((a, b) => b.number - a.number);
    return this.page(
      ctx,
      pulls.map((p) => this.pullJson(repo, p)),
    );
  }

  private createPull(ctx: Ctx) {
    const repo = ctx.repo!;
    const b = ctx.body as { title?: string; head: string; base: string; body?: string; draft?: boolean };
    this.requireWrite(ctx, 'pull_requests');
    if (ctx.user.login === 'github-actions[bot]' && !repo.actionsCanCreatePullRequests) {
      throw forbidden('GitHub Actions is not permitted to create or approve pull requests.');
    }
    const head = b.head.includes(':') ? b.head.split(':', 2)[1]! : b.head;
    if (b.title === undefined) throw invalid('PullRequest', 'title', 'missing_field');
    checkLength('PullRequest', 'title', b.title, TITLE_LIMIT);
    checkLength('PullRequest', 'body', b.body ?? '', BODY_LIMIT);
    const headSha = refSha(repo.bareDir, head);
    if (!headSha) throw invalid('PullRequest', 'head', 'invalid');
    const baseSha = refSha(repo.bareDir, b.base);
    if (!baseSha) throw invalid('PullRequest', 'base', 'invalid');
    if ([...repo.pulls.values()].some((p) => p.state === 'open' && p.head === head && p.base === b.base)) {
      throw custom('PullRequest', `A pull request already exists for ${repo.owner}:${head}.`);
    }
    if (b.draft && !repo.draftsSupported) {
      throw custom('PullRequest', 'Draft pull requests are not supported in this repository.');
    }
    if (isAncestor(repo.bareDir, headSha, baseSha))
      throw custom('PullRequest', `No commits between ${b.base} and ${head}`);
    const now = new Date().toISOString();
    const pull: Pull = {
      number: this.nextNumber++,
      head,
      base: b.base,
      title: b.title,
      body: b.body ?? null,
      draft: b.draft ?? false,
      state: 'open',
      user: ctx.user,
      createdAt: now,
      updatedAt: now,
      closedAt: null,
      mergedAt: null,
    };
    repo.pulls.set(pull.number, pull);
    this.syncPullRefs(`${repo.owner}/${repo.name}`, pull.number);
    return this.pullJson(repo, pull);
  }

  private updatePull(ctx: Ctx) {
    const repo = ctx.repo!;
    this.requireWrite(ctx, 'pull_requests');
    const pull = repo.pulls.get(Number(ctx.params.pull_number));
    if (!pull) throw notFound();
    const b = ctx.body as { title?: string; body?: string; state?: 'open' | 'closed'; base?: string };
    if (b.title !== undefined) checkLength('PullRequest', 'title', b.title, TITLE_LIMIT);
    if (b.body !== undefined) checkLength('PullRequest', 'body', b.body, BODY_LIMIT);
    if (b.base !== undefined && !refSha(repo.bareDir, b.base))
      throw invalid('PullRequest', 'base', 'invalid');
    if (b.title !== undefined) pull.title = b.title;
    if (b.body !== undefined) pull.body = b.body;
    if (b.base !== undefined) pull.base = b.base;
    if (b.state !== undefined && b.state !== pull.state) {
      pull.state = b.state;
      pull.closedAt = b.state === 'closed' ? new Date().toISOString() : null;
    }
    pull.updatedAt = new Date().toISOString();
    return this.pullJson(repo, pull);
  }

  private getPull(ctx: Ctx) {
    this.requireRead(ctx, 'pull_requests');
    const pull = ctx.repo!.pulls.get(Number(ctx.params.pull_number));
    if (!pull) throw notFound();
    return this.pullJson(ctx.repo!, pull);
  }

  private collaboratorPermission(ctx: Ctx) {
    const login = ctx.params.username!;
    const role = ctx.repo!.collaborators.get(login.toLowerCase());
    if (!role) throw notFound();
    const permission = role === 'maintain' ? 'write' : role === 'triage' ? 'read' : role;
    return { permission, role_name: role, user: userJson(this.userByLogin(login)) };
  }

  private createWorkflowDispatch(ctx: Ctx) {
    const p = ctx.user.permissions;
    if (p && p.actions !== 'write') throw this.denied(ctx);
    const repo = ctx.repo!;
    const b = ctx.body as { ref: string; inputs?: Record<string, unknown>; return_run_details?: boolean };
    const file = ctx.params.workflow_id!;
    const ref = b.ref.replace(/^refs\/heads\//, '');
    if (!refSha(repo.bareDir, ref)) throw unprocessable(`No ref found for: ${b.ref}`);
    let text: string;
    try {
      text = execFileSync(
        'git',
        ['--git-dir', repo.bareDir, 'show', `refs/heads/${ref}:.github/workflows/${file}`],
        {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
        },
      );
    } catch {
      throw notFound();
    }
    const on = (parseYaml(text) as { on?: Record<string, { inputs?: Record<string, unknown> } | null> }).on;
    if (!on || !('workflow_dispatch' in on)) {
      throw unprocessable("Workflow does not have 'workflow_dispatch' trigger");
    }
    const declared = Object.keys(on.workflow_dispatch?.inputs ?? {});
    const unexpected = Object.keys(b.inputs ?? {}).filter((k) => !declared.includes(k));
    if (unexpected.length > 0) {
      throw unprocessable(`Unexpected inputs provided: ${JSON.stringify(unexpected)}`);
    }
    repo.dispatches.push({ workflow: file, ref, inputs: b.inputs ?? {}, by: ctx.user.login });
    return { status: 204 };
  }

  private listComments(ctx: Ctx) {
    this.requireRead(ctx, 'pull_requests', 'issues');
    const issue = this.mustIssue(ctx);
    const list = this.commentsOn(repoKey(ctx.repo!), issue).map((c) => this.commentJson(c));
    return this.page(ctx, list);
  }

  private createComment(ctx: Ctx) {
    this.requireWrite(ctx, 'issues', 'pull_requests');
    const issue = this.mustIssue(ctx);
    const { body } = ctx.body as { body: string };
    checkLength('IssueComment', 'data', body, BODY_LIMIT, 'unprocessable', 'Body');
    const id = this.nextId++;
    const now = new Date().toISOString();
    const c = {
      id,
      nodeId: nodeId('IC', id),
      issue,
      body,
      user: ctx.user,
      minimized: false,
      createdAt: now,
      updatedAt: now,
      repo: repoKey(ctx.repo!),
    };
    this.comments.set(id, c);
    return this.commentJson(c);
  }

  private updateComment(ctx: Ctx) {
    this.requireWrite(ctx, 'issues', 'pull_requests');
    const c = this.mustComment(ctx);
    const { body } = ctx.body as { body: string };
    checkLength('IssueComment', 'data', body, BODY_LIMIT, 'unprocessable', 'Body');
    c.body = body;
    c.updatedAt = new Date().toISOString();
    return this.commentJson(c);
  }

  private addLabels(ctx: Ctx) {
    this.requireWrite(ctx, 'issues', 'pull_requests');
    const repo = ctx.repo!;
    const issue = this.mustIssue(ctx);
    const raw = ctx.body as { labels?: Array<string | { name: string }> } | string[] | undefined;
    const wanted = (Array.isArray(raw) ? raw : (raw?.labels ?? [])).map((l) =>
      typeof l === 'string' ? l : l.name,
    );
    const names = repo.issueLabels.get(issue) ?? [];
    for (const name of wanted) {
      const label = this.labelFor(repo, name);
      if (!names.some((n) => n.toLowerCase() === name.toLowerCase())) names.push(label.name);
    }
    repo.issueLabels.set(issue, names);
    return names.map((n) => labelJson(repo.labels.get(n.toLowerCase())!));
  }

  private removeLabel(ctx: Ctx) {
    this.requireWrite(ctx, 'issues', 'pull_requests');
    const repo = ctx.repo!;
    const issue = this.mustIssue(ctx);
    const names = repo.issueLabels.get(issue) ?? [];
    const name = ctx.params.name!;
    const kept = names.filter((n) => n.toLowerCase() !== name.toLowerCase());
    if (kept.length === names.length)
      throw new HttpError(404, { message: 'Label does not exist', status: '404' });
    repo.issueLabels.set(issue, kept);
    return kept.map((n) => labelJson(repo.labels.get(n.toLowerCase())!));
  }

  private createLabel(ctx: Ctx) {
    this.requireWrite(ctx, 'issues');
    const repo = ctx.repo!;
    const b = ctx.body as { name: string; color?: string; description?: string };
    if (repo.labels.has(b.name.toLowerCase())) throw invalid('Label', 'name', 'already_exists');
    if (b.color !== undefined && !/^[0-9a-fA-F]{6}$/.test(b.color))
      throw invalid('Label', 'color', 'invalid');
    const label: Label = {
      id: this.nextId++,
      name: b.name,
      color: b.color ?? 'ededed',
      description: b.description ?? null,
    };
    repo.labels.set(b.name.toLowerCase(), label);
    return labelJson(label);
  }

  private graphql(body: unknown, user: UserRecord): unknown {
    const b = body as { query?: string; variables?: Record<string, unknown> } | undefined;
    const doc = (b?.query ?? '').replace(/\s+/g, ' ').trim();
    if (/^query \{ viewer \{ login \} \}$/.test(doc)) {
      if (b?.variables && Object.keys(b.variables).length > 0)
        this.violations.push('graphql viewer: unexpected variables');
      return { data: { viewer: { login: user.login } } };
    }
    if (
      /^query ?\(\$ids: \[ID!\]!\) \{ nodes\(ids: \$ids\) \{ \.\.\. on IssueComment \{ id isMinimized \} \} \}$/.test(
        doc,
      )
    ) {
      const ids = b?.variables?.ids;
      if (
        !Array.isArray(ids) ||
        ids.length === 0 ||
        ids.length > 100 ||
        ids.some((x) => typeof x !== 'string')
      ) {
        this.violations.push(`graphql nodes: ids must be 1-100 strings (got ${JSON.stringify(ids)})`);
        return { errors: [{ message: 'Variable $ids of type [ID!]! was provided invalid value' }] };
      }
      const byNode = new Map([...this.comments.values()].map((c) => [c.nodeId, c]));
      return {
        data: {
          nodes: ids.map((id) => (byNode.has(id) ? { id, isMinimized: byNode.get(id)!.minimized } : null)),
        },
      };
    }
    this.violations.push(`graphql: unsupported document: ${doc}`);
    return { errors: [{ message: `unsupported query for this contract server: ${doc}` }] };
  }

  // ---- helpers ----------------------------------------------------------------------------------

  /** Apply per_page/page and GitHub's Link header. */
  private page(ctx: Ctx, items: unknown[]) {
    const perPage = Math.min(100, Number(ctx.query.per_page ?? 30));
    const page = Number(ctx.query.page ?? 1);
    const last = Math.max(1, Math.ceil(items.length / perPage));
    const link = (p: number) => {
      const u = new URL(ctx.url.href);
      u.searchParams.set('per_page', String(perPage));
      u.searchParams.set('page', String(p));
      return u.href;
    };
    const rels: string[] = [];
    if (page < last) rels.push(`<${link(page + 1)}>; rel="next"`, `<${link(last)}>; rel="last"`);
    if (page > 1) rels.push(`<${link(1)}>; rel="first"`, `<${link(page - 1)}>; rel="prev"`);
    return {
      status: 200,
      body: items.slice((page - 1) * perPage, page * perPage),
      headers: rels.length > 0 ? { link: rels.join(', ') } : undefined,
    };
  }

  private requireRead(ctx: Ctx, ...kinds: Array<'pull_requests' | 'issues'>): void {
    const p = ctx.user.permissions;
    if (!p) return;
    if (!kinds.some((k) => p[k] === 'read' || p[k] === 'write')) throw this.denied(ctx);
  }

  private requireWrite(ctx: Ctx, ...kinds: Array<'pull_requests' | 'issues'>): void {
    const p = ctx.user.permissions;
    if (!p) return;
    if (!kinds.some((k) => p[k] === 'write')) throw this.denied(ctx);
  }

  private denied(ctx: Ctx): HttpError {
    return forbidden(
      ctx.user.kind === 'installation'
        ? 'Resource not accessible by integration'
        : 'Resource not accessible by personal access token',
    );
  }

  private mustIssue(ctx: Ctx): number {
    const n = Number(ctx.params.issue_number);
    if (!ctx.repo!.pulls.has(n)) throw notFound();
    return n;
  }

  private mustComment(ctx: Ctx): CommentRecord {
    const c = this.comments.get(Number(ctx.params.comment_id));
    if (!c || c.repo !== repoKey(ctx.repo!)) throw notFound();
    return c;
  }

  private mustRepo(fullName: string): Repo {
    const repo = this.repos.get(fullName.toLowerCase());
    if (!repo) throw new Error(`no repo ${fullName}`);
    return repo;
  }

  private userByLogin(login: string): UserRecord {
    const known = [...this.tokens.values()].find((u) => u.login === login);
    return known ?? { login, id: this.nextId++, type: login.endsWith('[bot]') ? 'Bot' : 'User' };
  }

  private labelFor(repo: Repo, name: string): Label {
    const existing = repo.labels.get(name.toLowerCase());
    if (existing) return existing;
    // Adding an unknown label to an issue creates it with the default colour, as GitHub does.
    const label: Label = { id: this.nextId++, name, color: 'ededed', description: null };
    repo.labels.set(name.toLowerCase(), label);
    return label;
  }

  private pullJson(repo: Repo, p: Pull) {
    const full = `${repo.owner}/${repo.name}`;
    const repoJson = {
      full_name: full,
      name: repo.name,
      owner: { login: repo.owner },
      default_branch: defaultBranch(repo.bareDir),
    };
    return {
      id: p.number + 500_000,
      node_id: nodeId('PR', p.number),
      number: p.number,
      url: `${this.url}/repos/${full}/pulls/${p.number}`,
      html_url: `https://github.com/${full}/pull/${p.number}`,
      state: p.state,
      title: p.title,
      body: p.body,
      draft: p.draft,
      user: userJson(p.user),
      labels: (repo.issueLabels.get(p.number) ?? []).map((n) => labelJson(repo.labels.get(n.toLowerCase())!)),
      head: {
        label: `${repo.owner}:${p.head}`,
        ref: p.head,
        sha: refSha(repo.bareDir, p.head) ?? '',
        repo: repoJson,
      },
      base: {
        label: `${repo.owner}:${p.base}`,
        ref: p.base,
        sha: refSha(repo.bareDir, p.base) ?? '',
        repo: repoJson,
      },
      merged_at: p.mergedAt,
      created_at: p.createdAt,
      updated_at: p.updatedAt,
      closed_at: p.closedAt,
    };
  }

  private commentJson(c: CommentRecord) {
    return {
      id: c.id,
      node_id: c.nodeId,
      url: `${this.url}/repos/${c.repo}/issues/comments/${c.id}`,
      html_url: `https://github.com/${c.repo}/pull/${c.issue}#issuecomment-${c.id}`,
      body: c.body,
      user: userJson(c.user),
      created_at: c.createdAt,
      updated_at: c.updatedAt,
      author_association: 'MEMBER',
    };
  }
}

// ---- contract loading -----------------------------------------------------------------------------

let compiled: Operation[] | undefined;

/** The contract's operations with compiled validators (once per process: compiling takes ~0.2 s). */
function loadOperations(): Operation[] {
  compiled ??= compileOperations();
  return compiled;
}

function compileOperations(): Operation[] {
  const spec = JSON.parse(readFileSync(GITHUB_OPENAPI_SUBSET, 'utf8')) as {
    paths: Record<
      string,
      Record<
        string,
        {
          operationId: string;
          parameters: Array<{ name: string; in: 'path' | 'query'; required: boolean; schema: unknown }>;
          requestBody?: { required: boolean; schema: unknown };
        }
      >
    >;
  };
  const ajvParams = new Ajv({ strict: false, coerceTypes: true, allErrors: true });
  const ajvBody = new Ajv({ strict: false, allErrors: true });
  for (const ajv of [ajvParams, ajvBody]) {
    ajv.addFormat('date-time', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
    ajv.addFormat('int64', true);
    ajv.addFormat('repo.nwo', /^[\w.-]+\/[\w.-]+$/);
  }
  const ops: Operation[] = [];
  for (const [template, methods] of Object.entries(spec.paths)) {
    const pathParams = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const regex = new RegExp(`^${template.replace(/\{\w+\}/g, '([^/]+)')}$`);
    for (const [method, op] of Object.entries(methods)) {
      const params = new Map<string, ParamSpec>();
      for (const p of op.parameters) {
        const schema = { type: 'object', properties: { v: nullable(p.schema) }, required: ['v'] };
        params.set(p.name, { in: p.in, required: p.required, validate: ajvParams.compile(schema) });
      }
      const bodySchema = op.requestBody?.schema as { properties?: Record<string, unknown> } | undefined;
      ops.push({
        method,
        template,
        regex,
        pathParams,
        operationId: op.operationId,
        params,
        body: op.requestBody
          ? {
              required: op.requestBody.required,
              validate: ajvBody.compile(nullable(op.requestBody.schema) as object),
              properties: bodySchema?.properties ? new Set(Object.keys(bodySchema.properties)) : undefined,
            }
          : undefined,
      });
    }
  }
  return ops;
}

/** OpenAPI 3.0 `nullable: true` → JSON Schema `type: [t, "null"]`. */
function nullable(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(nullable);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) out[k] = k === 'nullable' ? undefined : nullable(v);
  const s = schema as { nullable?: boolean; type?: string };
  if (s.nullable && typeof s.type === 'string') out.type = [s.type, 'null'];
  delete out.nullable;
  return out;
}

function ajvText(v: ValidateFunction): string {
  return (v.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
}

// ---- small helpers --------------------------------------------------------------------------------

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function parseJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

function notFound(): HttpError {
  return new HttpError(404, { message: 'Not Found', documentation_url: DOCS, status: '404' });
}

function forbidden(message: string): HttpError {
  return new HttpError(403, { message, documentation_url: DOCS, status: '403' });
}

function invalid(resource: string, field: string, code: string): HttpError {
  return new HttpError(422, {
    message: 'Validation Failed',
    errors: [{ resource, field, code }],
    documentation_url: DOCS,
    status: '422',
  });
}

function custom(resource: string, message: string): HttpError {
  return new HttpError(422, {
    message: 'Validation Failed',
    errors: [{ resource, code: 'custom', message }],
    documentation_url: DOCS,
    status: '422',
  });
}

/** GitHub's plain 422 (a message, no `errors` list), as the workflow dispatch endpoint answers. */
function unprocessable(message: string): HttpError {
  return new HttpError(422, { message, documentation_url: DOCS, status: '422' });
}

function checkLength(
  resource: string,
  field: string,
  text: string,
  max: number,
  code = 'custom',
  label = field,
) {
  if (text.length > max) {
    throw new HttpError(422, {
      message: 'Validation Failed',
      errors: [{ resource, code, field, message: `${label} is too long (maximum is ${max} characters)` }],
      documentation_url: DOCS,
      status: '422',
    });
  }
}

function userJson(u: UserRecord) {
  return { login: u.login, id: u.id, node_id: nodeId('U', u.id), type: u.type };
}

function labelJson(l: Label) {
  return {
    id: l.id,
    node_id: nodeId('LA', l.id),
    name: l.name,
    color: l.color,
    description: l.description,
    default: false,
  };
}

function nodeId(kind: string, id: number): string {
  return `${kind}_${Buffer.from(`hc:${kind}:${id}`).toString('base64url')}`;
}

function repoKey(repo: Repo): string {
  return `${repo.owner}/${repo.name}`.toLowerCase();
}

/** GitHub's default branch is the bare repository's HEAD. */
function defaultBranch(bareDir: string): string {
  return execFileSync('git', ['--git-dir', bareDir, 'symbolic-ref', '--short', 'HEAD'], {
    encoding: 'utf8',
  }).trim();
}

function refSha(bareDir: string, branch: string): string | undefined {
  try {
    return execFileSync(
      'git',
      ['--git-dir', bareDir, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`],
      {
        encoding: 'utf8',
      },
    ).trim();
  } catch {
    return undefined;
  }
}

function isAncestor(bareDir: string, maybeAncestor: string, of: string): boolean {
  try {
    execFileSync('git', ['--git-dir', bareDir, 'merge-base', '--is-ancestor', maybeAncestor, of]);
    return true;
  } catch {
    return false;
  }
}

/** GitHub refuses any pushed file over 100 MiB (docs: "About large files on GitHub"). */
export const GITHUB_FILE_SIZE_LIMIT_BYTES = 100 * 1024 * 1024;

/**
 * Make a bare repository refuse pushes the way github.com does: a pre-receive hook that rejects
 * - any new blob over `limitBytes` with GitHub's GH001 messages (the file, its size and the limit in
 *   MB; git shows them prefixed with `remote:`). Tests pass a scaled-down limit, not 100 MiB;
 * - any update of a branch in `protectedBranches` with GH006 "Protected branch update failed", as
 *   branch protection does for a token that may not bypass it;
 * so the push fails with `[remote rejected] … (pre-receive hook declined)`.
 */
export function installGitHubPushRules(
  bareDir: string,
  limitBytes = GITHUB_FILE_SIZE_LIMIT_BYTES,
  protectedBranches: readonly string[] = [],
): void {
  const hook = join(bareDir, 'hooks', 'pre-receive');
  const protectedRefs = protectedBranches.map((b) => `refs/heads/${b}`).join(' ');
  const script = `#!/bin/sh
# GitHub's push rules (GH001 large files, GH006 protected branches), for tests.
status=0
too_large=
while read -r old new ref; do
  for p in ${protectedRefs}; do
    if [ "$ref" = "$p" ]; then
      echo "error: GH006: Protected branch update failed for $ref." >&2
      echo "error: Changes must be made through a pull request." >&2
      status=1
    fi
  done
  [ "$new" = "0000000000000000000000000000000000000000" ] && continue
  report=$(git rev-list --objects "$new" --not --all |
    git cat-file --batch-check='%(objecttype) %(objectsize) %(rest)' |
    awk -v limit=${limitBytes} -v trace="$new" '$1 == "blob" && $2 > limit {
      path = $0; sub(/^[^ ]+ [^ ]+ /, "", path)
      print "error: Trace: " trace
      print "error: See https://gh.io/lfs for more information."
      printf "error: File %s is %.2f MB; this exceeds GitHub'"'"'s file size limit of %.2f MB\\n", path, $2 / 1048576, limit / 1048576
    }')
  if [ -n "$report" ]; then
    echo "$report" >&2
    status=1
    too_large=1
  fi
done
if [ -n "$too_large" ]; then
  echo "error: GH001: Large files detected. You may want to try Git Large File Storage - https://git-lfs.github.com." >&2
fi
exit "$status"
`;
  writeFileSync(hook, script);
  chmodSync(hook, 0o755);
}
