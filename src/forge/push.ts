/**
 * The forges' push policy: replace a PR branch only when it holds nothing but hillclimb's own commits.
 * The git plumbing it uses is src/git's.
 */
import {
  assertRemote,
  fetchRemoteBranch,
  foreignCommits,
  type GitOptions,
  remoteBranchSha,
  runGit,
} from '../git/index.js';
import { ForeignCommitsError } from './errors.js';

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
  await runGit(['push', lease, '--porcelain', remote, `${sha}:refs/heads/${branch}`], { ...opts, cwd });
  return tip === undefined ? 'created' : 'updated';
}
