/**
 * A repository the real workflows can run in under act: the toy target (tests/loop/toy-repo.ts, a
 * stdlib-Python kernel and protected harness, so no JAX install) plus this project's workflow files and
 * action bundles exactly as committed, pushed to a local bare repository that stands for GitHub's copy.
 * act runs in a clone of it whose origin is the repository's github.com URL; the act world's git config
 * sends that URL (and the API host's, where the GitHub forge pushes) to the bare repository.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../helpers/paths.js';
import { makeToyRepo, type STANDARD_PATCHES } from '../../loop/toy-repo.js';

export const OWNER_REPO = 'octo/toy';
export const GITHUB_URL = `https://github.com/${OWNER_REPO}.git`;

const IDENTITY = {
  GIT_AUTHOR_NAME: 'Octo Cat',
  GIT_AUTHOR_EMAIL: 'octocat@example.com',
  GIT_COMMITTER_NAME: 'Octo Cat',
  GIT_COMMITTER_EMAIL: 'octocat@example.com',
};

export interface WorkflowRepo {
  /** The maintainers' clone: where changes are made and pushed from. */
  seed: string;
  /** The "GitHub" copy. */
  bare: string;
  /** The clone act runs in (origin: the github.com URL). */
  work: string;
}

export function git(dir: string, env: Record<string, string>, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, ...IDENTITY, ...env },
  });
}

/**
 * The toy target with the workflows and actions, on main of a bare repository; `gitEnv` is the act
 * world's environment (its git config rewrites the github.com URL).
 */
export function makeWorkflowRepo(
  dir: string,
  config: string,
  patches: typeof STANDARD_PATCHES,
  gitEnv: Record<string, string>,
): WorkflowRepo {
  const seed = join(dir, 'seed');
  const bare = join(dir, 'remote.git');
  const work = join(dir, 'work');
  makeToyRepo(seed, patches, config);
  // The workflows, the actions' committed bundles and what the bundles read from the package root
  // (package.json, schemas/, session_directives/), as this repository holds them (docs/setup.md).
  cpSync(join(REPO_ROOT, '.github', 'workflows'), join(seed, '.github', 'workflows'), { recursive: true });
  for (const part of ['package.json', 'schemas', 'session_directives']) {
    cpSync(join(REPO_ROOT, part), join(seed, part), { recursive: true });
  }
  for (const action of readdirSync(join(REPO_ROOT, 'actions'))) {
    for (const part of ['action.yml', 'dist']) {
      cpSync(join(REPO_ROOT, 'actions', action, part), join(seed, 'actions', action, part), {
        recursive: true,
      });
    }
  }
  // The workflows install kernels/requirements.txt into .venv; the toy needs nothing beyond the stdlib.
  mkdirSync(join(seed, 'kernels'), { recursive: true });
  writeFileSync(join(seed, 'kernels', 'requirements.txt'), '# the toy target runs on the standard library\n');
  writeFileSync(join(seed, '.gitignore'), '.hillclimb/\n__pycache__/\n.venv/\n');
  git(seed, {}, 'add', '-A');
  git(seed, {}, 'commit', '-q', '-m', 'workflows and actions');
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
  git(seed, {}, 'push', '-q', bare, 'main:refs/heads/main');
  execFileSync('git', ['clone', '-q', bare, work]);
  git(work, gitEnv, 'remote', 'set-url', 'origin', GITHUB_URL);
  return { seed, bare, work };
}

/**
 * Bring the act clone up to the remote, as a job's checkout with `fetch-depth: 0` would see it: every
 * branch as a remote-tracking ref, and `ref` checked out: a branch of the remote (checked out as that
 * branch), or another ref of the remote such as `refs/pull/1/merge` (detached, as for pull_request).
 * Returns the commit checked out (github.sha).
 */
export function syncWork(repo: WorkflowRepo, gitEnv: Record<string, string>, ref = 'main'): string {
  git(repo.work, gitEnv, 'fetch', '-q', '--prune', 'origin', '+refs/heads/*:refs/remotes/origin/*');
  if (ref.startsWith('refs/')) {
    git(repo.work, gitEnv, 'fetch', '-q', 'origin', ref);
    git(repo.work, gitEnv, 'checkout', '-q', '--detach', 'FETCH_HEAD');
  } else {
    git(repo.work, gitEnv, 'checkout', '-q', '-B', ref, `origin/${ref}`);
  }
  return git(repo.work, gitEnv, 'rev-parse', 'HEAD').trim();
}

/** A commit (or other object) a ref of the remote names. */
export function remoteRef(repo: WorkflowRepo, ref: string): string {
  return execFileSync('git', ['--git-dir', repo.bare, 'rev-parse', '--verify', ref], {
    encoding: 'utf8',
  }).trim();
}

/** The files of a branch of the remote, by path (text). */
export function remoteFile(repo: WorkflowRepo, ref: string, path: string): string {
  return execFileSync('git', ['--git-dir', repo.bare, 'show', `${ref}:${path}`], { encoding: 'utf8' });
}

export function remoteFiles(repo: WorkflowRepo, ref: string): string[] {
  return execFileSync('git', ['--git-dir', repo.bare, 'ls-tree', '-r', '--name-only', ref], {
    encoding: 'utf8',
  })
    .split('\n')
    .filter(Boolean);
}

export function remoteBranches(repo: WorkflowRepo): string[] {
  return execFileSync(
    'git',
    ['--git-dir', repo.bare, 'for-each-ref', '--format=%(refname:short)', 'refs/heads'],
    {
      encoding: 'utf8',
    },
  )
    .split('\n')
    .filter(Boolean);
}
