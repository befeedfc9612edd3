/**
 * The `github` forge: branches pushed with git, PRs, labels and the sticky comment through Octokit.
 *
 * - PRs: found by head branch (`pulls.list` with `head=owner:branch`, open only) or created as a
 *   draft; a 422 "A pull request already exists" (another run won the race) turns into find + update.
 *   The draft state is set at creation only: a person who marked the PR ready for review wins.
 * - Labels: only `hillclimb:*` labels are added or removed (./../labels.ts); missing ones are created
 *   with a colour per verdict.
 * - Sticky comment: ./github-comments.ts finds it; a stale stamp is never written; after creating,
 *   the comments are listed again and, if a concurrent writer also created one, the oldest is kept and
 *   the later ones deleted (then the stamp check decides whose text stays).
 * - Every body and title is capped (../limits.ts). Every API failure is wrapped once into
 *   ForgeApiError with a hint (./github-errors.ts).
 * - The token reaches git through GIT_CONFIG_* environment variables, never the command line.
 */
import { ExecError } from '../../exec/exec.js';
import type { Logger } from '../../util/log.js';
import { ForgeApiError } from '../errors.js';
import type {
  CommentStamp,
  Forge,
  PullRequest,
  PullRequestSpec,
  StickyResult,
  UpsertOperation,
  UpsertPullRequestResult,
} from '../forge.js';
import { assertBranchName, forcePush, type GitOptions, resolveCommit } from '../git.js';
import { isManagedLabel, labelStyle, planLabels } from '../labels.js';
import { BODY_CAP_CHARS, capBody, capTitle } from '../limits.js';
import { composeStickyBody, decodeStamp, mayOverwrite } from '../sticky.js';
import { buildGitHubClient, type GitHubClient, type GitHubClientTiming } from './github-client.js';
import {
  deleteComments,
  findStickyComments,
  type GitHubSession,
  type IssueCommentLike,
  resolveLogin,
} from './github-comments.js';
import {
  ERROR_CODE_ALREADY_EXISTS,
  ERROR_DRAFTS_NOT_SUPPORTED,
  ERROR_PR_ALREADY_EXISTS,
  githubErrorCodes,
  toForgeApiError,
} from './github-errors.js';

export const DEFAULT_GITHUB_API_URL = 'https://api.github.com';

export interface GitHubForgeOptions {
  /** owner/name. */
  repository: string;
  token: string;
  /** The variable the token came from, named in hints. Default GITHUB_TOKEN. */
  tokenEnv?: string;
  /** REST API root. Default https://api.github.com. */
  apiUrl?: string;
  /** Push URL. Default: https://<host>/<repository>.git with the host derived from apiUrl. */
  gitUrl?: string;
  /** Login whose comments are the forge's own; default: the token's identity. */
  commentAuthor?: string;
  logger: Logger;
  /** Retry and rate-limit timing (tests shrink it); see ./github-client.ts. */
  timing?: GitHubClientTiming;
  serverErrorRetries?: number;
  rateLimitRetries?: number;
  maxRateLimitWaitSeconds?: number;
  git?: GitOptions;
}

/** The fields of a REST pull request object the forge reads. */
interface PullLike {
  number: number;
  html_url: string;
  title: string;
  body?: string | null;
  state: string;
  draft?: boolean;
  merged_at?: string | null;
  labels: Array<{ name?: string } | string>;
  head: { ref: string; sha: string; repo?: { full_name?: string } | null };
  base: { ref: string };
}

export class GitHubForge implements Forge {
  readonly name = 'github';
  private readonly client: GitHubClient;
  private readonly session: GitHubSession;
  private readonly owner: string;
  private readonly repo: string;
  private readonly tokenEnv: string;
  private readonly gitUrl: string;
  private login: Promise<string> | undefined;
  /** Managed labels known to exist in the repository (created or seen), lower-cased. */
  private readonly knownLabels = new Set<string>();

