/**
 * The few git commands the forges need (validate a branch name, resolve a commit, read, move and push
 * a branch), run through src/exec with argument arrays. src/workspace owns git for the loop; this stays
 * small so the forge does not depend on it.
 */
import { type ExecOptions, type ExecResult, run } from '../exec/exec.js';
import { HillclimbError } from '../util/errors.js';

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

/** Throw unless `branch` is a valid branch name (git's own rules, no `@{…}` expansion, no leading `-`). */
export async function assertBranchName(cwd: string, branch: string, opts: GitOptions = {}): Promise<void> {
  const res = await git(cwd, ['check-ref-format', `refs/heads/${branch}`], {
    ...opts,
    allowedExitCodes: 'any',
  });
  if (branch === '' || branch.startsWith('-') || res.exitCode !== 0) {
    throw new HillclimbError(`invalid branch name ${JSON.stringify(branch)}`, {
      hint: 'branch names follow git check-ref-format (no spaces, "..", "~", "^", ":" or trailing ".lock")',
    });
  }
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
