import { existsSync, mkdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HillclimbError } from '../../src/util/errors.js';
import { memoryLogger } from '../../src/util/log.js';
import { Git, GitError, HARNESS_IDENTITY, STASH_PIN_PREFIX } from '../../src/workspace/git.js';
import { tempDir } from '../helpers/paths.js';
import { commitFiles, git, makeRepo, type TestRepo, writeFiles } from './repo.js';

const KERNEL = 'kernels/gdn/chunk.py';
const HARNESS = 'kernels/harness/spec.json';

const repos: TestRepo[] = [];
const gits: Git[] = [];
afterEach(async () => {
  for (const g of gits.splice(0)) await g.close();
  for (const r of repos.splice(0)) r.cleanup();
});

async function setup(files?: Record<string, string>): Promise<{ repo: TestRepo; g: Git }> {
  const repo = makeRepo(
    files ?? {
      [KERNEL]: 'def chunk(x):\n    return x\n',
      [HARNESS]: '{"atol": 1e-5}\n',
      'README.md': 'hi\n',
    },
  );
  repos.push(repo);
  const g = await Git.create(repo.root, { lockRetryDelayMs: 100 });
  gits.push(g);
  return { repo, g };
}

function worktreeCount(root: string): number {
  return git(root, 'worktree', 'list', '--porcelain')
    .split('\n')
    .filter((l) => l.startsWith('worktree ')).length;
}

describe('Git.create', () => {
  it('finds the top of the work tree from a subfolder', async () => {
    const { repo } = await setup();
    const g = await Git.create(join(repo.root, 'kernels', 'gdn'));
    expect(g.root).toBe(repo.root);
    expect(g.binary).toMatch(/\/git$/);
  });

  it('refuses a folder that is not in a work tree, naming it', async () => {
    const t = tempDir();
    try {
      const err = await Git.create(t.dir).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(HillclimbError);
      expect((err as Error).message).toContain(t.dir);
      expect((err as Error).message).toContain('not inside a git work tree');
    } finally {
      t.cleanup();
    }
  });
});

describe('reading state', () => {
  it('resolves HEAD, refs and the current branch, detached or not', async () => {
    const { repo, g } = await setup();
    const head = git(repo.root, 'rev-parse', 'HEAD').trim();
    expect(await g.head()).toBe(head);
    expect(await g.revParse('main')).toBe(head);
    expect(await g.tryRevParse('no-such-branch')).toBeUndefined();
    await expect(g.revParse('no-such-branch')).rejects.toThrow(/does not name a commit/);
    await expect(g.revParse('--all')).rejects.toThrow(/invalid git revision/);
    expect(await g.currentBranch()).toBe('main');
    git(repo.root, 'switch', '--quiet', '--detach', 'HEAD');
    expect(await g.currentBranch()).toBeUndefined();
  });

  it('parses status: modified, staged, renamed, untracked in subfolders, odd file names', async () => {
    const { repo, g } = await setup();
    expect(await g.isClean()).toBe(true);
    writeFiles(repo.root, { [KERNEL]: 'def chunk(x):\n    return 2 * x\n' });
    git(repo.root, 'mv', 'README.md', 'READ ME.md');
    writeFiles(repo.root, { 'notes/new file é.txt': 'x\n', 'staged.txt': 's\n' });
    git(repo.root, 'add', 'staged.txt');
    const status = await g.status();
    expect(status).toEqual(
      expect.arrayContaining([
        { kind: 'tracked', path: KERNEL, index: '.', worktree: 'M' },
        { kind: 'tracked', path: 'staged.txt', index: 'A', worktree: '.' },
        { kind: 'renamed', path: 'READ ME.md', origPath: 'README.md', index: 'R', worktree: '.' },
        { kind: 'untracked', path: 'notes/new file é.txt', index: '?', worktree: '?' },
      ]),
    );
    expect(status).toHaveLength(4);
    expect(await g.isClean()).toBe(false);
  });
});