  constructor(private readonly opts: GitHubForgeOptions) {
    const [owner, repo] = opts.repository.split('/');
    if (!owner || !repo) throw new TypeError(`repository must be owner/name (got ${opts.repository})`);
    this.owner = owner;
    this.repo = repo;
    this.tokenEnv = opts.tokenEnv ?? 'GITHUB_TOKEN';
    const apiUrl = opts.apiUrl ?? DEFAULT_GITHUB_API_URL;
    this.gitUrl = opts.gitUrl ?? defaultGitUrl(apiUrl, opts.repository);
    this.client = buildGitHubClient({
      token: opts.token,
      baseUrl: apiUrl,
      logger: opts.logger,
      timing: opts.timing,
      serverErrorRetries: opts.serverErrorRetries,
      rateLimitRetries: opts.rateLimitRetries,
      maxRateLimitWaitSeconds: opts.maxRateLimitWaitSeconds,
    });
    const ctx = { repository: opts.repository, tokenEnv: this.tokenEnv };
    this.session = {
      client: this.client,
      owner,
      repo,
      logger: opts.logger,
      async call<T>(operation: string, fn: () => Promise<T>): Promise<T> {
        try {
          return await fn();
        } catch (e) {
          throw toForgeApiError(e, operation, ctx);
        }
      },
    };
  }

  async pushBranch(repoDir: string, branch: string, commit: string): Promise<void> {
    const g = this.opts.git;
    await assertBranchName(repoDir, branch, g);
    const sha = await resolveCommit(repoDir, commit, g);
    const auth = gitAuthEnv(this.gitUrl, this.opts.token);
    try {
      await forcePush(repoDir, this.gitUrl, branch, sha, {
        ...g,
        env: { ...g?.env, ...auth.env },
        redact: [...(g?.redact ?? []), ...auth.secrets],
      });
    } catch (e) {
      if (!(e instanceof ExecError)) throw e;
      const denied = /\b403\b|denied|not granted|authentication failed|could not read username/i.test(
        e.message,
      );
      throw new ForgeApiError('git push', e.message, {
        hint: denied
          ? `the token in $${this.tokenEnv} may not push to ${this.opts.repository}: it needs "contents: write"`
          : `could not push ${branch} to ${redactUrl(this.gitUrl)}`,
        cause: e,
      });
    }
    this.opts.logger.info(`pushed ${branch} → ${sha.slice(0, 12)}`);
  }

  async upsertPullRequest(spec: PullRequestSpec): Promise<UpsertPullRequestResult> {
    const title = capTitle(spec.title).text;
    const capped = capBody(spec.body, BODY_CAP_CHARS);
    if (capped.truncated) this.warnTruncated(`PR body for ${spec.branch}`, capped.originalChars);
    const body = capped.text;

    let existing = await this.findPull(spec.branch);
    let pull: PullLike | undefined;
    let operation: UpsertOperation = 'unchanged';
    if (!existing) {
      try {
        pull = await this.createPull(spec, title, body);
        operation = 'created';
      } catch (e) {
        if (
          !(e instanceof ForgeApiError && e.status === 422 && e.message.includes(ERROR_PR_ALREADY_EXISTS))
        ) {
          throw e;
        }
        this.opts.logger.info(`a PR for ${spec.branch} appeared meanwhile (another run?); updating it`);
        existing = await this.findPull(spec.branch);
        if (!existing) throw e;
      }
    }
    if (existing) {
      const changes: { title?: string; body?: string; base?: string } = {};
      if (existing.title !== title) changes.title = title;
      if ((existing.body ?? '') !== body) changes.body = body;
      if (existing.base.ref !== spec.base) changes.base = spec.base;
      if (Object.keys(changes).length > 0) {
        pull = await this.updatePull(existing.number, changes);
        operation = 'updated';
      } else {
        pull = existing;
      }
    }
    const current = pull!;
    const labels = await this.applyLabels(current.number, labelNames(current), spec.labels);
    if (operation === 'unchanged' && labels.changed) operation = 'updated';
    this.opts.logger.info(`PR #${current.number} (${spec.branch}): ${operation}`);
    return {
      pr: { ...toPullRequest(current), labels: labels.result },
      operation,
      truncated: capped.truncated,
    };
  }

  async findPullRequest(branch: string): Promise<PullRequest | undefined> {
    const pull = await this.findPull(branch);
    return pull ? toPullRequest(pull) : undefined;
  }

