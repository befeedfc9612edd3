/**
 * GitHub API failures, wrapped once into ForgeApiError with a hint that names what to change. Known
 * error texts are constants: some are recovery paths (a PR that already exists is updated instead),
 * the others become hints.
 */
import { ForgeApiError } from '../errors.js';
import { BODY_CAP_CHARS } from '../limits.js';

/** 422 from pulls.create when an open PR already has this head: find it and update it. */
export const ERROR_PR_ALREADY_EXISTS = 'A pull request already exists';
/** 403 when the token lacks a permission (GITHUB_TOKEN or a GitHub App installation token). */
export const ERROR_NOT_ACCESSIBLE_BY_INTEGRATION = 'Resource not accessible by integration';
/** 403 when the repository does not let GITHUB_TOKEN open pull requests. */
export const ERROR_ACTIONS_CANNOT_CREATE_PR =
  'GitHub Actions is not permitted to create or approve pull requests';
/** 422 when a body is over GitHub's limit (hillclimb caps bodies, so this means the cap is wrong). */
export const ERROR_BODY_TOO_LONG = 'is too long';
/** 422 from pulls.create when the head has nothing the base lacks. */
export const ERROR_NO_COMMITS_BETWEEN = 'No commits between';
/** 422 from pulls.create with draft: true where the plan has no draft PRs: open it ready instead. */
export const ERROR_DRAFTS_NOT_SUPPORTED = 'Draft pull requests are not supported';
/** 422 code from labels.create when the label exists (harmless: it is what we wanted). */
export const ERROR_CODE_ALREADY_EXISTS = 'already_exists';
/**
 * 422 for content created faster than GitHub allows (a secondary rate limit that comes as a
 * validation error, e.g. `{"resource":"IssueComment","code":"custom","message":"was submitted too
 * quickly"}`); the throttling plugin only knows the 403/429 forms.
 */
export const ERROR_SUBMITTED_TOO_QUICKLY = 'was submitted too quickly';
/**
 * How long to wait before retrying it: GitHub's rate-limit docs ask for at least one minute when a
 * secondary limit gives no `retry-after`.
 */
export const SUBMITTED_TOO_QUICKLY_WAIT_SECONDS = 60;

/** The permission each operation needs, for 403 hints (fine-grained / GitHub App names). */
const PERMISSION_FOR: Record<string, string> = {
  'users.getAuthenticated': 'none (any valid token)',
  'pulls.list': 'pull-requests: read',
  'pulls.create': 'pull-requests: write',
  'pulls.update': 'pull-requests: write',
  'issues.listComments': 'pull-requests: read',
  'issues.createComment': 'pull-requests: write',
  'issues.updateComment': 'pull-requests: write',
  'issues.deleteComment': 'pull-requests: write',
  'issues.addLabels': 'pull-requests: write (or issues: write)',
  'issues.removeLabel': 'pull-requests: write (or issues: write)',
  'issues.createLabel': 'issues: write',
  graphql: 'pull-requests: read',
  'git push': 'contents: write',
};

export interface ErrorContext {
  repository: string;
  tokenEnv: string;
}

/** What Octokit's RequestError carries that we read; duck-typed so any thrown value is handled. */
interface RequestErrorLike {
  status?: number;
  message?: string;
  response?: {
    headers?: Record<string, string | undefined>;
    data?: { message?: string; errors?: Array<{ message?: string; code?: string; field?: string }> | string };
  };
}

/** Every text GitHub gave for a failure: the message plus each validation error. */
export function githubErrorText(err: unknown): string {
  const e = err as RequestErrorLike;
  const data = e.response?.data;
  const parts = [data?.message ?? e.message ?? String(err)];
  if (Array.isArray(data?.errors)) {
    for (const x of data.errors) {
      const detail = x.message ?? [x.field, x.code].filter(Boolean).join(' ');
      if (detail) parts.push(detail);
    }
  }
  return parts.join(': ');
}