describe('stash by SHA', () => {
  it('stashes tracked and untracked changes and restores them by SHA after the agent stashed too', async () => {
    const { repo, g } = await setup();
    writeFiles(repo.root, { [KERNEL]: 'def chunk(x):\n    return 3 * x\n', 'scratch/wip.txt': 'mine\n' });
    const sha = await g.stashChanges('hillclimb: iteration 1');
    expect(sha).toMatch(/^[0-9a-f]{40}$/);
    expect(await g.isClean()).toBe(true);
    expect(git(repo.root, 'rev-parse', `${STASH_PIN_PREFIX}${sha}`).trim()).toBe(sha);

    // The "agent": commits one thing and stashes another, so our stash is now stash@{1}.
    commitFiles(repo.root, 'agent change', { 'README.md': 'agent\n' });
    writeFiles(repo.root, { 'agent-wip.txt': 'theirs\n' });
    git(repo.root, 'stash', 'push', '--include-untracked', '-m', 'agent stash');
    const before = await g.listStashes();
    expect(before.map((s) => s.message)).toEqual(['On main: agent stash', 'On main: hillclimb: iteration 1']);
    expect(before[1]!.sha).toBe(sha);

    const restored = await g.restoreStash(sha!);
    expect(restored).toEqual({ restored: true, sha });
    expect(readFileSync(join(repo.root, KERNEL), 'utf8')).toContain('3 * x');
    expect(readFileSync(join(repo.root, 'scratch/wip.txt'), 'utf8')).toBe('mine\n');
    expect(existsSync(join(repo.root, 'agent-wip.txt'))).toBe(false);
    // Ours is gone from the list and unpinned; the agent's stash is untouched.
    const after = await g.listStashes();
    expect(after.map((s) => s.message)).toEqual(['On main: agent stash']);
    expect(git(repo.root, 'for-each-ref', STASH_PIN_PREFIX).trim()).toBe('');
    expect(worktreeCount(repo.root)).toBe(1);
  });

  it('still restores after the agent cleared the whole stash list (the pin keeps the commit)', async () => {
    const { repo, g } = await setup();
    writeFiles(repo.root, { [KERNEL]: 'def chunk(x):\n    return 4 * x\n' });
    const sha = (await g.stashChanges('iteration 2'))!;
    git(repo.root, 'stash', 'clear');
    git(repo.root, 'reflog', 'expire', '--expire=now', '--all');
    git(repo.root, 'gc', '--quiet', '--prune=now');
    expect(await g.restoreStash(sha)).toEqual({ restored: true, sha });
    expect(readFileSync(join(repo.root, KERNEL), 'utf8')).toContain('4 * x');
    expect(await g.dropStash(sha)).toBe(false);
  });

  it('keeps the stash and touches nothing when it does not apply on the new HEAD', async () => {
    const { repo, g } = await setup();
    writeFiles(repo.root, { [KERNEL]: 'def chunk(x):\n    return 5 * x\n' });
    const sha = (await g.stashChanges('iteration 3'))!;
    const head = commitFiles(repo.root, 'agent edits the same line', {
      [KERNEL]: 'def chunk(x):\n    return x + 1\n',
    });

    const r = await g.restoreStash(sha);
    expect(r.restored).toBe(false);
    expect(r.sha).toBe(sha);
    if (!r.restored) expect(r.reason).toMatch(/does not apply cleanly/);
    expect(await g.head()).toBe(head);
    expect(await g.isClean()).toBe(true);
    expect(readFileSync(join(repo.root, KERNEL), 'utf8')).toContain('x + 1');
    expect((await g.listStashes()).map((s) => s.sha)).toEqual([sha]);
    expect(git(repo.root, 'rev-parse', `${STASH_PIN_PREFIX}${sha}`).trim()).toBe(sha);
    expect(worktreeCount(repo.root)).toBe(1);
  });

  it('refuses to restore into a dirty tree, keeping the stash', async () => {
    const { repo, g } = await setup();
    writeFiles(repo.root, { [KERNEL]: 'def chunk(x):\n    return 6 * x\n' });
    const sha = (await g.stashChanges('iteration 4'))!;
    writeFiles(repo.root, { 'leftover.txt': 'agent junk\n' });
    expect(await g.restoreStash(sha)).toEqual({
      restored: false,
      sha,
      reason: 'the working tree has uncommitted changes',
    });
    expect((await g.listStashes()).map((s) => s.sha)).toEqual([sha]);
  });

  it('returns undefined for a clean tree and drops a stash by SHA whatever its index', async () => {
    const { repo, g } = await setup();
    expect(await g.stashChanges('nothing')).toBeUndefined();
    writeFiles(repo.root, { 'a.txt': 'a\n' });
    const ours = (await g.stashChanges('ours'))!;
    writeFiles(repo.root, { 'b.txt': 'b\n' });
    git(repo.root, 'stash', 'push', '--include-untracked', '-m', 'newer');
    expect(await g.dropStash(ours)).toBe(true);
    expect((await g.listStashes()).map((s) => s.message)).toEqual(['On main: newer']);
    await expect(g.dropStash('not-a-sha')).rejects.toThrow(/not a full commit SHA/);
  });
});