  async upsertStickyComment(
    number: number,
    key: string,
    body: string,
    stamp: CommentStamp,
  ): Promise<StickyResult> {
    const composed = composeStickyBody(key, body, stamp);
    if (composed.truncated) this.warnTruncated(`sticky comment ${key} on #${number}`, composed.originalChars);
    const truncated = composed.truncated;
    const login = await this.viewerLogin();
    const s = this.session;

    const found = await findStickyComments(s, number, key, login);
    let kept: IssueCommentLike | undefined = found[0];
    if (found.length > 1) {
      this.opts.logger.warn(`removing ${found.length - 1} duplicate sticky comment(s) ${key} on #${number}`);
      await deleteComments(s, found.slice(1));
    }
    if (!kept) {
      const { data: created } = await s.call('issues.createComment', () =>
        this.client.rest.issues.createComment({
          owner: this.owner,
          repo: this.repo,
          issue_number: number,
          body: composed.body,
        }),
      );
      // find-then-create is not atomic: a concurrent writer may have created one too. Keep the oldest.
      const after = await findStickyComments(s, number, key, login);
      const oldest = after[0] ?? created;
      await deleteComments(
        s,
        after.filter((c) => c.id !== oldest.id),
      );
      if (oldest.id === created.id)
        return this.stickyDone(key, number, { commentId: created.id, operation: 'created', truncated });
      this.opts.logger.info(
        `another writer created sticky comment ${key} on #${number} first; keeping ${oldest.id}`,
      );
      kept = oldest;
    }
    if (!mayOverwrite(stamp, decodeStamp(kept.body ?? ''))) {
      return this.stickyDone(key, number, { commentId: kept.id, operation: 'skipped-stale', truncated });
    }
    if (kept.body === composed.body) {
      return this.stickyDone(key, number, { commentId: kept.id, operation: 'unchanged', truncated });
    }
    const keptId = kept.id;
    await s.call('issues.updateComment', () =>
      this.client.rest.issues.updateComment({
        owner: this.owner,
        repo: this.repo,
        comment_id: keptId,
        body: composed.body,
      }),
    );
    return this.stickyDone(key, number, { commentId: keptId, operation: 'updated', truncated });
  }

  async closePullRequest(number: number, comment?: string): Promise<void> {
    const s = this.session;
    if (comment !== undefined) {
      const body = capBody(comment, BODY_CAP_CHARS).text;
      await s.call('issues.createComment', () =>
        this.client.rest.issues.createComment({
          owner: this.owner,
          repo: this.repo,
          issue_number: number,
          body,
        }),
      );
    }
    await this.updatePull(number, { state: 'closed' });
    this.opts.logger.info(`PR #${number}: closed`);
  }

  private viewerLogin(): Promise<string> {
    if (!this.login) {
      this.login = resolveLogin(this.session, this.opts.commentAuthor);
      // A failed lookup is not cached, so the next call asks again.
      this.login.catch(() => {
        this.login = undefined;
      });
    }
    return this.login;
  }

  private async findPull(branch: string): Promise<PullLike | undefined> {
    const { data } = await this.session.call('pulls.list', () =>
      this.client.rest.pulls.list({
        owner: this.owner,
        repo: this.repo,
        head: `${this.owner}:${branch}`,
        state: 'open',
        per_page: 100,
      }),
    );
    const pulls = data as PullLike[];
    // The head filter is exact on GitHub; checking again keeps a fork's same-named branch out.
    return pulls
      .filter(
        (p) =>
          p.head.ref === branch &&
          (p.head.repo?.full_name ?? this.opts.repository).toLowerCase() ===
            this.opts.repository.toLowerCase(),
      )
      .sort((a, b) => a.number - b.number)[0];
  }

  private async createPull(spec: PullRequestSpec, title: string, body: string): Promise<PullLike> {
    const create = (draft: boolean) =>
      this.session.call('pulls.create', () =>
        this.client.rest.pulls.create({
          owner: this.owner,
          repo: this.repo,
          head: `${this.owner}:${spec.branch}`,
          base: spec.base,
          title,
          body,
          draft,
        }),
      );
    try {
      return (await create(spec.draft)).data as PullLike;
    } catch (e) {
      if (!(spec.draft && e instanceof ForgeApiError && e.message.includes(ERROR_DRAFTS_NOT_SUPPORTED)))
        throw e;
      this.opts.logger.warn(
        `${this.opts.repository} does not support draft PRs; opening ${spec.branch} as ready`,
      );
      return (await create(false)).data as PullLike;
    }
  }

  private async updatePull(
    number: number,
    changes: { title?: string; body?: string; base?: string; state?: 'open' | 'closed' },
  ): Promise<PullLike> {
    const { data } = await this.session.call('pulls.update', () =>
      this.client.rest.pulls.update({ owner: this.owner, repo: this.repo, pull_number: number, ...changes }),
    );
    return data as PullLike;
  }

