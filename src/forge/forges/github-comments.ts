/**
 * Finding the sticky comment on GitHub: page through every issue comment of the PR (REST, 100 per
 * page) and keep those that carry the marker, are written by the forge's own identity, and are not
 * minimized. Functions take the API session first, as marocchino/sticky-pull-request-comment's do.
 *
 * Identity: `forge.github.comment_author` when configured; else REST `GET /user` (personal and user
 * tokens); else, when that answers 403 (GitHub App installation tokens, including GITHUB_TOKEN), the
 * GraphQL `viewer`, which works for every token kind. Logins compare case-insensitively with the
 * `[bot]` suffix removed, because REST writes bots as `name[bot]` and GraphQL as `name`.
 *
 * Minimized: REST does not expose it, so the candidates' node ids go to one GraphQL `nodes` query
 * (`IssueComment.isMinimized`). A hidden comment is treated as gone and a fresh one is posted, as
 * marocchino does; if the GraphQL call fails the comments are assumed visible and a warning says so,
 * because failing the whole publish over a rarely-used hide would be worse.
 */
import type { Logger } from '../../util/index.js';
import { ForgeApiError } from '../errors.js';
import { hasStickyMarker } from '../sticky.js';
import type { GitHubClient } from './github-client.js';

export interface GitHubSession {
  client: GitHubClient;
  owner: string;
  repo: string;
  logger: Logger;
  /** Run one API call, wrapping any failure into a ForgeApiError for `operation`. */
  call<T>(operation: string, fn: () => Promise<T>): Promise<T>;
}

export interface IssueCommentLike {
  id: number;
  node_id: string;
  body?: string | null;
  user: { login: string } | null;
  created_at: string;
}

export const VIEWER_QUERY = 'query { viewer { login } }';
export const MINIMIZED_QUERY =
  'query($ids: [ID!]!) { nodes(ids: $ids) { ... on IssueComment { id isMinimized } } }';
/** GraphQL `nodes` accepts at most 100 ids. */
const NODES_PER_QUERY = 100;
const COMMENTS_PER_PAGE = 100;

export function sameLogin(a: string, b: string): boolean {
  const norm = (s: string) => s.toLowerCase().replace(/\[bot\]$/, '');
  return norm(a) === norm(b);
}

/** The login the forge writes comments as (see the module comment for the order of sources). */
export async function resolveLogin(s: GitHubSession, configured: string | undefined): Promise<string> {
  if (configured) return configured;
  try {
    const { data } = await s.call('users.getAuthenticated', () => s.client.rest.users.getAuthenticated());
    return data.login;
  } catch (e) {
    if (!(e instanceof ForgeApiError && e.status === 403)) throw e;
  }
  const data = await s.call('graphql', () => s.client.graphql<{ viewer: { login: string } }>(VIEWER_QUERY));
  s.logger.debug(`token identity from GraphQL viewer: ${data.viewer.login}`);
  return data.viewer.login;
}

/** Every comment on issue/PR `number`, oldest first. */
export async function listComments(s: GitHubSession, number: number): Promise<IssueCommentLike[]> {
  const all = await s.call('issues.listComments', () =>
    s.client.paginate(s.client.rest.issues.listComments, {
      owner: s.owner,
      repo: s.repo,
      issue_number: number,
      per_page: COMMENTS_PER_PAGE,
    }),
  );
  return (all as IssueCommentLike[]).sort((a, b) => a.id - b.id);
}

/** The sticky comments for `key` written by `login` and not minimized, oldest first. */
export async function findStickyComments(
  s: GitHubSession,
  number: number,
  key: string,
  login: string,
): Promise<IssueCommentLike[]> {
  const candidates = (await listComments(s, number)).filter(
    (c) => c.user !== null && sameLogin(c.user.login, login) && hasStickyMarker(c.body ?? '', key),
  );
  if (candidates.length === 0) return [];
  const hidden = await minimizedNodeIds(
    s,
    candidates.map((c) => c.node_id),
  );
  if (hidden.size > 0)
    s.logger.info(`ignoring ${hidden.size} minimized sticky comment(s) ${key} on #${number}`);
  return candidates.filter((c) => !hidden.has(c.node_id));
}

async function minimizedNodeIds(s: GitHubSession, ids: string[]): Promise<Set<string>> {
  const hidden = new Set<string>();
  try {
    for (let i = 0; i < ids.length; i += NODES_PER_QUERY) {
      const chunk = ids.slice(i, i + NODES_PER_QUERY);
      const data = await s.call('graphql', () =>
        s.client.graphql<{ nodes: Array<{ id?: string; isMinimized?: boolean } | null> }>(MINIMIZED_QUERY, {
          ids: chunk,
        }),
      );
      for (const n of data.nodes) if (n?.id && n.isMinimized) hidden.add(n.id);
    }
  } catch (e) {
    s.logger.warn(
      `could not check whether sticky comments are minimized (assuming not): ${(e as Error).message}`,
    );
  }
  return hidden;
}

/** Delete comments; one already deleted (404, e.g. by a concurrent writer) is fine. */
export async function deleteComments(s: GitHubSession, comments: readonly IssueCommentLike[]): Promise<void> {
  for (const c of comments) {
    try {
      await s.call('issues.deleteComment', () =>
        s.client.rest.issues.deleteComment({ owner: s.owner, repo: s.repo, comment_id: c.id }),
      );
    } catch (e) {
      if (!(e instanceof ForgeApiError && e.status === 404)) throw e;
    }
  }
}
