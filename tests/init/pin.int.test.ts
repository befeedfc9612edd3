// Which hillclimb commit and repository the written workflows pin, when no flag says.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { githubRepository, resolvePin } from '../../src/init/pin.js';
import { tempDir } from '../helpers/paths.js';

describe('githubRepository', () => {
  it.each([
    ['git+https://github.com/acme/hillclimb.git', 'acme/hillclimb'],
    ['https://github.com/acme/hill.climb', 'acme/hill.climb'],
    ['git@github.com:acme/hillclimb.git', 'acme/hillclimb'],
    ['https://gitlab.com/acme/hillclimb.git', undefined],
  ])('%s → %s', (url, repo) => {
    expect(githubRepository(url)).toBe(repo);
  });
});

describe('resolvePin from an installed checkout', () => {
  let pkg: { dir: string; cleanup: () => void };
  const git = (...args: string[]) => execFileSync('git', args, { cwd: pkg.dir, encoding: 'utf8' }).trim();
  beforeEach(() => {
    pkg = tempDir('hc-init-pkg-');
    mkdirSync(join(pkg.dir, 'actions', 'iterate'), { recursive: true });
    writeFileSync(join(pkg.dir, 'actions', 'iterate', 'action.yml'), 'name: iterate\n');
    writeFileSync(
      join(pkg.dir, 'package.json'),
      JSON.stringify({
        name: 'hillclimb',
        repository: { type: 'git', url: 'git+https://github.com/acme/hillclimb.git' },
      }),
    );
    git('init', '-q', '-b', 'main');
    git('add', '-A');
    git('-c', 'user.name=t', '-c', 'user.email=t@t.invalid', 'commit', '-qm', 'release');
  });
  afterEach(() => pkg.cleanup());

  it("pins its HEAD and package.json's repository", async () => {
    expect(await resolvePin(pkg.dir, {})).toEqual({
      repository: 'acme/hillclimb',
      commit: git('rev-parse', 'HEAD'),
    });
  });

  it("falls back to origin's GitHub URL, and flags win over both", async () => {
    writeFileSync(join(pkg.dir, 'package.json'), JSON.stringify({ name: 'hillclimb' }));
    git('-c', 'user.name=t', '-c', 'user.email=t@t.invalid', 'commit', '-qam', 'no repository field');
    git('remote', 'add', 'origin', 'git@github.com:fork/hillclimb.git');
    expect((await resolvePin(pkg.dir, {})).repository).toBe('fork/hillclimb');
    const ref = 'b'.repeat(40);
    expect(await resolvePin(pkg.dir, { repository: 'x/y', ref })).toEqual({ repository: 'x/y', commit: ref });
  });

  it('refuses when its actions have changes no commit holds', async () => {
    writeFileSync(join(pkg.dir, 'actions', 'iterate', 'action.yml'), 'name: iterate (edited)\n');
    await expect(resolvePin(pkg.dir, {})).rejects.toThrow(
      /uncommitted changes in actions\/iterate\/action\.yml/,
    );
  });

  it("refuses an install inside someone else's work tree (node_modules), which is no checkout of its own", async () => {
    const nested = join(pkg.dir, 'node_modules', 'hillclimb');
    mkdirSync(nested, { recursive: true });
    writeFileSync(join(nested, 'package.json'), JSON.stringify({ name: 'hillclimb' }));
    await expect(resolvePin(nested, { repository: 'acme/hillclimb' })).rejects.toThrow(
      /is not a git checkout of its own/,
    );
  });

  it('refuses when it is not a git checkout and no flags say', async () => {
    const t = tempDir('hc-init-nogit-');
    try {
      await expect(resolvePin(t.dir, {})).rejects.toThrow(/not a git checkout/);
      await expect(resolvePin(t.dir, { repository: 'acme/hillclimb' })).rejects.toThrow(/not a git checkout/);
    } finally {
      t.cleanup();
    }
  });
});

describe('resolvePin from a packed release (npm or tarball: no git)', () => {
  let pkg: { dir: string; cleanup: () => void };
  const commit = 'c'.repeat(40);
  const stamp = (content: unknown) => {
    mkdirSync(join(pkg.dir, 'dist'), { recursive: true });
    writeFileSync(
      join(pkg.dir, 'dist', 'release.json'),
      typeof content === 'string' ? content : JSON.stringify(content),
    );
  };
  beforeEach(() => {
    pkg = tempDir('hc-init-packed-');
    writeFileSync(join(pkg.dir, 'package.json'), JSON.stringify({ name: 'hillclimb' }));
  });
  afterEach(() => pkg.cleanup());

  it('pins the commit and repository its release stamp records; flags win', async () => {
    stamp({ version: '1.2.3', commit, repository: 'acme/hillclimb' });
    expect(await resolvePin(pkg.dir, {})).toEqual({ repository: 'acme/hillclimb', commit });
    const ref = 'd'.repeat(40);
    expect(await resolvePin(pkg.dir, { ref })).toEqual({ repository: 'acme/hillclimb', commit: ref });
  });

  it('a stamp without a repository needs --hillclimb-repo', async () => {
    stamp({ version: '1.2.3', commit, repository: null });
    await expect(resolvePin(pkg.dir, {})).rejects.toThrow(/cannot tell which GitHub repository/);
    expect(await resolvePin(pkg.dir, { repository: 'fork/hillclimb' })).toEqual({
      repository: 'fork/hillclimb',
      commit,
    });
  });

  it.each([
    ['{not json', /release\.json: not valid JSON/],
    [
      { commit: 'c'.repeat(12), repository: 'acme/hillclimb' },
      /"commit" is not a full 40-character commit SHA/,
    ],
    [{ commit, repository: 'acme/hill climb; rm -rf /' }, /"repository" is not an owner\/name/],
  ])('refuses a broken stamp %j, naming the file', async (content, message) => {
    stamp(content);
    await expect(resolvePin(pkg.dir, {})).rejects.toThrow(message);
  });
});
