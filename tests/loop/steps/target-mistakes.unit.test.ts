import { describe, expect, it } from 'vitest';
import { isExportMistake } from '../../../src/loop/steps/failures.js';
import {
  entryPointMissing,
  folderHolding,
  moduleFile,
  noStepHint,
  olderBenchHint,
  refusedFlag,
  targetModuleHint,
  verificationHint,
} from '../../../src/loop/steps/target-mistakes.js';

const FILES = ['bench/scale_target.py', 'pyproject.toml', 'src/mypkg/__init__.py', 'src/mypkg/ops/scale.py'];
const facts = {
  target: 'scale',
  module: 'bench.scale_target',
  files: FILES,
  requirements: 'requirements.txt',
};
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

  it('an entry point Python cannot find: names the key and the tree’s nearest module', () => {
    const typo = { ...facts, module: 'bench.scale_targt' };
    // Python's own words for `python -m`, with no traceback: a missing module, a missing package.
    const log =
      '$ python -E -s -m bench.scale_targt requests\n/venv/bin/python: No module named bench.scale_targt\n';
    expect(entryPointMissing(log, typo.module)).toBe(true);
    expect(targetModuleHint('requests', log, typo)).toBe(
      'bench.scale_targt (targets.scale.programs.module) is not a module Python finds from the repository\'s root: no bench/scale_targt.py is committed (did you mean bench.scale_target?); fix targets.scale.programs.module in hillclimb.yml, or commit the target module (packages/hillclimb-bench/README.md, "A target in thirty lines")',
    );
    const nopkg =
      "/venv/bin/python: Error while finding module specification for 'benches.scale_target' (ModuleNotFoundError: No module named 'benches')\n";
    const other = { ...facts, module: 'benches.scale_target' };
    expect(entryPointMissing(nopkg, other.module)).toBe(true);
    // Not the requirements hint the quoted package name would otherwise give.
    expect(targetModuleHint('requests', nopkg, other)).toMatch(/^benches\.scale_target \(targets\.scale/);
    expect(
      entryPointMissing("/venv/bin/python: No module named bench.__main__; 'bench' is a package", 'bench'),
    ).toBe(true);
    // A module the target module imports is not the entry point.
    expect(entryPointMissing(notFound('bench.scale_target'), 'bench.scale_target')).toBe(false);
    expect(
      entryPointMissing('/venv/bin/python: No module named bench.scale_target_b\n', 'bench.scale_target'),
    ).toBe(false);
  });

  it('a module that runs no step, and a program off its reference', () => {
    expect(noStepHint(facts)).toContain('bench/scale_target.py ran but wrote no request file');
    expect(
      verificationHint(
        'fwd@gate0: fwd: rel_rms 3.333e-01 > tolerance 1.000e-05 (max_abs 2.000e+00) [input set 0 [gate0]]',
        facts,
      ),
    ).toBe(
      'the kernel and the reference disagree on fwd@gate0: max error 2.000e+00, relative RMS error 3.333e-01 over its tolerance 1.000e-05 (rel_rms_tol); fix the kernel, or the reference in bench/scale_target.py if it is the one that is wrong',
    );
    expect(verificationHint('fwd@gate0: fwd: not finite (nan or inf)', facts)).toContain(
      'the verifier refused fwd@gate0 (fwd: not finite (nan or inf))',
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

describe('refusedFlag: a verifier older than the flags this hillclimb sends', () => {
  const sent = [
    '-E',
    '-s',
    '-m',
    'bench.t',
    'verify',
    '--mode',
    'measure',
    '--pin-cpu',
    '--min-time-ms',
    '1000',
  ];

  it('finds the first unknown flag it sent, in hillclimb-bench’s refusal and in plain argparse’s', () => {
    expect(refusedFlag('verify: unrecognized arguments: --min-time-ms 1000\n', sent)).toBe('--min-time-ms');
    const argparse =
      'usage: programs.py [-h] --platform PLATFORM\nprograms.py: error: unrecognized arguments: --pin-cpu --min-time-ms 250\n';
    expect(refusedFlag(argparse, sent)).toBe('--pin-cpu');
  });

  it.each([
    'verify: --min-time-ms must be in [0, 60000], got 70000',
    'verify: cannot vouch for this session: the code under test is loaded in the verifier (mypkg)',
    'unrecognized arguments: 1000',
    // The target's own parser refusing one of its own arguments (programs.args, after --).
    'verify (target arguments): unrecognized arguments: --layers 3',
    '',
  ])('none in: %s', (log) => {
    expect(refusedFlag(log, sent)).toBeUndefined();
  });

  it('the hint names setup, the requirements file, the pin, and the key that keeps the older release', () => {
    const hint = olderBenchHint('--min-time-ms', facts);
    expect(hint).toContain("the target module's verifier does not take --min-time-ms");
    expect(hint).toContain('Run hillclimb setup (a bare hillclimb-bench line in requirements.txt');
    expect(hint).toContain("move it to this hillclimb's commit");
    expect(hint).toContain('set targets.scale.bench.min_time_ms: 0 in hillclimb.yml');
    // Another flag has no key to turn it off: only the upgrade is named.
    expect(olderBenchHint('--pin-cpu', facts)).not.toContain('min_time_ms');
  });
});
