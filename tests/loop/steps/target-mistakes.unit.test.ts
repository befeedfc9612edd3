import { describe, expect, it } from 'vitest';
import { isExportMistake } from '../../../src/loop/steps/failures.js';
import { folderHolding, moduleFile, targetModuleHint } from '../../../src/loop/steps/target-mistakes.js';

const FILES = ['bench/scale_target.py', 'pyproject.toml', 'src/mypkg/__init__.py', 'src/mypkg/ops/scale.py'];
const facts = { module: 'bench.scale_target', files: FILES, requirements: 'requirements.txt' };
const notFound = (name: string) =>
  `Traceback (most recent call last):\n  File "x.py", line 1\nModuleNotFoundError: No module named '${name}'\n`;

describe('where a module is in a tree', () => {
  it('finds a package or file by its dotted path, the shallowest folder first', () => {
    expect(folderHolding('mypkg', FILES)).toBe('src');
    expect(folderHolding('mypkg.ops.scale', FILES)).toBe('src');
    expect(folderHolding('mypkg.ops.helpers', FILES)).toBeUndefined();
    expect(folderHolding('bench', FILES)).toBe('.');
    expect(folderHolding('numpy', FILES)).toBeUndefined();
  });

  it('names the target module’s file, under src/ too', () => {
    expect(moduleFile('bench.scale_target', FILES)).toBe('bench/scale_target.py');
    expect(moduleFile('t.target', ['src/t/target.py'])).toBe('src/t/target.py');
    expect(moduleFile('gone', FILES)).toBe('gone.py');
  });
});

describe('targetModuleHint: the fix of a target-module mistake', () => {
  it('the kernel imported at the top: import it only inside kernel()', () => {
    expect(targetModuleHint('requests', notFound('mypkg'), facts)).toMatch(
      /^bench\/scale_target\.py imports mypkg at its top, .*import the kernel only inside kernel\(\)/,
    );
    const loaded =
      'verify: cannot vouch for this session: the code under test is loaded in the verifier (mypkg)';
    expect(targetModuleHint('verify', loaded, facts)).toMatch(/import the kernel only inside kernel\(\)/);
  });

  it('the kernel under src/ without source_roots: names the folder and the key', () => {
    const log =
      "export: failed: fwd@n64: could not be exported: ModuleNotFoundError: No module named 'mypkg'\n";
    expect(targetModuleHint('export', log, facts)).toContain(
      `list that folder in the target's source_roots (hb.Kernel(..., source_roots=("src",)) in bench/scale_target.py`,
    );
  });

  it('a dependency not installed, or a module not committed', () => {
    expect(targetModuleHint('requests', notFound('einops'), facts)).toContain(
      'einops is neither in the tree nor installed in .venv: list the package that provides it in requirements.txt (paths.requirements)',
    );
    expect(targetModuleHint('export', notFound('mypkg.ops.helpers'), facts)).toContain(
      'not in the committed tree, though mypkg is: commit its file',
    );
  });

  it('says nothing of other failures', () => {
    expect(
      targetModuleHint('export', 'export: failed: fwd: XlaRuntimeError: RESOURCE_EXHAUSTED', facts),
    ).toBeUndefined();
  });
});

describe('isExportMistake: the export’s own refusals that no retry fixes', () => {
  it.each([
    "export: failed: fwd@n64: could not be exported: ModuleNotFoundError: No module named 'mypkg'",
    'export: failed: fwd@n64: could not be exported: TypeError: kernel() takes 1 argument',
    "export: failed: mypkg: the export never imported it: the target's kernel_modules must name the package",
    'export: failed: mypkg: imported from /venv/site-packages/mypkg, outside the tree under test (/t)',
  ])('%s', (line) => {
    expect(isExportMistake(`$ python -m bench export\n${line}\n`)).toBe(true);
  });

  it.each([
    'export: failed: fwd@n64: could not be exported: XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory',
    'export: failed: the kernel asked to crash',
  ])('not: %s', (line) => {
    expect(isExportMistake(line)).toBe(false);
  });
});
