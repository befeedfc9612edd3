import { execFileSync } from 'node:child_process';
import { appendFileSync, copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  BUNDLED_BENCH_DIR,
  bundledBenchSource,
  forceIncluded,
  localPackages,
  namesBenchWithoutSource,
  parsePythonVersion,
  readStamp,
  requirementsHash,
  setupPython,
} from '../../src/project/python.js';
import type { HillclimbError } from '../../src/util/errors.js';
import { memoryLogger } from '../../src/util/log.js';
import { REPO_ROOT, tempDir } from '../helpers/paths.js';

describe('setupPython', () => {
  const t = tempDir('hc-venv-');
  afterAll(t.cleanup);
  mkdirSync(join(t.dir, 'kernels'));
  // No packages: pip runs for real but needs no network.
  writeFileSync(join(t.dir, 'kernels', 'requirements.txt'), '# nothing to install\n');

  it('creates the venv once, then does nothing while the requirements are unchanged', async () => {
    const first = await setupPython(t.dir, { dev: false, logger: memoryLogger() });
    expect(first.installed).toBe(true);
    expect(existsSync(join(t.dir, '.venv', 'bin', 'python'))).toBe(true);
    expect(readStamp(t.dir)?.files).toEqual(['kernels/requirements.txt']);

    const log = memoryLogger();
    const second = await setupPython(t.dir, { dev: false, logger: log });
    expect(second.installed).toBe(false);
    expect(log.lines.join('\n')).toContain('up to date');
  }, 180_000);

  it('reinstalls when a requirements file changes', async () => {
    appendFileSync(join(t.dir, 'kernels', 'requirements.txt'), '# changed\n');
    const r = await setupPython(t.dir, { dev: false, logger: memoryLogger() });
    expect(r.installed).toBe(true);
  }, 180_000);

  it('names the missing requirements file', async () => {
    const err = await setupPython(t.dir, { dev: true, logger: memoryLogger() }).catch((e: Error) => e);
    expect((err as Error).message).toContain('requirements-dev.txt');
  });
});

// A repository with only a pyproject.toml (issue 37): paths.requirements names it, with an extra.
describe('setupPython from a pyproject.toml', () => {
  const t = tempDir('hc-venv-pyproject-');
  afterAll(t.cleanup);
  // A wheel made here, so pip installs a real package with no network; pip itself is already there.
  const wheel = join(t.dir, 'wheels', 'toyextra-0.1-py3-none-any.whl');
  mkdirSync(join(t.dir, 'wheels'));
  execFileSync('python3', [
    '-c',
    `import zipfile, sys
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("toyextra/__init__.py", "X = 1\\n")
    z.writestr("toyextra-0.1.dist-info/METADATA", "Metadata-Version: 2.1\\nName: toyextra\\nVersion: 0.1\\n")
    z.writestr("toyextra-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
    z.writestr("toyextra-0.1.dist-info/RECORD", "")`,
    wheel,
  ]);
  writeFileSync(
    join(t.dir, 'pyproject.toml'),
    `[project]\nname = "mypkg"\nversion = "0.1"\ndependencies = ["pip"]\n\n[project.optional-dependencies]\nbench = [\n  "toyextra @ ${pathToFileURL(wheel).href}",\n]\n`,
  );
  const paths = (runtime: string) => ({ runtime, dev: 'requirements-dev.txt' });
  const python = join(t.dir, '.venv', 'bin', 'python');

  it('installs its dependencies and the extra named in brackets, not the project itself', async () => {
    const r = await setupPython(t.dir, {
      dev: false,
      logger: memoryLogger(),
      requirements: paths('pyproject.toml[bench]'),
    });
    expect(r.installed).toBe(true);
    expect(execFileSync(python, ['-c', 'import toyextra; print(toyextra.X)'], { encoding: 'utf8' })).toBe(
      '1\n',
    );
    const list = execFileSync(python, ['-m', 'pip', 'list', '--format=freeze'], { encoding: 'utf8' });
    expect(list).toContain('toyextra==0.1');
    expect(list).not.toMatch(/^mypkg==/m);
    // Another table of the file (tool settings) changes nothing installed: still up to date.
    appendFileSync(join(t.dir, 'pyproject.toml'), '\n[tool.ruff]\nline-length = 100\n');
    const again = await setupPython(t.dir, {
      dev: false,
      logger: memoryLogger(),
      requirements: paths('pyproject.toml[bench]'),
    });
    expect(again.installed).toBe(false);
  }, 180_000);

  it('an extra the file lacks, or a file pip cannot read, is named before pip runs', async () => {
    const missing = await setupPython(t.dir, {
      dev: false,
      logger: memoryLogger(),
      requirements: paths('pyproject.toml[docs]'),
    }).catch((e: HillclimbError) => e);
    expect((missing as HillclimbError).message).toBe(
      'pyproject.toml: has no optional-dependencies extra "docs" (it has: bench)',
    );
    copyFileSync(join(t.dir, 'pyproject.toml'), join(t.dir, 'deps.toml'));
    const notPip = await setupPython(t.dir, {
      dev: false,
      logger: memoryLogger(),
      requirements: paths('deps.toml'),
    }).catch((e: HillclimbError) => e);
    expect((notPip as HillclimbError).message).toBe(
      'deps.toml is not a pip requirements file: line 1 is a table header ([project]), so pip would refuse it',
    );
    expect((notPip as HillclimbError).hint).toContain('pyproject.toml[test]');
  }, 60_000);
});

