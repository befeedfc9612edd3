import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { archiveTree, snapshotTree } from '../../src/compute/tree.js';
import { run } from '../../src/exec/exec.js';
import { tempDir } from '../helpers/paths.js';
import { gitRepo } from './helpers.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

async function lsTree(dir: string, tree: string): Promise<string[]> {
  return (await run('git', ['ls-tree', '-r', '--name-only', tree], { cwd: dir })).stdout.trim().split('\n');
}

describe('snapshotTree', () => {
  it('takes the tree as on disk (untracked included, ignored left out) without touching index or refs', async () => {
    const repo = await gitRepo({ 'a.py': 'a = 1\n', '.gitignore': 'ignored/\n*.log\n', 'sub/b.py': 'b\n' });
    cleanups.push(repo.cleanup);
    writeFileSync(join(repo.dir, 'a.py'), 'a = 2  # edited, not committed\n');
    writeFileSync(join(repo.dir, 'new.py'), 'new\n');
    writeFileSync(join(repo.dir, 'x.log'), 'log\n');
    mkdirSync(join(repo.dir, 'ignored'));
    writeFileSync(join(repo.dir, 'ignored', 'big.bin'), 'big\n');
    const statusBefore = (await run('git', ['status', '--porcelain'], { cwd: repo.dir })).stdout;
    const headBefore = (await run('git', ['rev-parse', 'HEAD'], { cwd: repo.dir })).stdout;

    const tree = await snapshotTree(repo.dir, { extraFiles: { '.runner.py': 'print(1)\n' } });
    expect(await lsTree(repo.dir, tree)).toEqual(['.gitignore', '.runner.py', 'a.py', 'new.py', 'sub/b.py']);
    const a = await run('git', ['cat-file', '-p', `${tree}:a.py`], { cwd: repo.dir });
    expect(a.stdout).toContain('edited');

    expect((await run('git', ['status', '--porcelain'], { cwd: repo.dir })).stdout).toBe(statusBefore);
    expect((await run('git', ['rev-parse', 'HEAD'], { cwd: repo.dir })).stdout).toBe(headBefore);
    expect((await run('git', ['stash', 'list'], { cwd: repo.dir })).stdout).toBe('');
  });

  it("ships included paths the ignore rules would leave out (a verifier job's programs)", async () => {
    const repo = await gitRepo({ 'a.py': '1\n', '.gitignore': '*.jaxexport\n.hillclimb-programs/\n' });
    cleanups.push(repo.cleanup);
    mkdirSync(join(repo.dir, '.hillclimb-programs', 'B'), { recursive: true });
    writeFileSync(join(repo.dir, '.hillclimb-programs', 'B', 'fwd@x.jaxexport'), 'bytes');
    expect(await lsTree(repo.dir, await snapshotTree(repo.dir))).toEqual(['.gitignore', 'a.py']);
    const tree = await snapshotTree(repo.dir, { include: ['.hillclimb-programs', 'absent'] });
    expect(await lsTree(repo.dir, tree)).toEqual([
      '.gitignore',
      '.hillclimb-programs/B/fwd@x.jaxexport',
      'a.py',
    ]);
  });

  it('is a content hash: the same tree twice gives the same id, a change gives another', async () => {
    const repo = await gitRepo({ 'a.py': '1\n' });
    cleanups.push(repo.cleanup);
    const t1 = await snapshotTree(repo.dir);
    expect(await snapshotTree(repo.dir)).toBe(t1);
    writeFileSync(join(repo.dir, 'a.py'), '2\n');
    expect(await snapshotTree(repo.dir)).not.toBe(t1);
  });

  it('applies exclude globs and snapshots a subfolder as its own root', async () => {
    const repo = await gitRepo({ 'proj/a.py': '1\n', 'proj/fixtures/big/x.bin': 'x\n', 'other/c.py': 'c\n' });
    cleanups.push(repo.cleanup);
    const tree = await snapshotTree(join(repo.dir, 'proj'), { excludes: ['fixtures/**'] });
    expect(await lsTree(repo.dir, tree)).toEqual(['a.py']);
  });

  it('archives a snapshot as zip and tar.gz with paths at the root', async () => {
    const repo = await gitRepo({ 'a.py': '1\n', 'd/e.py': '2\n' });
    cleanups.push(repo.cleanup);
    const out = tempDir('hc-arch-');
    cleanups.push(out.cleanup);
    const tree = await snapshotTree(repo.dir, { extraFiles: { 'r.py': 'x' } });
    await archiveTree(repo.dir, tree, 'zip', join(out.dir, 'p.zip'));
    await archiveTree(repo.dir, tree, 'tar.gz', join(out.dir, 'p.tar.gz'));
    const zipNames = await run('python3', [
      '-c',
      'import sys, zipfile; print("\\n".join(sorted(zipfile.ZipFile(sys.argv[1]).namelist())))',
      join(out.dir, 'p.zip'),
    ]);
    expect(zipNames.stdout.trim().split('\n')).toEqual(['a.py', 'd/', 'd/e.py', 'r.py']);
    const tarNames = await run('tar', ['-tzf', join(out.dir, 'p.tar.gz')]);
    expect(tarNames.stdout.trim().split('\n').sort()).toEqual(['a.py', 'd/', 'd/e.py', 'r.py']);
  });

  it('names the problem when the folder is not in a git working tree', async () => {
    const t = tempDir('hc-nogit-');
    cleanups.push(t.cleanup);
    await expect(snapshotTree(t.dir)).rejects.toThrow(/not inside a git working tree/);
  });
});
