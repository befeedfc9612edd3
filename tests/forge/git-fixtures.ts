/**
 * Real git repositories in temp folders for forge tests: a working repo and a bare "remote". Commits
 * are made as the harness (the identity of what the loop publishes), except `personCommitOn`, which
 * stands for a reviewer's work on a branch.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** src/workspace/git.ts HARNESS_IDENTITY. */
const IDENTITY = ['-c', 'user.name=hillclimb', '-c', 'user.email=hillclimb@users.noreply.invalid'];
export const PERSON = { name: 'Rae Viewer', email: 'rae@example.com' };

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', [...IDENTITY, ...args], {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  }).trim();
}

/** A repository on branch main with one commit. */
export function initRepo(dir: string): string {
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  commitFile(dir, 'README.md', '# kernels\n', 'initial commit');
  return dir;
}

/** Write a file, commit it on the current HEAD, return the commit SHA. */
export function commitFile(repo: string, path: string, content: string, message: string): string {
  const file = join(repo, path);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, content);
  git(repo, 'add', '--', path);
  git(repo, 'commit', '-q', '-m', message);
  return git(repo, 'rev-parse', 'HEAD');
}

/** A commit on a new branch off main, leaving main checked out. Returns the SHA. */
export function commitOnBranch(repo: string, branch: string, path: string, content: string): string {
  git(repo, 'checkout', '-q', '-b', branch, 'main');
  const sha = commitFile(repo, path, content, `change on ${branch}`);
  git(repo, 'checkout', '-q', 'main');
  return sha;
}

/** A detached commit (no branch points at it). */
export function detachedCommit(repo: string, path: string, content: string): string {
  git(repo, 'checkout', '-q', '--detach', 'main');
  const sha = commitFile(repo, path, content, `detached change to ${path}`);
  git(repo, 'checkout', '-q', 'main');
  return sha;
}

/**
 * A person's commit on top of `branch` of the bare repository `bare` (as a reviewer pushing a fix-up
 * to a PR branch would make). Returns its SHA.
 */
export function personCommitOn(bare: string, branch: string, path: string, content: string): string {
  const clone = mkdtempSync(join(tmpdir(), 'hc-reviewer-'));
  try {
    execFileSync('git', ['clone', '-q', '--branch', branch, bare, clone]);
    const person = ['-c', `user.name=${PERSON.name}`, '-c', `user.email=${PERSON.email}`];
    writeFileSync(join(clone, path), content);
    execFileSync('git', ['-C', clone, 'add', '--', path]);
    execFileSync('git', ['-C', clone, ...person, 'commit', '-q', '-m', 'Reviewer fix-up']);
    execFileSync('git', ['-C', clone, 'push', '-q', 'origin', `HEAD:refs/heads/${branch}`]);
    return execFileSync('git', ['-C', clone, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  } finally {
    rmSync(clone, { recursive: true, force: true });
  }
}

/** An empty bare repository, then `main` pushed to it from `from`. */
export function initBareRemote(dir: string, from: string): string {
  mkdirSync(dir, { recursive: true });
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', dir]);
  git(from, 'push', '-q', dir, 'main:refs/heads/main');
  return dir;
}

export function bareBranchSha(bare: string, branch: string): string | undefined {
  try {
    return execFileSync(
      'git',
      ['--git-dir', bare, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`],
      {
        encoding: 'utf8',
      },
    ).trim();
  } catch {
    return undefined;
  }
}
