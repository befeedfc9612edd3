/**
 * The few git commands the forges need (resolve a commit, read, move and push a branch; branch names
 * are checked by src/util/branch-name.ts), run through src/exec with argument arrays. src/workspace owns git for the loop; this stays
 * small so the forge does not depend on it.
 */
import { type ExecOptions, type ExecResult, run } from '../exec/exec.js';
import { HillclimbError } from '../util/errors.js';
import { ForeignCommitsError } from './errors.js';

export interface GitOptions {
  /** The git program. Default `git`. */
  binary?: string;
  /** Extra environment for the child (e.g. auth via GIT_CONFIG_*). */
  env?: Record<string, string | undefined>;
  /** Strings masked in output and errors. */
  redact?: readonly string[];
  allowedExitCodes?: ExecOptions['allowedExitCodes'];
  timeoutMs?: number;
}

/** Never prompt: an unattended loop has nobody to answer. */
const NON_INTERACTIVE = { GIT_TERMINAL_PROMPT: '0', GCM_INTERACTIVE: 'never' };

export function git(cwd: string, args: readonly string[], opts: GitOptions = {}): Promise<ExecResult> {
  return run(opts.binary ?? 'git', args, {
    cwd,
    env: { ...NON_INTERACTIVE, ...opts.env },
    redact: opts.redact,
    allowedExitCodes: opts.allowedExitCodes,
    timeoutMs: opts.timeoutMs,
  });
}

/** The full SHA of `commit` in the repository at `cwd`; throws naming the commit when it is unknown. */
export async function resolveCommit(cwd: string, commit: string, opts: GitOptions = {}): Promise<string> {
  const res = await git(cwd, ['rev-parse', '--verify', '--quiet', '--end-of-options', `${commit}^{commit}`], {
    ...opts,
    allowedExitCodes: 'any',
  });
  if (res.exitCode !== 0) {
    throw new HillclimbError(`commit ${JSON.stringify(commit)} not found in ${cwd}`);
  }
  return res.stdout.trim();
}

/** The SHA `refs/heads/<branch>` points at, or undefined when the branch does not exist. */
export async function branchSha(
  cwd: string,
  branch: string,
  opts: GitOptions = {},
): Promise<string | undefined> {
  const res = await git(
    cwd,
    ['rev-parse', '--verify', '--quiet', '--end-of-options', `refs/heads/${branch}`],
    {
      ...opts,
      allowedExitCodes: 'any',
    },
  );
  return res.exitCode === 0 ? res.stdout.trim() : undefined;
}

/** The SHA of `refs/heads/<branch>` on `remote` (a URL or path), or undefined when it has no such branch. */
export async function remoteBranchSha(
  cwd: string,
  remote: string,
  branch: string,
  opts: GitOptions = {},
): Promise<string | undefined> {
  assertRemote(remote);
  const res = await git(cwd, ['ls-remote', '--heads', remote, `refs/heads/${branch}`], opts);
  const line = res.stdout.split('\n').find((l) => l.endsWith(`\trefs/heads/${branch}`));
  return line?.split('\t')[0];
}

/** Worktrees (paths) that have `branch` checked out. */
export async function worktreesOnBranch(
  cwd: string,
  branch: string,
  opts: GitOptions = {},
): Promise<string[]> {
  const res = await git(cwd, ['worktree', 'list', '--porcelain'], opts);
  const found: string[] = [];
  let current = '';
  for (const line of res.stdout.split('\n')) {
    if (line.startsWith('worktree ')) current = line.slice('worktree '.length);
    if (line === `branch refs/heads/${branch}`) found.push(current);
  }
  return found;
}

/** Point `refs/heads/<branch>` at `sha` in the repository at `cwd`. */
export async function updateBranch(
  cwd: string,
  branch: string,
  sha: string,
  opts: GitOptions = {},
): Promise<void> {
  await git(cwd, ['update-ref', '-m', 'hillclimb: publish iteration', `refs/heads/${branch}`, sha], opts);
}

/** A commit of a branch, as `foreignCommits` reports it. */
export interface BranchCommit {
  sha: string;
  subject: string;
  author: string;
  committer: string;
  committerEmail: string;
}

