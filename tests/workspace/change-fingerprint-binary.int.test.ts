// A binary file's change is its content before and after (the blobs of a --full-index diff), not its
// path: two different binary edits of one file are two changes, the same edit made again is one.
import { afterEach, describe, expect, it } from 'vitest';
import { changeFingerprint, Git } from '../../src/workspace/index.js';
import { commitFiles, git, makeRepo, type TestRepo } from './repo.js';

const TABLE = 'kernels/gdn/table.bin';
const bin = (...bytes: number[]) => String.fromCharCode(0, ...bytes, 0);

const repos: TestRepo[] = [];
const gits: Git[] = [];
afterEach(async () => {
  for (const g of gits.splice(0)) await g.close();
  for (const r of repos.splice(0)) r.cleanup();
});

describe('the novelty fingerprint of a binary change', () => {
  it('differs for two different contents of one path; is the same for the same edit on another champion', async () => {
    const repo = makeRepo({ [TABLE]: bin(1, 2, 3), 'kernels/gdn/chunk.py': 'X = 1\n' });
    repos.push(repo);
    const g = await Git.create(repo.root);
    gits.push(g);
    const fp = async (a: string, b: string) =>
      changeFingerprint(await g.diff(a, b, { paths: [TABLE], context: 0, fullIndex: true }));

    const base = git(repo.root, 'rev-parse', 'HEAD').trim();
    const one = commitFiles(repo.root, 'table one', { [TABLE]: bin(1, 2, 4) });
    git(repo.root, 'checkout', '--quiet', base);
    const two = commitFiles(repo.root, 'table two', { [TABLE]: bin(1, 2, 5) });
    const diff = await g.diff(base, one, { paths: [TABLE], context: 0, fullIndex: true });
    expect(diff).toMatch(/^Binary files /m);
    expect(diff).toMatch(/^index [0-9a-f]{40}\.\.[0-9a-f]{40}/m);
    expect(await fp(base, one)).toMatch(/^sha256:/);
    expect(await fp(base, two)).not.toBe(await fp(base, one));

    // The champion moved (a text file changed); the same table edit on it is the same change.
    git(repo.root, 'checkout', '--quiet', base);
    const moved = commitFiles(repo.root, 'champion moved', { 'kernels/gdn/chunk.py': 'X = 2\n' });
    const again = commitFiles(repo.root, 'table one again', { [TABLE]: bin(1, 2, 4) });
    expect(await fp(moved, again)).toBe(await fp(base, one));
  });
});
