// Shared builders for the compute tests: real git repositories in temp folders and minimal configs.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseConfig } from '../../src/config/load.js';
import type { HillclimbConfig } from '../../src/config/types.js';
import { run } from '../../src/exec/exec.js';
import { MINIMAL_CONFIG } from '../helpers/config.js';
import { tempDir } from '../helpers/paths.js';

export const GIT_ENV = {
  GIT_AUTHOR_NAME: 'hc test',
  GIT_AUTHOR_EMAIL: 'hc@example.invalid',
  GIT_COMMITTER_NAME: 'hc test',
  GIT_COMMITTER_EMAIL: 'hc@example.invalid',
};

/** A git repository with `files` committed on main; returns its folder and a cleanup. */
export async function gitRepo(files: Record<string, string>): Promise<{ dir: string; cleanup: () => void }> {
  const t = tempDir('hc-repo-');
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(t.dir, path)), { recursive: true });
    writeFileSync(join(t.dir, path), content);
  }
  const git = (...args: string[]) => run('git', args, { cwd: t.dir, env: GIT_ENV });
  await git('init', '-q', '-b', 'main');
  await git('add', '-A');
  await git('commit', '-q', '-m', 'init');
  return t;
}

const TARGET = MINIMAL_CONFIG;

/** A schema-valid config with a `compute:` section given as YAML text (indented two spaces per level). */
export function configWith(compute: string, root = '/repo'): HillclimbConfig {
  return parseConfig(`${TARGET}compute:\n${compute}`, join(root, 'hillclimb.yml'));
}
