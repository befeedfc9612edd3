// `npm run release -- <version>` on a clone of this repository: one commit with the version, the
// changelog entry and bundles that match the tree, an annotated tag, nothing pushed; and refusals that
// change nothing.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, tempDir } from '../helpers/paths.js';

const IDENTITY = {
  GIT_AUTHOR_NAME: 'Release Manager',
  GIT_AUTHOR_EMAIL: 'release@example.com',
  GIT_COMMITTER_NAME: 'Release Manager',
  GIT_COMMITTER_EMAIL: 'release@example.com',
};

describe('npm run release', () => {
  const t = tempDir('hc-release-');
  const clone = join(t.dir, 'hillclimb');
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: clone, encoding: 'utf8', env: { ...process.env, ...IDENTITY } }).trim();
  const release = (...args: string[]) =>
    spawnSync(process.execPath, [join(clone, 'scripts', 'release.mjs'), ...args], {
      cwd: clone,
      encoding: 'utf8',
      env: { ...process.env, ...IDENTITY },
    });
  const version = () =>
    (JSON.parse(readFileSync(join(clone, 'package.json'), 'utf8')) as { version: string }).version;
  let before = '';
  let current = '';
  let first: ReturnType<typeof release>;

  beforeAll(() => {
    execFileSync('git', ['clone', '-q', REPO_ROOT, clone]);
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(clone, 'node_modules'));
    // A commit since the (absent) last release, so the entry has a subject to list.
    writeFileSync(join(clone, 'NOTES.txt'), 'a change\n');
    git('add', 'NOTES.txt');
    git('commit', '-q', '-m', 'docs: a change worth a release');
    before = git('rev-parse', 'HEAD');
    current = version();
    first = release('99.0.0');
  }, 120_000);
  afterAll(() => t.cleanup());

  it('makes one commit with the version, the changelog entry and the rebuilt bundles, and tags it', () => {
    expect(first.status, first.stderr).toBe(0);
    const sha = git('rev-parse', 'HEAD');
    expect(git('rev-parse', 'HEAD^')).toBe(before);
    expect(git('log', '-1', '--format=%s')).toBe('release: v99.0.0');
    expect(git('rev-parse', 'v99.0.0^{commit}')).toBe(sha);
    expect(git('cat-file', '-t', 'v99.0.0')).toBe('tag');
    expect(version()).toBe('99.0.0');
    const lock = JSON.parse(readFileSync(join(clone, 'package-lock.json'), 'utf8')) as {
      version: string;
      packages: Record<string, { version: string }>;
    };
    expect([lock.version, lock.packages['']!.version]).toEqual(['99.0.0', '99.0.0']);
    const changelog = readFileSync(join(clone, 'CHANGELOG.md'), 'utf8');
    expect(changelog).toMatch(/^## v99\.0\.0 — \d{4}-\d{2}-\d{2}$/m);
    expect(changelog).toContain('- docs: a change worth a release');
    // The tree is exactly the commit, and the committed bundles are the ones this tree builds.
    expect(git('status', '--porcelain', '--untracked-files=no')).toBe('');
    execFileSync(process.execPath, [join(clone, 'scripts', 'build.mjs'), '--check'], { cwd: clone });
    expect(first.stdout).toContain(`uses: <owner>/hillclimb/actions/<name>@${sha} # v99.0.0`);
    expect(first.stdout).toContain(`hillclimb init --hillclimb-ref ${sha}`);
  });

  it('a package packed from the release commit records it (prepack), and only from that commit', () => {
    const stampFile = join(clone, 'dist', 'release.json');
    const stampIt = () =>
      execFileSync(process.execPath, [join(clone, 'scripts', 'stamp-release.mjs')], {
        cwd: clone,
        stdio: 'pipe',
      });
    stampIt();
    expect(JSON.parse(readFileSync(stampFile, 'utf8'))).toEqual({
      version: '99.0.0',
      commit: git('rev-parse', 'HEAD'),
      repository: null, // this clone's origin is a folder, not GitHub
    });
    git('commit', '-q', '--allow-empty', '-m', 'after the release');
    stampIt();
    expect(existsSync(stampFile)).toBe(false);
    git('reset', '-q', '--hard', 'HEAD^');
  });

  it('pushes nothing', () => {
    expect(git('ls-remote', '--tags', 'origin', 'v99.0.0')).toBe('');
    expect(git('rev-parse', 'origin/HEAD')).not.toBe(git('rev-parse', 'HEAD'));
  });

  it('the next release lists only what came since the last one', () => {
    writeFileSync(join(clone, 'NOTES.txt'), 'another change\n');
    git('commit', '-q', '-am', 'fix: the second change');
    const r = release('99.1.0');
    expect(r.status, r.stderr).toBe(0);
    const changelog = readFileSync(join(clone, 'CHANGELOG.md'), 'utf8');
    const entry = changelog.slice(changelog.indexOf('## v99.1.0'), changelog.indexOf('## v99.0.0'));
    expect(entry).toContain('Since v99.0.0:');
    expect(entry).toContain('- fix: the second change');
    expect(entry).not.toContain('a change worth a release');
    expect(changelog.indexOf('## v99.1.0')).toBeLessThan(changelog.indexOf('## v99.0.0'));
  });

  it.each([
    [['not-a-version'], /is not a version x\.y\.z/],
    [['1.0'], /is not a version x\.y\.z/],
    [[], /usage: npm run release -- <version>/],
    [['99.1.0'], /is not after the current version 99\.1\.0/],
    [['0.0.1'], /is not after the current version/],
  ])('refuses %j and changes nothing', (args, message) => {
    const head = git('rev-parse', 'HEAD');
    const r = release(...args);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(git('rev-parse', 'HEAD')).toBe(head);
    expect(git('status', '--porcelain', '--untracked-files=no')).toBe('');
  });

  it('refuses a tree with uncommitted changes, naming them', () => {
    writeFileSync(join(clone, 'NOTES.txt'), 'uncommitted\n');
    const r = release('99.2.0');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('uncommitted changes');
    expect(r.stderr).toContain('NOTES.txt');
    expect(version()).toBe('99.1.0');
    git('checkout', '--', 'NOTES.txt');
  });

  it('started from the version package.json had', () => {
    expect(current).not.toBe('99.0.0');
  });
});
