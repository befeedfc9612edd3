import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loopBranchName } from '../../src/workspace/branch-name.js';
import { Git } from '../../src/workspace/git.js';
import { makeRepo, type TestRepo } from './repo.js';

describe('loopBranchName', () => {
  it('builds <prefix><target>/<run-id>/i<NNN>', () => {
    expect(
      loopBranchName({ prefix: 'hillclimb/', target: 'gdn', runId: '20261121-2340-ab12', iteration: 7 }),
    ).toBe('hillclimb/gdn/20261121-2340-ab12/i007');
    expect(loopBranchName({ prefix: '', target: 'gdn', runId: 'r1', iteration: 1234 })).toBe('gdn/r1/i1234');
  });

  it('refuses parts that would smuggle in anything else', () => {
    expect(() => loopBranchName({ prefix: 'hc/', target: 'Gdn', runId: 'r', iteration: 1 })).toThrow(
      /target/,
    );
    expect(() => loopBranchName({ prefix: 'hc/', target: 'gdn', runId: '../x', iteration: 1 })).toThrow(
      /run id/,
    );
    expect(() => loopBranchName({ prefix: 'hc/', target: 'gdn', runId: 'r', iteration: 1.5 })).toThrow(
      /iteration/,
    );
    expect(() => loopBranchName({ prefix: '-x/', target: 'gdn', runId: 'r', iteration: 1 })).toThrow(
      /starts with/,
    );
    expect(() => loopBranchName({ prefix: 'a..', target: 'gdn', runId: 'r', iteration: 1 })).toThrow(/\.\./);
  });
});

describe('Git.checkBranchName (names hillclimb reads but did not make)', () => {
  let repo: TestRepo;
  let git: Git;
  beforeAll(async () => {
    repo = makeRepo();
    git = await Git.create(repo.root);
  });
  afterAll(() => repo.cleanup());

  it('asks git: a name outside the allow-list that git accepts passes, what git refuses does not', async () => {
    expect(await git.checkBranchName('hillclimb/gdn/r1/i001')).toBe(true);
    expect(await git.checkBranchName('fonctionnalité+1')).toBe(true);
    expect(await git.checkBranchName('-bad')).toBe(false);
    expect(await git.checkBranchName('a/.b')).toBe(false);
  });
});