  /** Add wanted labels and remove unwanted managed ones; other labels are left alone. */
  private async applyLabels(
    number: number,
    current: string[],
    wanted: string[],
  ): Promise<{ result: string[]; changed: boolean }> {
    const plan = planLabels(current, wanted);
    const s = this.session;
    if (plan.add.length > 0) {
      for (const name of plan.add.filter(isManagedLabel)) await this.ensureLabel(name);
      await s.call('issues.addLabels', () =>
        this.client.rest.issues.addLabels({
          owner: this.owner,
          repo: this.repo,
          issue_number: number,
          labels: plan.add,
        }),
      );
    }
    for (const name of plan.remove) {
      try {
        await s.call('issues.removeLabel', () =>
          this.client.rest.issues.removeLabel({
            owner: this.owner,
            repo: this.repo,
            issue_number: number,
            name,
          }),
        );
      } catch (e) {
        // Already gone (a person removed it meanwhile): that is the state we wanted.
        if (!(e instanceof ForgeApiError && e.status === 404)) throw e;
      }
    }
    return { result: plan.result, changed: plan.add.length + plan.remove.length > 0 };
  }

  /** Create a managed label with its colour unless it exists; "already exists" is success. */
  private async ensureLabel(name: string): Promise<void> {
    if (this.knownLabels.has(name.toLowerCase())) return;
    const style = labelStyle(name);
    try {
      await this.session.call('issues.createLabel', () =>
        this.client.rest.issues.createLabel({
          owner: this.owner,
          repo: this.repo,
          name,
          color: style.color,
          description: style.description,
        }),
      );
    } catch (e) {
      const exists =
        e instanceof ForgeApiError &&
        e.status === 422 &&
        githubErrorCodes(e.cause).includes(ERROR_CODE_ALREADY_EXISTS);
      if (!exists) throw e;
    }
    this.knownLabels.add(name.toLowerCase());
  }

  private stickyDone(key: string, number: number, result: StickyResult): StickyResult {
    const why = result.operation === 'skipped-stale' ? ' (the comment holds a newer stamp)' : '';
    this.opts.logger.info(`sticky comment ${key} on #${number}: ${result.operation}${why}`);
    return result;
  }

  private warnTruncated(what: string, originalChars: number): void {
    this.opts.logger.warn(
      `${what} has ${originalChars} characters, over the ${BODY_CAP_CHARS}-character cap; truncated (full text: job summary / evidence bundle)`,
    );
  }
}

function toPullRequest(p: PullLike): PullRequest {
  return {
    number: p.number,
    url: p.html_url,
    branch: p.head.ref,
    base: p.base.ref,
    title: p.title,
    body: p.body ?? '',
    state: p.merged_at ? 'merged' : p.state === 'closed' ? 'closed' : 'open',
    draft: p.draft ?? false,
    labels: labelNames(p).sort(),
    headSha: p.head.sha,
  };
}

function labelNames(p: PullLike): string[] {
  return p.labels.flatMap((l) => (typeof l === 'string' ? [l] : l.name ? [l.name] : []));
}

/** https://api.github.com → https://github.com/<repo>.git; https://ghe.example.com/api/v3 → https://ghe.example.com/<repo>.git. */
export function defaultGitUrl(apiUrl: string, repository: string): string {
  const url = new URL(apiUrl);
  const host = url.hostname === 'api.github.com' ? 'github.com' : url.host;
  return `${url.protocol}//${host}/${repository}.git`;
}

/**
 * Environment that makes git send the token as an HTTP header for `gitUrl`, appended after any
 * GIT_CONFIG_* entries already in the environment. The empty value first clears an extraheader that
 * actions/checkout may have persisted for the same host (two Authorization headers are rejected).
 */
export function gitAuthEnv(
  gitUrl: string,
  token: string,
  env: NodeJS.ProcessEnv = process.env,
): { env: Record<string, string>; secrets: string[] } {
  if (!/^https?:\/\//i.test(gitUrl)) return { env: {}, secrets: [token] };
  const basic = Buffer.from(`x-access-token:${token}`).toString('base64');
  const header = `AUTHORIZATION: basic ${basic}`;
  const key = `http.${new URL(gitUrl).origin}/.extraheader`;
  const start = Number.parseInt(env.GIT_CONFIG_COUNT ?? '0', 10) || 0;
  return {
    env: {
      GIT_CONFIG_COUNT: String(start + 2),
      [`GIT_CONFIG_KEY_${start}`]: key,
      [`GIT_CONFIG_VALUE_${start}`]: '',
      [`GIT_CONFIG_KEY_${start + 1}`]: key,
      [`GIT_CONFIG_VALUE_${start + 1}`]: header,
    },
    secrets: [token, basic, header],
  };
}

/** A URL for messages, without any credentials embedded in it. */
function redactUrl(url: string): string {
  return url.replace(/\/\/[^/@]*@/, '//');
}