describe('the project venv', () => {
  it('is up to date after the test command set it up: a second setup installs nothing', async () => {
    const log = memoryLogger();
    const r = await setupPython(REPO_ROOT, { dev: true, logger: log });
    expect(r.installed).toBe(false);
    const runtimeOnly = await setupPython(REPO_ROOT, { dev: false, logger: memoryLogger() });
    expect(runtimeOnly.installed).toBe(false);
  });
});

describe('requirementsHash', () => {
  it('covers the sources of a local package a requirements file names, not its caches', () => {
    const t = tempDir('hc-req-');
    try {
      const pkg = join(t.dir, 'packages', 'bench');
      mkdirSync(join(pkg, 'src', '__pycache__'), { recursive: true });
      mkdirSync(join(pkg, '.pytest_cache'));
      mkdirSync(join(t.dir, 'kernels'));
      writeFileSync(join(t.dir, 'kernels', 'requirements.txt'), 'numpy\n./packages/bench  # ours\n');
      writeFileSync(join(pkg, 'src', 'bench.py'), 'X = 1\n');
      const files = ['kernels/requirements.txt'];
      const hash = () => requirementsHash(t.dir, files, '3.11.7');
      const first = hash();
      writeFileSync(join(pkg, 'src', '__pycache__', 'bench.pyc'), 'cache');
      writeFileSync(join(pkg, '.pytest_cache', 'v'), 'cache');
      expect(hash()).toBe(first);
      writeFileSync(join(pkg, 'src', 'bench.py'), 'X = 2\n');
      expect(hash()).not.toBe(first);
    } finally {
      t.cleanup();
    }
  });

  it('covers the files a package takes into its wheel from outside its folder (the peak table)', () => {
    const t = tempDir('hc-req-');
    try {
      const pkg = join(t.dir, 'packages', 'bench');
      mkdirSync(pkg, { recursive: true });
      mkdirSync(join(t.dir, 'schemas'));
      mkdirSync(join(t.dir, 'kernels'));
      writeFileSync(
        join(pkg, 'pyproject.toml'),
        '[project]\nname = "bench"\n\n[tool.hatch.build.targets.wheel.force-include]\n' +
          '"../../schemas/peaks.json" = "bench/peaks.json"  # the one table\n"absent.txt" = "x"\n\n[tool.other]\n"a" = "b"\n',
      );
      writeFileSync(join(t.dir, 'schemas', 'peaks.json'), '{"v": 1}\n');
      writeFileSync(join(t.dir, 'kernels', 'requirements.txt'), './packages/bench\n');
      expect(forceIncluded(pkg)).toEqual([join(t.dir, 'schemas', 'peaks.json')]);
      const hash = () => requirementsHash(t.dir, ['kernels/requirements.txt'], '3.11.7');
      const first = hash();
      writeFileSync(join(t.dir, 'schemas', 'peaks.json'), '{"v": 2}\n');
      expect(hash()).not.toBe(first);
    } finally {
      t.cleanup();
    }
  });

  it("hashes hillclimb-bench's own copy of schemas/device-peaks.json, which the venv reads", () => {
    expect(forceIncluded(join(REPO_ROOT, BUNDLED_BENCH_DIR))).toEqual([
      join(REPO_ROOT, 'schemas', 'device-peaks.json'),
    ]);
  });

  it('takes the bundled source setup found once, instead of looking again', () => {
    const t = tempDir('hc-req-');
    try {
      writeFileSync(join(t.dir, 'requirements.txt'), 'hillclimb-bench[jax]\n');
      const found = bundledBenchSource(t.dir, ['requirements.txt']);
      const hash = (bundled: string | null) =>
        requirementsHash(t.dir, ['requirements.txt'], '3.11.7', bundled);
      expect(found).toBeDefined();
      expect(requirementsHash(t.dir, ['requirements.txt'], '3.11.7')).toBe(hash(found!));
      // null: setup found none, and nothing looks again.
      expect(hash(null)).not.toBe(hash(found!));
    } finally {
      t.cleanup();
    }
  });

  it('reads local paths from requirement lines', () => {
    expect(localPackages('jax==1\n./packages/a # c\n../b\n# ./not\n')).toEqual(['./packages/a', '../b']);
  });
});

