/**
 * The `github` forge: branches pushed with git, PRs, labels and the sticky comment through Octokit.
 *
 * - PRs: found by head branch (`pulls.list` with `head=owner:branch`, any state: an open one first,
 *   else the newest one a person closed, which is updated and left closed, never duplicated) or
 *   created as a draft; a 422 "A pull request already exists" (another run won the race) turns into
 *   find + update. The draft state is set at creation only: a person who marked the PR ready wins.
 * - Stacked PRs: a base branch that no longer exists (a champion's branch, merged and auto-deleted)
 *   makes GitHub answer 422 `base invalid`; the PR then goes to `defaultBase` (forge.base) instead.
 * - Rate limits: waits are capped per forge (./github-client.ts RateLimitBudget); GitHub's 422 "was
 *   submitted too quickly" (a secondary limit on content creation, not retried by the throttling
 *   plugin) is waited out for a minute, from the same budget, and retried.
 * - Pushes replace only hillclimb's own commits (../git.ts pushReplacingOwnCommits): a reviewer's
 *   commits on an iteration branch stop the publish with ForeignCommitsError.
 * - Labels: only `hillclimb:*` labels are added or removed (./../labels.ts); missing ones are created
 *   with a colour per verdict.
 * - Sticky comment: ./github-comments.ts finds it; a stale stamp is never written; after creating,
 *   the comments are listed again and, if a concurrent writer also created one, the oldest is kept and
 *   the later ones deleted (then the stamp check decides whose text stays).
 * - Every body and title is capped (../limits.ts). Every API failure is wrapped once into
 *   ForgeApiError with a hint (./github-errors.ts).
 * - The token reaches git through GIT_CONFIG_* environment variables, never the command line.
 */
import { ExecError } from '../../exec/index.js';
import { type GitOptions, httpAuthEnv, redactUrl, resolveCommit } from '../../git/index.js';
import { assertBranchName, type Logger } from '../../util/index.js';
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
import { isManagedLabel, labelStyle, planLabels } from '../labels.js';
import { BODY_CAP_CHARS, capBody, capTitle } from '../limits.js';
import { pushReplacingOwnCommits } from '../push.js';
import { composeStickyBody, decodeStamp, mayOverwrite } from '../sticky.js';
import {
  buildGitHubClient,
  type GitHubClient,
  type GitHubClientTiming,
  RATE_LIMIT_RETRIES,
  RateLimitBudget,
} from './github-client.js';
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
  isInvalidBase,
  isSubmittedTooQuickly,
  SUBMITTED_TOO_QUICKLY_WAIT_SECONDS,
  toForgeApiError,
} from './github-errors.js';

export const DEFAULT_GITHUB_API_URL = 'https://api.github.com';

/**
 * GitHub's refusals of a push by branch protection (GH006 "Protected branch update failed") or a
 * ruleset (GH013 "Repository rule violations found").
 */
export const PROTECTED_BRANCH = /\bGH006\b|\bGH013\b|protected branch/i;

