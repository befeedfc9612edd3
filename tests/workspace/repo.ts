// Real git repositories in temp folders for the workspace and agent tests.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { tempDir } from '../helpers/paths.js';

export const TEST_IDENTITY = { name: 'Test Person', email: 'test@example.invalid' };

/** Run git in `cwd` and return stdout (throws on a non-zero exit). */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: TEST_IDENTITY.name,
      GIT_AUTHOR_EMAIL: TEST_IDENTITY.email,
      GIT_COMMITTER_NAME: TEST_IDENTITY.name,
      GIT_COMMITTER_EMAIL: TEST_IDENTITY.email,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Write files (creating folders), relative to `root`. */
export function writeFiles(root: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    const abs = join(root, path);
    mkdirSync(dirname(abs), { recursive: true });
    writeFileSync(abs, content);
  }
}

/** Write files, stage everything and commit; returns the new HEAD. */
export function commitFiles(root: string, message: string, files: Record<string, string>): string {
  writeFiles(root, files);
  git(root, 'add', '--all');
  git(root, 'commit', '--quiet', '--no-gpg-sign', '-m', message);
  return git(root, 'rev-parse', 'HEAD').trim();
}

export interface TestRepo {
  root: string;
  /** The temp folder holding the repo (and room for worktrees, patches, remotes). */
  base: string;
  cleanup: () => void;
}

/** A fresh repo on branch main with one commit of `files`. */
export function makeRepo(files: Record<string, string> = { 'README.md': 'hello\n' }): TestRepo {
  const t = tempDir('hc-ws-');
  const root = join(t.dir, 'repo');
  mkdirSync(root);
  git(root, 'init', '--quiet', '--initial-branch=main');
  git(root, 'config', 'user.name', TEST_IDENTITY.name);
  git(root, 'config', 'user.email', TEST_IDENTITY.email);
  git(root, 'config', 'commit.gpgsign', 'false');
  commitFiles(root, 'initial', files);
  return { root, base: t.dir, cleanup: t.cleanup };
}
