import { describe, expect, it } from 'vitest';
import { globToRegExp, matchAny, matchGlob } from '../../src/workspace/glob.js';
import { classifyChanges, describeViolations } from '../../src/workspace/guard.js';

describe('matchGlob', () => {
  it.each([
    // [glob, path, matches]
    ['kernels/gdn/**', 'kernels/gdn/chunk.py', true],
    ['kernels/gdn/**', 'kernels/gdn/sub/deep/x.py', true],
    ['kernels/gdn/**', 'kernels/gdn', false],
    ['kernels/gdn/**', 'kernels/gdnx/a.py', false],
    ['kernels/gdn/', 'kernels/gdn/a.py', true],
    ['**/*.py', 'a.py', true],
    ['**/*.py', 'a/b/c.py', true],
    ['**/*.py', 'a/b/c.pyc', false],
    ['*.py', 'setup.py', true],
    ['*.py', 'kernels/x.py', false],
    ['a/**/b', 'a/b', true],
    ['a/**/b', 'a/x/y/b', true],
    ['a/**/b', 'a/x/y/c', false],
    ['kernels/requirements*.txt', 'kernels/requirements-dev.txt', true],
    ['kernels/requirements*.txt', 'kernels/sub/requirements.txt', false],
    ['file?.txt', 'file1.txt', true],
    ['file?.txt', 'file12.txt', false],
    ['file?.txt', 'file/.txt', false],
    ['v[0-9].py', 'v3.py', true],
    ['v[0-9].py', 'va.py', false],
    ['v[!0-9].py', 'va.py', true],
    ['v[^0-9].py', 'v3.py', false],
    ['.github/**', '.github/workflows/loop.yml', true],
    ['kernels/gdn/*', 'kernels/gdn/.hidden', true],
    ['a\\*b', 'a*b', true],
    ['a\\*b', 'axb', false],
    ['a+b(c).py', 'a+b(c).py', true],
    ['Kernels/**', 'kernels/x', false],
    ['./hillclimb.yml', 'hillclimb.yml', true],
    ['hillclimb.yml', './hillclimb.yml', true],
    ['a**b', 'axxb', true],
    ['a**b', 'ax/b', false],
  ])('%s vs %s → %s', (glob, path, expected) => {
    expect(matchGlob(glob, path)).toBe(expected);
  });

  it('rejects an unterminated character class', () => {
    expect(() => globToRegExp('a[b')).toThrow(/unterminated/);
  });

  it('matchAny is true when one glob matches', () => {
    expect(matchAny(['x/**', 'y/*.py'], 'y/a.py')).toBe(true);
    expect(matchAny([], 'y/a.py')).toBe(false);
  });
});

describe('classifyChanges', () => {
  const rules = {
    editable: ['kernels/gdn/**'],
    protected: ['kernels/harness/**', 'kernels/conftest.py', 'kernels/gdn/naive.py', '.github/**'],
  };

  it('allows changes confined to editable paths', () => {
    expect(classifyChanges(['kernels/gdn/chunk.py', 'kernels/gdn/pallas_tpu.py'], rules)).toEqual({
      allowed: true,
      protectedTouched: [],
      outsideEditable: [],
      gitControl: [],
    });
    expect(classifyChanges([], rules).allowed).toBe(true);
  });

  it('lets protected win over editable (the oracle inside the kernel folder)', () => {
    const r = classifyChanges(['kernels/gdn/naive.py', 'kernels/gdn/chunk.py'], rules);
    expect(r).toEqual({
      allowed: false,
      protectedTouched: ['kernels/gdn/naive.py'],
      outsideEditable: [],
      gitControl: [],
    });
  });

  it('refuses git control files even inside an editable folder (attributes run filters, modules fetch)', () => {
    const r = classifyChanges(['kernels/gdn/.gitattributes', 'kernels/gdn/.gitmodules'], rules);
    expect(r.allowed).toBe(false);
    expect(r.gitControl).toEqual(['kernels/gdn/.gitattributes', 'kernels/gdn/.gitmodules']);
    expect(describeViolations(r)).toContain('2 git control files changed');
  });

  it('treats anything outside editable as a violation even when no protected glob names it', () => {
    const r = classifyChanges(['README.md', 'kernels/gdn/chunk.py', '.github/workflows/x.yml'], rules);
    expect(r.allowed).toBe(false);
    expect(r.protectedTouched).toEqual(['.github/workflows/x.yml']);
    expect(r.outsideEditable).toEqual(['README.md']);
    expect(describeViolations(r)).toBe(
      '1 protected path touched: .github/workflows/x.yml; 1 path outside editable: README.md',
    );
  });

  it('catches a rename from the harness into an editable folder (both paths are given)', () => {
    const r = classifyChanges(['kernels/harness/tolerances.json', 'kernels/gdn/tolerances.json'], rules);
    expect(r.protectedTouched).toEqual(['kernels/harness/tolerances.json']);
    expect(describeViolations(classifyChanges(['kernels/gdn/a.py'], rules))).toBe(
      'every changed path is editable',
    );
  });
});
