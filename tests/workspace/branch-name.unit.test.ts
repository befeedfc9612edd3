import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assertBranchName,
  branchNameProblem,
  checkBranchName,
  loopBranchName,
} from '../../src/workspace/branch-name.js';
import { Git } from '../../src/workspace/git.js';
import { makeRepo, type TestRepo } from './repo.js';

describe('branchNameProblem', () => {
  it.each(['main', 'hillclimb/gdn/20261121-ab12/i001', 'feature/x_y-z.2'])('accepts %s', (name) => {
    expect(branchNameProblem(name)).toBeUndefined();
  });

  it.each([
    ['', 'is empty'],
    ['-rf', 'starts with "-"'],
    ['a..b', 'contains ".."'],
    ['a//b', 'contains "//"'],
    ['a/b/', 'starts or ends with "/"'],
    ['/a', 'starts or ends with "/"'],
    ['a.', 'ends with "."'],
    ['a/.hidden', 'component starting with "."'],
    ['refs.lock/x', 'ending in ".lock"'],
    ['x.lock', 'ending in ".lock"'],
    ['a@{1}', 'contains "@"'],
    ['has space', 'contains " "'],
    ['tab\there', 'contains "\\t"'],
    ['bell\u0007', 'contains "\\u0007"'],
    ['a~1', 'contains "~"'],
    ['a^2', 'contains "^"'],
    ['a:b', 'contains ":"'],
    ['a?', 'contains "?"'],
    ['a*', 'contains "*"'],
    ['a[b', 'contains "["'],
    ['a\\b', 'contains "\\\\"'],
    ['HEAD', 'is "HEAD"'],
    ['x'.repeat(201), 'longer than 200'],
  ])('rejects %j (%s)', (name, problem) => {
    expect(branchNameProblem(name)).toContain(problem);
    expect(() => assertBranchName(name)).toThrow(/invalid branch name/);
  });
});

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

describe('checkBranchName with git', () => {
  let repo: TestRepo;
  let git: Git;
  beforeAll(async () => {
    repo = makeRepo();
    git = await Git.create(repo.root);
  });
  afterAll(() => repo.cleanup());

  it('passes names both checks accept and names git check-ref-format rejects', async () => {
    await expect(checkBranchName('hillclimb/gdn/r1/i001', git)).resolves.toBeUndefined();
    await expect(checkBranchName('a..b', git)).rejects.toThrow(/contains "\.\."/);
    expect(await git.checkBranchName('-bad')).toBe(false);
    expect(await git.checkBranchName('a/.b')).toBe(false);
  });
});