// hillclimb-bench is not on PyPI: a line without a source means this hillclimb's own copy, so no
// public repository is needed at the pin (issue 24).
describe('a bare hillclimb-bench requirement', () => {
  it('is a name with extras or a version, never a URL or a path', () => {
    for (const line of [
      'hillclimb-bench',
      'hillclimb-bench[jax]  # the bench',
      'hillclimb_bench >= 0.1',
      'Hillclimb-Bench[jax]==0.1.0',
      'hillclimb__bench',
      'hillclimb-bench[jax]; python_version >= "3.10"',
      'hillclimb-bench --hash=sha256:00',
    ])
      expect(namesBenchWithoutSource(`jax\n${line}\n`), line).toBe(true);
    for (const line of [
      'hillclimb-bench[jax] @ git+https://github.com/acme/hillclimb@abc#subdirectory=packages/hillclimb-bench',
      './packages/hillclimb-bench',
      '# hillclimb-bench',
      'hillclimb-bench-extra',
    ])
      expect(namesBenchWithoutSource(`jax\n${line}\n`), line).toBe(false);
  });

  it("installs from this hillclimb's copy unless a line gives a source", () => {
    const t = tempDir('hc-req-');
    try {
      writeFileSync(join(t.dir, 'requirements.txt'), 'jax\nhillclimb-bench[jax]\n');
      writeFileSync(join(t.dir, 'pinned.txt'), 'hillclimb-bench @ git+https://example.invalid/x\n');
      expect(bundledBenchSource(t.dir, ['requirements.txt'])).toBe(join(REPO_ROOT, BUNDLED_BENCH_DIR));
      expect(bundledBenchSource(t.dir, ['pinned.txt'])).toBeUndefined();
    } finally {
      t.cleanup();
    }
  });
});

describe('parsePythonVersion', () => {
  it('reads the version python --version prints', () => {
    expect(parsePythonVersion('Python 3.11.7\n')).toEqual([3, 11, 7]);
    expect(parsePythonVersion('garbage')).toBeUndefined();
  });
});