export function protectedBranchHint(branch: string): string {
  return (
    `a branch protection rule or ruleset covers ${branch}: exclude hillclimb/** and hillclimb-data from it, ` +
    'or add the token\'s GitHub App to its bypass list (docs/setup.md, "Branch protection")'
  );
}

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
  /** forge.base: where a PR goes when its own base branch no longer exists. Default: no fallback. */
  defaultBase?: string;
  logger: Logger;
  /** Retry and rate-limit timing (tests shrink it); see ./github-client.ts. */
  timing?: GitHubClientTiming;
  serverErrorRetries?: number;
  rateLimitRetries?: number;
  /** All rate-limit waits of this forge together (default RATE_LIMIT_WAIT_BUDGET_SECONDS). */
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
    const budget = new RateLimitBudget(opts.maxRateLimitWaitSeconds);
    this.client = buildGitHubClient({
      token: opts.token,
      baseUrl: apiUrl,
      logger: opts.logger,
      timing: opts.timing,
      serverErrorRetries: opts.serverErrorRetries,
      rateLimitRetries: opts.rateLimitRetries,
      budget,
    });
    const ctx = { repository: opts.repository, tokenEnv: this.tokenEnv };
    const secondMs = opts.timing?.secondMs ?? 1000;
    const retries = opts.rateLimitRetries ?? RATE_LIMIT_RETRIES;
    const logger = opts.logger;
    this.session = {
      client: this.client,
      owner,
      repo,
      logger,
      async call<T>(operation: string, fn: () => Promise<T>): Promise<T> {
        for (let attempt = 1; ; attempt++) {
          try {
            return await fn();
          } catch (e) {
            const wait = SUBMITTED_TOO_QUICKLY_WAIT_SECONDS;
            if (!isSubmittedTooQuickly(e) || attempt > retries || !budget.take(wait)) {
              throw toForgeApiError(e, operation, ctx);
            }
            logger.warn(
              `GitHub says ${operation} "was submitted too quickly" (a secondary rate limit): retrying in ${wait} s (retry ${attempt})`,
            );
            await sleep(wait * secondMs);
          }
        }
      },
    };
  }

  async pushBranch(repoDir: string, branch: string, commit: string): Promise<void> {
    const g = this.opts.git;
    assertBranchName(branch);
    const sha = await resolveCommit(repoDir, commit, g);
    const auth = httpAuthEnv(this.gitUrl, this.opts.token);
    let pushed: Awaited<ReturnType<typeof pushReplacingOwnCommits>>;
    try {
      pushed = await pushReplacingOwnCommits(repoDir, this.gitUrl, branch, sha, {
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
        hint: PROTECTED_BRANCH.test(e.message)
          ? protectedBranchHint(branch)
          : denied
            ? `the token in $${this.tokenEnv} may not push to ${this.opts.repository}: it needs "contents: write"`
            : `could not push ${branch} to ${redactUrl(this.gitUrl)}`,
        cause: e,
      });
    }
    this.opts.logger.info(
      pushed === 'unchanged'
        ? `${branch} already at ${sha.slice(0, 12)}`
        : `pushed ${branch} → ${sha.slice(0, 12)}`,
    );
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
      if (existing.state !== 'open') {
        this.opts.logger.warn(
          `PR #${existing.number} for ${spec.branch} was ${existing.merged_at ? 'merged' : 'closed'}; ` +
            'updating it and leaving it as it is (not reopening it, not opening another)',
        );
      }
      const changes: { title?: string; body?: string; base?: string } = {};
      if (existing.title !== title) changes.title = title;
      if ((existing.body ?? '') !== body) changes.body = body;
      // A closed PR keeps its base: it is history, and its base may be long gone.
      if (existing.state === 'open' && existing.base.ref !== spec.base) changes.base = spec.base;
      if (Object.keys(changes).length > 0) {
        pull = await this.updatePullOrRebase(existing, changes);
        operation = pull === existing ? 'unchanged' : 'updated';
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

  /**
   * The PR for a head branch: the open one, else the newest closed or merged one (a re-run finds the PR
   * a person closed instead of opening a second). `pulls.list` with `state: all`, head-filtered.
   */
  private async findPull(branch: string): Promise<PullLike | undefined> {
    const { data } = await this.session.call('pulls.list', () =>
      this.client.rest.pulls.list({
        owner: this.owner,
        repo: this.repo,
        head: `${this.owner}:${branch}`,
        state: 'all',
        per_page: 100,
      }),
    );
    const pulls = (data as PullLike[]).filter(
      // The head filter is exact on GitHub; checking again keeps a fork's same-named branch out.
      (p) =>
        p.head.ref === branch &&
        (p.head.repo?.full_name ?? this.opts.repository).toLowerCase() === this.opts.repository.toLowerCase(),
    );
    const open = pulls.filter((p) => p.state === 'open').sort((a, b) => a.number - b.number)[0];
    return open ?? pulls.sort((a, b) => b.number - a.number)[0];
  }

  private async createPull(spec: PullRequestSpec, title: string, body: string): Promise<PullLike> {
    const create = (draft: boolean, base: string) =>
      this.session.call('pulls.create', () =>
        this.client.rest.pulls.create({
          owner: this.owner,
          repo: this.repo,
          head: `${this.owner}:${spec.branch}`,
          base,
          title,
          body,
          draft,
        }),
      );
    const createAs = async (base: string) => {
      try {
        return (await create(spec.draft, base)).data as PullLike;
      } catch (e) {
        if (!(spec.draft && e instanceof ForgeApiError && e.message.includes(ERROR_DRAFTS_NOT_SUPPORTED)))
          throw e;
        this.opts.logger.warn(
          `${this.opts.repository} does not support draft PRs; opening ${spec.branch} as ready`,
        );
        return (await create(false, base)).data as PullLike;
      }
    };
    try {
      return await createAs(spec.base);
    } catch (e) {
      const fallback = this.fallbackBase(e, spec.base);
      if (fallback === undefined) throw e;
      return createAs(fallback);
    }
  }

  /** Update a PR; when the new base no longer exists, retarget to the default base instead (or keep it). */
  private async updatePullOrRebase(
    existing: PullLike,
    changes: { title?: string; body?: string; base?: string },
  ): Promise<PullLike> {
    try {
      return await this.updatePull(existing.number, changes);
    } catch (e) {
      if (changes.base === undefined) throw e;
      const fallback = this.fallbackBase(e, changes.base);
      if (fallback === undefined) throw e;
      const rest = { ...changes, base: fallback === existing.base.ref ? undefined : fallback };
      if (rest.base === undefined) delete rest.base;
      return Object.keys(rest).length > 0 ? this.updatePull(existing.number, rest) : existing;
    }
  }

  /** The default base to use when `e` says `base` does not exist (422 base invalid), else undefined. */
  private fallbackBase(e: unknown, base: string): string | undefined {
    const fallback = this.opts.defaultBase;
    if (
      fallback === undefined ||
      fallback === base ||
      !(e instanceof ForgeApiError) ||
      !isInvalidBase(e.cause)
    ) {
      return undefined;
    }
    this.opts.logger.warn(
      `base branch ${base} no longer exists on ${this.opts.repository} (merged and deleted?); using ${fallback}`,
    );
    return fallback;
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

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