describe('worktrees', () => {
  it('adds detached worktrees for two arms and removes them all on close', async () => {
    const { repo, g } = await setup();
    const champion = await g.head();
    const candidate = commitFiles(repo.root, 'candidate', { [KERNEL]: 'def chunk(x):\n    return x * 1\n' });
    const a = await g.addWorktree(join(repo.base, 'arms', 'a'), champion);
    const b = await g.addWorktree(join(repo.base, 'arms', 'b'), 'HEAD');
    expect(a.commit).toBe(champion);
    expect(b.commit).toBe(candidate);
    expect(readFileSync(join(a.path, KERNEL), 'utf8')).toContain('return x\n');
    expect(readFileSync(join(b.path, KERNEL), 'utf8')).toContain('x * 1');
    expect(git(a.path, 'rev-parse', '--abbrev-ref', 'HEAD').trim()).toBe('HEAD');
    expect(worktreeCount(repo.root)).toBe(3);

    rmSync(a.path, { recursive: true, force: true }); // someone deleted one by hand
    await g.close();
    expect(worktreeCount(repo.root)).toBe(1);
    expect(existsSync(b.path)).toBe(false);
    await g.close(); // idempotent
  });
});

describe('commit detection', () => {
  it('lists commits, changed paths (renames as both paths), name-status, numstat and diff', async () => {
    const { repo, g } = await setup();
    const base = await g.head();
    git(repo.root, 'mv', HARNESS, 'kernels/gdn/spec.json');
    writeFiles(repo.root, { [KERNEL]: 'def chunk(x):\n    y = x\n    return y\n' });
    git(repo.root, 'add', '--all');
    git(repo.root, 'commit', '--quiet', '-m', 'move spec, edit kernel');
    writeFileSync(join(repo.root, 'blob.bin'), Buffer.from([0, 1, 2, 3, 0, 255]));
    const head = commitFiles(repo.root, 'binary', {});
    expect(await g.commitsBetween(base, head)).toHaveLength(2);
    expect((await g.commitsBetween(base, head)).at(-1)).toBe(head);
    expect(await g.changedPaths(base, head)).toEqual(['blob.bin', KERNEL, 'kernels/gdn/spec.json', HARNESS]);
    expect(await g.changes(base, head)).toEqual(
      expect.arrayContaining([
        { status: 'R', path: 'kernels/gdn/spec.json', oldPath: HARNESS },
        { status: 'M', path: KERNEL },
        { status: 'A', path: 'blob.bin' },
      ]),
    );
    expect(await g.numstat(base, head)).toEqual(
      expect.arrayContaining([
        { path: KERNEL, added: 2, deleted: 1 },
        { path: 'blob.bin', added: undefined, deleted: undefined },
        { path: 'kernels/gdn/spec.json', oldPath: HARNESS, added: 0, deleted: 0 },
      ]),
    );
    const text = await g.diff(base, head, { paths: [KERNEL] });
    expect(text).toContain('+    y = x');
    expect(text).not.toContain('blob.bin');
    expect(await g.isAncestor(base, head)).toBe(true);
    expect(await g.isAncestor(head, base)).toBe(false);
  });

  it('hashes the harness so that only harness changes move it', async () => {
    const { repo, g } = await setup();
    const c0 = await g.head();
    const c1 = commitFiles(repo.root, 'kernel only', { [KERNEL]: 'def chunk(x):\n    return -x\n' });
    const c2 = commitFiles(repo.root, 'harness', { [HARNESS]: '{"atol": 1e-3}\n' });
    const h = (c: string) => g.treeHash(c, ['kernels/harness']);
    expect(await h(c0)).toBe(await h(c1));
    expect(await h(c1)).not.toBe(await h(c2));
    expect(await g.treeHash(c0)).toBe(git(repo.root, 'rev-parse', `${c0}^{tree}`).trim());
    expect(await g.treeHash(c0)).not.toBe(await g.treeHash(c1));
    expect(await g.show(c2, HARNESS)).toBe('{"atol": 1e-3}\n');
    expect(await g.show(c2, 'no/such/file')).toBeUndefined();
  });
});

