/**
 * Reading, moving and pushing branches of a repository by path: the plumbing the forges build on
 * (branch names are checked by src/util/branch-name.ts before they get here). Remotes are URLs or
 * paths; one starting with `-` is refused, so it can never be read as an option.
 */
import type { ExecResult } from '../exec/index.js';
import { HillclimbError } from '../util/index.js';
import { type GitCommandOptions, runGit } from './command.js';
import { isOwnCommit } from './identity.js';

/** What every helper here passes on to runGit (the repository is the `cwd` argument). */
export type GitOptions = Omit<GitCommandOptions, 'cwd' | 'input'>;

/** The full SHA of `commit` in the repository at `cwd`; throws naming the commit when it is unknown. */
export async function resolveCommit(cwd: string, commit: string, opts: GitOptions = {}): Promise<string> {
  const res = await runGit(['rev-parse', '--verify', '--quiet', '--end-of-options', `${commit}^{commit}`], {
    ...opts,
    cwd,
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
  const res = await runGit(['rev-parse', '--verify', '--quiet', '--end-of-options', `refs/heads/${branch}`], {
    ...opts,
    cwd,
    allowedExitCodes: 'any',
  });
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
  const res = await runGit(['ls-remote', '--heads', remote, `refs/heads/${branch}`], { ...opts, cwd });
  const line = res.stdout.split('\n').find((l) => l.endsWith(`\trefs/heads/${branch}`));
  return line?.split('\t')[0];
}

/** Worktrees (paths) that have `branch` checked out. */
export async function worktreesOnBranch(
  cwd: string,
  branch: string,
  opts: GitOptions = {},
): Promise<string[]> {
  const res = await runGit(['worktree', 'list', '--porcelain'], { ...opts, cwd });
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
  await runGit(['update-ref', '-m', 'hillclimb: publish iteration', `refs/heads/${branch}`, sha], {
    ...opts,
    cwd,
  });
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
  const res = await runGit(
    ['log', '--format=%H%x00%s%x00%an <%ae>%x00%cn <%ce>%x00%ce', oldTip, '--not', newSha, '--'],
    { ...opts, cwd },
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
  await runGit(['fetch', '--quiet', '--no-tags', remote, `refs/heads/${branch}`], { ...opts, cwd });
  return (await runGit(['rev-parse', '--verify', 'FETCH_HEAD'], { ...opts, cwd })).stdout.trim();
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
  return runGit(['push', '--force', '--porcelain', remote, `${sha}:refs/heads/${branch}`], { ...opts, cwd });
}

/** A remote that starts with `-` would be read as an option. */
export function assertRemote(remote: string): void {
  if (remote === '' || remote.startsWith('-')) {
    throw new HillclimbError(`invalid git remote ${JSON.stringify(remote)}`);
  }
}