/** 422 "was submitted too quickly" (see ERROR_SUBMITTED_TOO_QUICKLY). */
export function isSubmittedTooQuickly(err: unknown): boolean {
  return (
    (err as RequestErrorLike).status === 422 && githubErrorText(err).includes(ERROR_SUBMITTED_TOO_QUICKLY)
  );
}

/**
 * 422 `{"resource":"PullRequest","field":"base","code":"invalid"}`: the base branch does not exist
 * (pulls.create and pulls.update), e.g. a stacked PR's base merged and auto-deleted.
 */
export function isInvalidBase(err: unknown): boolean {
  const e = err as RequestErrorLike;
  const errors = e.response?.data?.errors;
  return (
    e.status === 422 &&
    Array.isArray(errors) &&
    errors.some((x) => x.field === 'base' && x.code === 'invalid')
  );
}

export function githubErrorCodes(err: unknown): string[] {
  const errors = (err as RequestErrorLike).response?.data?.errors;
  return Array.isArray(errors) ? errors.flatMap((x) => (x.code ? [x.code] : [])) : [];
}

export function toForgeApiError(err: unknown, operation: string, ctx: ErrorContext): ForgeApiError {
  if (err instanceof ForgeApiError) return err;
  const e = err as RequestErrorLike;
  const status = typeof e.status === 'number' && e.status > 0 ? e.status : undefined;
  const text = githubErrorText(err);
  return new ForgeApiError(operation, status ? `${status} ${text}` : text, {
    status,
    hint: hintFor(status, text, operation, e.response?.headers ?? {}, ctx),
    cause: err,
  });
}

function hintFor(
  status: number | undefined,
  text: string,
  operation: string,
  headers: Record<string, string | undefined>,
  ctx: ErrorContext,
): string | undefined {
  if (text.includes(ERROR_ACTIONS_CANNOT_CREATE_PR)) {
    return (
      'enable "Allow GitHub Actions to create and approve pull requests" (Settings → Actions → General → ' +
      'Workflow permissions), or use a GitHub App token'
    );
  }
  if (status === 422 && text.includes(ERROR_SUBMITTED_TOO_QUICKLY)) {
    return (
      "GitHub's secondary rate limit on creating content; hillclimb waited and retried within its rate-limit " +
      'budget and gave up: run the step again in a few minutes'
    );
  }
  if (headers['x-ratelimit-remaining'] === '0' || /rate limit/i.test(text)) {
    const reset = Number(headers['x-ratelimit-reset']);
    const when =
      Number.isFinite(reset) && reset > 0 ? ` (resets at ${new Date(reset * 1000).toISOString()})` : '';
    return (
      `GitHub rate limit exhausted${when}, and waiting for it would outlast this job's rate-limit budget; ` +
      'run again after that, or use a GitHub App token (higher limits)'
    );
  }
  const permission = PERMISSION_FOR[operation];
  if (status === 403 && text.includes(ERROR_NOT_ACCESSIBLE_BY_INTEGRATION)) {
    return (
      `the token in $${ctx.tokenEnv} lacks "${permission ?? 'a permission'}": add it under "permissions:" ` +
      'of the workflow job, or to the GitHub App'
    );
  }
  if (status === 401) return `the token in $${ctx.tokenEnv} is invalid or expired`;
  if (status === 403) {
    return `the token in $${ctx.tokenEnv} may not do this (needs ${permission ?? 'write access'}) on ${ctx.repository}`;
  }
  if (status === 404) {
    return (
      `${ctx.repository} (or the object) was not found, or the token in $${ctx.tokenEnv} cannot see it; ` +
      'grant the token or App access to this repository'
    );
  }
  if (status === 422 && text.includes(ERROR_BODY_TOO_LONG)) {
    return `hillclimb caps bodies at ${BODY_CAP_CHARS} characters; this is a bug, please report it`;
  }
  if (status === 422 && text.includes(ERROR_NO_COMMITS_BETWEEN)) {
    return 'the branch has no commits that its base lacks; there is nothing to review';
  }
  if (status !== undefined && status >= 500) return 'GitHub had a server error; the request was retried';
  if (status === undefined) return 'could not reach GitHub; check the network and forge.github.api_url';
  return undefined;
}