/**
 * The committer addresses of hillclimb's own commits: the harness (src/workspace/git.ts
 * HARNESS_IDENTITY) and every agent (src/agent/environment.ts agentIdentity: `<agent>-agent@…`).
 */
const OWN_COMMITTER = /^(?:hillclimb|[\w.-]+-agent)@users\.noreply\.invalid$/;

/** Whether a commit was made by hillclimb (the harness or an agent it ran), judged by its committer. */
export function isOwnCommit(c: Pick<BranchCommit, 'committerEmail'>): boolean {
  return OWN_COMMITTER.test(c.committerEmail);
}

/**
 * Commits reachable from `oldTip` but not from `newSha` that hillclimb did not make: what a force
 * update from `oldTip` to `newSha` would throw away of somebody else's work (a reviewer's fix-up, a
 * "Update branch" merge). Both commits must be in the repository at `cwd`.
 */
export async function foreignCommits(
  cwd: string,
  oldTip: string,
  newSha: string,
  opts: GitOptions = {},
): Promise<BranchCommit[]> {
  const res = await git(
    cwd,
    ['log', '--format=%H%x00%s%x00%an <%ae>%x00%cn <%ce>%x00%ce', oldTip, '--not', newSha, '--'],
    opts,
  );
  return res.stdout
    .split('\n')
    .filter((l) => l.includes('\0'))
    .map((l) => {
      const [sha, subject, author, committer, committerEmail] = l.split('\0') as [
        string,
        string,
        string,
        string,
        string,
      ];
      return { sha, subject, author, committer, committerEmail };
    })
    .filter((c) => !isOwnCommit(c));
}

/**
 * Fetch `refs/heads/<branch>` of `remote` into the repository at `cwd` without moving any of its
 * branches (the objects land in the object store, FETCH_HEAD names them). Returns the fetched SHA.
 */
export async function fetchRemoteBranch(
  cwd: string,
  remote: string,
  branch: string,
  opts: GitOptions = {},
): Promise<string> {
  assertRemote(remote);
  await git(cwd, ['fetch', '--quiet', '--no-tags', remote, `refs/heads/${branch}`], opts);
  return (await git(cwd, ['rev-parse', '--verify', 'FETCH_HEAD'], opts)).stdout.trim();
}

/**
 * Push `sha` to `refs/heads/<branch>` on `remote`, replacing what is there only when it holds nothing
 * but hillclimb's own commits. A re-run may replace its earlier commits (a new log entry, a re-measured
 * candidate), but never a reviewer's: when the branch holds commits hillclimb did not make, nothing is
 * pushed and ForeignCommitsError names them. The push is leased on the tip that was checked, so a
 * reviewer pushing between the check and the push is not overwritten either (git refuses the push).
 */
export async function pushReplacingOwnCommits(
  cwd: string,
  remote: string,
  branch: string,
  sha: string,
  opts: GitOptions = {},
): Promise<'created' | 'updated' | 'unchanged'> {
  const tip = await remoteBranchSha(cwd, remote, branch, opts);
  if (tip === sha) return 'unchanged';
  if (tip !== undefined) {
    const fetched = await fetchRemoteBranch(cwd, remote, branch, opts);
    const theirs = await foreignCommits(cwd, fetched, sha, opts);
    if (theirs.length > 0) throw new ForeignCommitsError(branch, remote, theirs);
  }
  assertRemote(remote);
  const lease = `--force-with-lease=refs/heads/${branch}:${tip ?? ''}`;
  await git(cwd, ['push', lease, '--porcelain', remote, `${sha}:refs/heads/${branch}`], opts);
  return tip === undefined ? 'created' : 'updated';
}

/** Force-push `sha` to `refs/heads/<branch>` on `remote` (a URL or path). */
export async function forcePush(
  cwd: string,
  remote: string,
  branch: string,
  sha: string,
  opts: GitOptions = {},
): Promise<ExecResult> {
  assertRemote(remote);
  return git(cwd, ['push', '--force', '--porcelain', remote, `${sha}:refs/heads/${branch}`], opts);
}

/** A remote that starts with `-` would be read as an option. */
function assertRemote(remote: string): void {
  if (remote === '' || remote.startsWith('-')) {
    throw new HillclimbError(`invalid git remote ${JSON.stringify(remote)}`);
  }
}