describe('changing history', () => {
  it('applies a patch to the index and commits it with a fixed identity and a verbatim message', async () => {
    const { repo, g } = await setup();
    const base = await g.head();
    const edited = commitFiles(repo.root, 'temp', { [KERNEL]: 'def chunk(x):\n    return x  # faster\n' });
    const patch = join(repo.base, 'change.patch');
    writeFileSync(patch, git(repo.root, 'diff', base, edited));
    git(repo.root, 'reset', '--quiet', '--hard', base);

    await g.applyPatch(patch, { check: true });
    expect(await g.isClean()).toBe(true); // --check changes nothing
    await g.applyPatch(patch);
    expect((await g.status())[0]).toMatchObject({ path: KERNEL, index: 'M' });
    const message = 'Faster chunk\n\nBody line 1\nBody line 2\n';
    const sha = await g.commit(message, {
      identity: HARNESS_IDENTITY,
      author: { name: 'codex agent', email: 'agent@example.invalid' },
    });
    expect(sha).toBe(await g.head());
    expect(git(repo.root, 'log', '-1', '--format=%an <%ae>|%cn <%ce>|%B').trim()).toBe(
      `codex agent <agent@example.invalid>|hillclimb <${HARNESS_IDENTITY.email}>|${message.trim()}`,
    );
    await expect(g.applyPatch(patch)).rejects.toBeInstanceOf(GitError);
    await expect(g.commit('empty')).rejects.toThrow(/exit code 1/);
    const empty = await g.commit('empty on purpose', { allowEmpty: true, identity: HARNESS_IDENTITY });
    expect(empty).not.toBe(sha);
  });

  it('stages everything but the excluded paths, and tells whether anything is staged', async () => {
    const { repo, g } = await setup();
    expect(await g.hasStagedChanges()).toBe(false);
    writeFiles(repo.root, { 'kernels/gdn/new.py': 'x = 1\n', '.hillclimb/result.json': '{}' });
    await g.stageAll({
      exclude: [join(repo.root, '.hillclimb/result.json'), join(repo.base, 'outside.log')],
    });
    expect(await g.status()).toEqual([
      { kind: 'tracked', path: 'kernels/gdn/new.py', index: 'A', worktree: '.' },
      { kind: 'untracked', path: '.hillclimb/result.json', index: '?', worktree: '?' },
    ]);
    expect(await g.hasStagedChanges()).toBe(true);
  });

  it('does not run repository hooks', async () => {
    const { repo, g } = await setup();
    const marker = join(repo.base, 'hook-ran');
    const hook = join(repo.root, '.git', 'hooks', 'pre-commit');
    writeFileSync(hook, `#!/bin/sh\ntouch '${marker}'\nexit 1\n`, { mode: 0o755 });
    writeFiles(repo.root, { 'x.txt': 'x\n' });
    await g.stageAll();
    await g.commit('hooks are off', { identity: HARNESS_IDENTITY });
    expect(existsSync(marker)).toBe(false);
  });

  it('reverts a commit, and aborts a conflicting revert returning the paths', async () => {
    const { repo, g } = await setup();
    const c1 = commitFiles(repo.root, 'c1', { [KERNEL]: 'def chunk(x):\n    return x + 1\n' });
    const reverted = await g.revert(c1);
    expect(reverted.status).toBe('reverted');
    expect(readFileSync(join(repo.root, KERNEL), 'utf8')).toContain('return x\n');
    expect(git(repo.root, 'log', '-1', '--format=%cn').trim()).toBe('hillclimb');

    const c2 = commitFiles(repo.root, 'c2', { [KERNEL]: 'def chunk(x):\n    return x + 2\n' });
    const head = commitFiles(repo.root, 'c3', { [KERNEL]: 'def chunk(x):\n    return x + 3\n' });
    expect(await g.revert(c2)).toEqual({ status: 'conflict', paths: [KERNEL] });
    expect(await g.head()).toBe(head);
    expect(await g.isClean()).toBe(true);
  });

  it('resets hard, creates, moves and deletes branches, and rejects bad branch names', async () => {
    const { repo, g } = await setup();
    const c0 = await g.head();
    const c1 = commitFiles(repo.root, 'c1', { 'a.txt': 'a\n' });
    await g.createBranch('hillclimb/gdn/run-1/i001', c0);
    expect(git(repo.root, 'rev-parse', 'hillclimb/gdn/run-1/i001').trim()).toBe(c0);
    await expect(g.createBranch('hillclimb/gdn/run-1/i001', c1)).rejects.toBeInstanceOf(GitError);
    await g.createBranch('hillclimb/gdn/run-1/i001', c1, { force: true });
    expect(git(repo.root, 'rev-parse', 'hillclimb/gdn/run-1/i001').trim()).toBe(c1);
    for (const bad of ['-f', 'a..b', 'a b', 'x.lock', 'a@{1}', 'q?']) {
      await expect(g.createBranch(bad, c0)).rejects.toThrow(/invalid branch name/);
    }
    await g.deleteBranch('hillclimb/gdn/run-1/i001', { force: true });
    expect(git(repo.root, 'branch', '--list', 'hillclimb/*').trim()).toBe('');

    writeFiles(repo.root, { 'a.txt': 'dirty\n', 'u.txt': 'untracked stays\n' });
    await g.resetHard(c0);
    expect(await g.head()).toBe(c0);
    expect(existsSync(join(repo.root, 'a.txt'))).toBe(false);
    expect(await g.checkBranchName('ok/name')).toBe(true);
    await g.checkout(c1, { detach: true });
    expect(await g.currentBranch()).toBeUndefined();
    await g.checkout('main');
    expect(await g.currentBranch()).toBe('main');
  });
});

