/** Real git repositories in temp folders for forge tests: a working repo and a bare "remote". */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const IDENTITY = ['-c', 'user.name=hillclimb test', '-c', 'user.email=test@hillclimb.invalid'];

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
