import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  parseRequirementsSpec,
  pyprojectRequirements,
  requirementLines,
} from '../../src/project/requirements.js';
import type { HillclimbError } from '../../src/util/errors.js';
import { tempDir } from '../helpers/paths.js';

const PYPROJECT = `[build-system]
requires = ["hatchling"]

[project]
name = "my-pkg"
version = "0.1.0"
classifiers = [
  "Programming Language :: Python",  # a comment
]
dependencies = [
  "jax[cpu]>=0.4",  # the kernel's
  'numpy',
]

[project.optional-dependencies]
test = ["pytest>=8", "hillclimb-bench[jax]",]
bench = [
  "my_pkg[test]",
  "tabulate",
]

[tool.ruff]
select = ["E"]
`;

const failure = (f: () => unknown): HillclimbError => {
  try {
    f();
  } catch (e) {
    return e as HillclimbError;
  }
  throw new Error('no error');
};

describe('paths.requirements: a requirements file or a pyproject.toml with extras', () => {
  it('reads the file and its extras', () => {
    expect(parseRequirementsSpec('requirements.txt')).toEqual({
      file: 'requirements.txt',
      pyproject: false,
      extras: [],
    });
    expect(parseRequirementsSpec('pyproject.toml')).toEqual({
      file: 'pyproject.toml',
      pyproject: true,
      extras: [],
    });
    expect(parseRequirementsSpec('sub/pyproject.toml[test, bench]')).toEqual({
      file: 'sub/pyproject.toml',
      pyproject: true,
      extras: ['test', 'bench'],
    });
    expect(failure(() => parseRequirementsSpec('requirements.txt[test]')).message).toBe(
      'paths.requirements: requirements.txt[test]: extras in brackets are for a pyproject.toml only',
    );
  });

  it('a pyproject.toml gives its dependencies, and each extra’s (its own extras expanded, not itself)', () => {
    expect(pyprojectRequirements(PYPROJECT, 'pyproject.toml', [])).toEqual(['jax[cpu]>=0.4', 'numpy']);
    expect(pyprojectRequirements(PYPROJECT, 'pyproject.toml', ['test'])).toEqual([
      'jax[cpu]>=0.4',
      'numpy',
      'pytest>=8',
      'hillclimb-bench[jax]',
    ]);
    expect(pyprojectRequirements(PYPROJECT, 'pyproject.toml', ['bench'])).toEqual([
      'jax[cpu]>=0.4',
      'numpy',
      'pytest>=8',
      'hillclimb-bench[jax]',
      'tabulate',
    ]);
  });

  it('says what is wrong, naming the file and the fix', () => {
    const unknown = failure(() => pyprojectRequirements(PYPROJECT, 'pyproject.toml', ['docs']));
    expect(unknown.message).toBe(
      'pyproject.toml: has no optional-dependencies extra "docs" (it has: bench, test)',
    );
    expect(unknown.hint).toContain('pyproject.toml[bench]');
    const dynamic = failure(() =>
      pyprojectRequirements('[project]\nname = "x"\ndynamic = ["dependencies"]\n', 'pyproject.toml', []),
    );
    expect(dynamic.message).toContain('its dependencies are dynamic (project.dynamic: dependencies)');
    expect(dynamic.hint).toBe('list them in a requirements file and set paths.requirements to it');
    expect(failure(() => pyprojectRequirements('[tool.black]\n', 'pyproject.toml', [])).message).toBe(
      'pyproject.toml: has no [project] table, so it names no dependencies',
    );
  });

  describe('on disk', () => {
    const t = tempDir('hc-reqs-');
    afterAll(t.cleanup);
    mkdirSync(join(t.dir, 'cfg'));
    writeFileSync(join(t.dir, 'pyproject.toml'), PYPROJECT);
    writeFileSync(join(t.dir, 'cfg', 'deps.toml'), '# deps\n[project]\ndependencies = ["jax"]\n');
    writeFileSync(join(t.dir, 'requirements.txt'), 'jax\n# c\n');

    it('a requirements file is its lines; a pyproject.toml its dependencies', () => {
      expect(requirementLines(t.dir, 'requirements.txt')).toEqual(['jax', '# c', '']);
      expect(requirementLines(t.dir, 'pyproject.toml[test]')).toContain('pytest>=8');
    });

    it('a TOML file under another name is refused before pip sees it, naming its line', () => {
      const e = failure(() => requirementLines(t.dir, 'cfg/deps.toml'));
      expect(e.message).toBe(
        'cfg/deps.toml is not a pip requirements file: line 2 is a table header ([project]), so pip would refuse it',
      );
      expect(e.hint).toContain('pyproject.toml[test]');
    });
  });
});
