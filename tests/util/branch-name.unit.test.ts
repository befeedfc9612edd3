// The one branch-name validator (src/util/branch-name.ts): its allow-list, and proof against git
// itself that every name it accepts is one git accepts, so no caller needs to ask git again.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createRng } from '../../src/stats/random.js';
import { assertBranchName, branchNameProblem, MAX_BRANCH_NAME_LENGTH } from '../../src/util/branch-name.js';

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

describe('the allow-list is inside git check-ref-format --branch', () => {
  it('git accepts every accepted name among edge cases and random draws from the allowed alphabet', () => {
    const edge = [
      'a',
      'a.b',
      'a_b',
      'a-b',
      'a/b',
      'a.lockx',
      'lock',
      '.',
      'a/-b',
      'x'.repeat(MAX_BRANCH_NAME_LENGTH),
      'refs/heads/x',
      'a/HEAD',
    ];
    const rng = createRng(7);
    const alphabet = 'aZ09._/-';
    const drawn = Array.from({ length: 300 }, () =>
      Array.from(
        { length: 1 + Math.floor(rng.uniform() * 8) },
        () => alphabet[Math.floor(rng.uniform() * alphabet.length)],
      ).join(''),
    );
    const accepted = [...edge, ...drawn].filter((n) => branchNameProblem(n) === undefined);
    expect(accepted.length).toBeGreaterThan(50);
    const refused = accepted.filter(
      (name) => spawnSync('git', ['check-ref-format', '--branch', name]).status !== 0,
    );
    expect(refused).toEqual([]);
    // And the rejections are real ones: git refuses these too.
    for (const name of ['a..b', 'a//b', '-rf', 'a/.b', 'x.lock', 'a.', 'a@{1}']) {
      expect(branchNameProblem(name)).toBeDefined();
      expect(spawnSync('git', ['check-ref-format', '--branch', name]).status).not.toBe(0);
    }
    expect(() => assertBranchName('ok/name')).not.toThrow();
  });
});
