import { appendFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  localPackages,
  parsePythonVersion,
  readStamp,
  requirementsHash,
  setupPython,
} from '../../src/project/python.js';
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

  it('reads local paths from requirement lines', () => {
    expect(localPackages('jax==1\n./packages/a # c\n../b\n# ./not\n')).toEqual(['./packages/a', '../b']);
  });
});

describe('parsePythonVersion', () => {
  it('reads the version python --version prints', () => {
    expect(parsePythonVersion('Python 3.11.7\n')).toEqual([3, 11, 7]);
    expect(parsePythonVersion('garbage')).toBeUndefined();
  });
});