describe('fetch and merge from a remote', () => {
  function withRemote(repo: TestRepo): { remote: string; other: string } {
    const remote = join(repo.base, 'remote.git');
    git(repo.base, 'init', '--quiet', '--bare', '--initial-branch=main', remote);
    git(repo.root, 'remote', 'add', 'origin', remote);
    git(repo.root, 'push', '--quiet', 'origin', 'main');
    const other = join(repo.base, 'other');
    git(repo.base, 'clone', '--quiet', remote, other);
    return { remote, other };
  }

  it('fetches a branch and merges it', async () => {
    const { repo, g } = await setup();
    const { other } = withRemote(repo);
    const upstream = commitFiles(other, 'upstream change', { 'docs/new.md': 'new\n' });
    git(other, 'push', '--quiet', 'origin', 'main');
    commitFiles(repo.root, 'local change', { 'local.txt': 'l\n' });

    expect(await g.fetch('origin', 'main')).toBe(upstream);
    expect(git(repo.root, 'rev-parse', 'origin/main').trim()).toBe(upstream);
    const merged = await g.merge('origin/main');
    expect(merged.status).toBe('merged');
    expect(existsSync(join(repo.root, 'docs/new.md'))).toBe(true);
    expect(await g.merge('origin/main')).toMatchObject({ status: 'up-to-date' });
  });

  it('aborts a conflicting merge and returns the conflicted paths', async () => {
    const { repo, g } = await setup();
    const { other } = withRemote(repo);
    commitFiles(other, 'upstream edit', { [KERNEL]: 'def chunk(x):\n    return x - 1\n' });
    git(other, 'push', '--quiet', 'origin', 'main');
    const head = commitFiles(repo.root, 'local edit', { [KERNEL]: 'def chunk(x):\n    return x + 9\n' });

    await g.fetch('origin', 'main');
    expect(await g.merge('origin/main')).toEqual({ status: 'conflict', paths: [KERNEL] });
    expect(await g.head()).toBe(head);
    expect(await g.isClean()).toBe(true);
    expect(existsSync(join(repo.root, '.git', 'MERGE_HEAD'))).toBe(false);
    await expect(g.fetch('origin', 'no..branch')).rejects.toThrow(/invalid branch name/);
  });
});

describe('lock contention', () => {
  it('retries while another process holds index.lock, then succeeds', async () => {
    const { repo } = await setup();
    const logger = memoryLogger();
    const g = await Git.create(repo.root, { lockRetryDelayMs: 150, logger });
    gits.push(g);
    const lock = join(repo.root, '.git', 'index.lock');
    writeFileSync(lock, '');
    setTimeout(() => unlinkSync(lock), 200);
    writeFiles(repo.root, { 'y.txt': 'y\n' });
    await g.stageAll();
    expect((await g.status())[0]).toMatchObject({ path: 'y.txt', index: 'A' });
    expect(logger.lines.some((l) => l.includes('holds a lock; retry 1/3'))).toBe(true);
  });

  it('gives up after three retries with a hint', async () => {
    const { repo } = await setup();
    const g = await Git.create(repo.root, { lockRetryDelayMs: 20 });
    gits.push(g);
    mkdirSync(join(repo.root, '.git'), { recursive: true });
    writeFileSync(join(repo.root, '.git', 'index.lock'), '');
    writeFiles(repo.root, { 'z.txt': 'z\n' });
    const err = (await g.stageAll().catch((e: unknown) => e)) as GitError;
    expect(err).toBeInstanceOf(GitError);
    expect(err.message).toContain('index.lock');
    expect(err.hint).toMatch(/another git process/);
  });
});
