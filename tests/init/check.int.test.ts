// `hillclimb check` on a scratch repository that is not hillclimb (issue 37): HEAD's programs asked
// for, exported and verified once by the gates' own steps, one line per check, the first failure's
// hint, exit 2 for the target module's mistakes. One healthy repository; each mistake is a branch of it
// (checked with --ref) or a config beside it (--config). The real CLI on this checkout's venv, the
// smallest shapes.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, tempDir } from '../helpers/paths.js';
import { hillclimbIn, makeToyRepo, TOY_FILES, TOY_FLAGS, toyTargetModule } from './scratch.js';

const PYTHON = join(REPO_ROOT, '.venv', 'bin', 'python');

describe('hillclimb check: the target module checked once, its mistakes named', () => {
  const t = tempDir('hc-check-');
  const repo = join(t.dir, 'toy');
  const cli = (args: string[], python = PYTHON) =>
    hillclimbIn(repo, ['check', ...args], { HILLCLIMB_PYTHON: python });
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', ...args], {
      cwd: repo,
      encoding: 'utf8',
    });
  /** A branch off main whose target module is `text`. */
  const branch = (name: string, text: string) => {
    git('switch', '-qc', name, 'main');
    writeFileSync(join(repo, 'bench', 'scale_target.py'), text);
    git('commit', '-qam', name);
    git('switch', '-q', 'main');
  };

  beforeAll(async () => {
    execFileSync(PYTHON, ['-c', 'import hillclimb_bench, jax']); // the venv these tests run on
    makeToyRepo(repo);
    const init = await hillclimbIn(repo, ['init', ...TOY_FLAGS]);
    expect(init.code, init.stderr).toBe(0);
    writeFileSync(join(repo, 'bench', 'scale_target.py'), toyTargetModule({}));
    git('add', '-A');
    git('commit', '-qm', 'hillclimb: init');
    branch('top-import', toyTargetModule({ top: 'from mypkg.ops import scale  # noqa\n' }));
    branch('no-source-roots', toyTargetModule({ roots: null }));
    branch('no-step', TOY_FILES['bench/scale_target.py']!); // prints its argv, runs no step
    branch('wrong-reference', toyTargetModule({ reference: 'np.asarray(x, np.float64) * 2.0' }));
    // A config beside the committed one whose entry point has a typo (never committed).
    const yml = readFileSync(join(repo, 'hillclimb.yml'), 'utf8');
    writeFileSync(
      join(repo, 'typo.yml'),
      yml.replace('module: bench.scale_target', 'module: bench.scale_targt'),
    );
  }, 60_000);
  afterAll(t.cleanup);

  it('a healthy target module passes every check, exit 0', async () => {
    const r = await cli([]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /^✓ config +hillclimb\.yml: target scale, programs\.module bench\.scale_target$/m,
    );
    expect(r.stdout).toMatch(/^✓ requests +\d+ program\(s\) asked for \(fwd@/m);
    expect(r.stdout).toMatch(/^✓ export +\d+ program\(s\) of [0-9a-f]{12} exported for the CPU$/m);
    expect(r.stdout).toMatch(/^✓ verify +\d+ program\(s\) agree with the reference/m);
    expect(r.stdout).toContain('check: the target module is ready');
  }, 120_000);

  it('the kernel imported at the module top: the requests step fails, import it inside kernel()', async () => {
    const r = await cli(['--ref', 'top-import']);
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stdout).toMatch(/^✗ requests .*No module named 'mypkg'/m);
    expect(r.stdout).toMatch(/^- export +not run$/m);
    expect(r.stdout).toContain('hint: bench/scale_target.py imports mypkg at its top');
    expect(r.stdout).toContain('import the kernel only inside kernel(), which only the export step calls');
  }, 120_000);

  it('no source_roots for a src/ layout: the export fails, naming the key to set', async () => {
    const r = await cli(['--ref', 'no-source-roots', '--json']);
    expect(r.code, r.stdout + r.stderr).toBe(2);
    const report = JSON.parse(r.stdout) as {
      checks: Array<{ name: string; status: string; detail: string; hint?: string }>;
    };
    expect(report.checks.map((c) => `${c.name} ${c.status}`)).toEqual([
      'config passed',
      'requests passed',
      'export failed',
      'verify not-run',
    ]);
    const exported = report.checks[2]!;
    expect(exported.detail).toContain("could not be exported: ModuleNotFoundError: No module named 'mypkg'");
    expect(exported.hint).toMatch(
      /^mypkg is under src\/, which the export does not put on sys\.path: list that folder in the target's source_roots \(hb\.Kernel\(\.\.\., source_roots=\("src",\)\) in bench\/scale_target\.py/,
    );
  }, 120_000);

  it('an entry point that does not exist: the nearest module named, never infrastructure', async () => {
    const r = await cli(['--config', 'typo.yml']);
    expect(r.code, r.stdout + r.stderr).toBe(2); // not 3: the same on every try
    expect(r.stdout).toMatch(/^✗ requests .*No module named bench\.scale_targt/m);
    expect(r.stdout).toContain(
      "hint: bench.scale_targt (targets.scale.programs.module) is not a module Python finds from the repository's root: no bench/scale_targt.py is committed (did you mean bench.scale_target?)",
    );
  }, 120_000);

  it('a module that runs no step (no hb.cli(TARGET) at its end): said so, never infrastructure', async () => {
    const r = await cli(['--ref', 'no-step']);
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stdout).toMatch(/^✗ requests .*wrote no request file \(exit 0\)$/m);
    expect(r.stdout).toContain(
      'hint: bench/scale_target.py ran but wrote no request file: a target module ends with `if __name__ == "__main__": hb.cli(TARGET)`',
    );
  }, 120_000);

  it('a reference that disagrees with the kernel: the program, its max error and the tolerance', async () => {
    const r = await cli(['--ref', 'wrong-reference']);
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stdout).toMatch(/^✓ export /m);
    expect(r.stdout).toMatch(/^✗ verify +\d+ of \d+ program\(s\) failed verification, first: fwd@/m);
    expect(r.stdout).toMatch(
      /hint: the kernel and the reference disagree on fwd@\S+: max error \S+, relative RMS error 5\.000e-01 over its tolerance 1\.000e-05 \(rel_rms_tol\); fix the kernel, or the reference in bench\/scale_target\.py/,
    );
  }, 120_000);

  it('a machine that cannot run the step is infrastructure: exit 3, not the target’s mistake', async () => {
    const r = await cli([], join(t.dir, 'no-venv', 'bin', 'python'));
    expect(r.code, r.stdout + r.stderr).toBe(3);
    expect(r.stdout).toMatch(
      /^✗ requests .*the project interpreter \S+ does not exist; run `hillclimb setup`/m,
    );
  }, 120_000);
});
