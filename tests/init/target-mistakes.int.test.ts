// A newcomer's target-module mistakes, on a scratch repository that is not hillclimb (issue 37): each
// is the user's to fix, so it stops at once — never retried as infrastructure — with a hint that names
// the fix the package README documents (import the kernel only inside kernel(), the target's
// source_roots). The real CLI, the real target module on this checkout's venv, the smallest shapes.
// The first two are docs/troubleshooting.md's journeys kernel-at-top and no-source-roots: the command
// its markers name, and every line it quotes, as printed.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allMarkers, planJourney } from '../docs/journeys/plan.js';
import { unmatchedLines } from '../docs/journeys/steps.js';
import { REPO_ROOT, tempDir } from '../helpers/paths.js';
import { hillclimbIn, makeToyRepo, TOY_FLAGS, toyTargetModule } from './scratch.js';

const PYTHON = join(REPO_ROOT, '.venv', 'bin', 'python');

describe('target-module mistakes stop at once, with the fix named', () => {
  const t = tempDir('hc-target-mistakes-');
  // Retries would be quick here (the assertion is that there are none, not how long they take).
  const FAST_RETRIES = '\nloop:\n  target: scale\n  infra_retries: 2\n  retry_backoff_seconds: 0.01\n';
  const cli = (repo: string, args: string[]) => hillclimbIn(repo, args, { HILLCLIMB_PYTHON: PYTHON });
  const git = (repo: string, ...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', ...args], {
      cwd: repo,
      encoding: 'utf8',
    });
  const put = (repo: string, rel: string, text: string) => {
    mkdirSync(dirname(join(repo, rel)), { recursive: true });
    writeFileSync(join(repo, rel), text);
  };

  /** A toy repository after `hillclimb init`, with `target` as its target module, committed. */
  async function repoWith(name: string, target: string): Promise<string> {
    const repo = join(t.dir, name);
    makeToyRepo(repo);
    const init = await cli(repo, ['init', ...TOY_FLAGS]);
    expect(init.code, init.stderr).toBe(0);
    const yml = join(repo, 'hillclimb.yml');
    writeFileSync(yml, readFileSync(yml, 'utf8').replace(/\nloop:\n {2}target: scale\n/, FAST_RETRIES));
    put(repo, 'bench/scale_target.py', target);
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'hillclimb: init');
    return repo;
  }

  beforeAll(() => {
    execFileSync(PYTHON, ['-c', 'import hillclimb_bench, jax']); // the venv these tests run on
  });
  afterAll(t.cleanup);

  /**
   * The troubleshooting case `journey` (docs/troubleshooting.md's markers): its command, run in `repo`,
   * prints every line the page quotes for it.
   */
  async function walk(journey: string, repo: string) {
    const [command, output] = planJourney(journey, allMarkers());
    if (command?.kind !== 'command' || output?.kind !== 'output')
      throw new Error(`journey ${journey}: a run marker, then an output marker, in docs/troubleshooting.md`);
    const r = await cli(repo, command.text.split(' ').slice(1));
    const { block, only } = output.marker;
    expect(unmatchedLines(block.lines, only, r.stderr), `$ ${command.text}\n${r.stderr}`).toEqual([]);
    return r;
  }

  it('the kernel imported at the module top: the first gate stops, saying to import it inside kernel()', async () => {
    const repo = await repoWith(
      'top-import',
      toyTargetModule({ top: 'from mypkg.ops import scale  # noqa\n' }),
    );
    const r = await walk('kernel-at-top', repo);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(
      /error: the target module's requests step \(bench\.scale_target\) exited 1: ModuleNotFoundError: No module named 'mypkg'/,
    );
    expect(r.stderr).toContain(
      'hint: bench/scale_target.py imports mypkg at its top, but the requests step runs without the kernel',
    );
    expect(r.stderr).toContain('import the kernel only inside kernel(), which only the export step calls');
    expect(r.stderr).not.toMatch(/attempts|retry/);
  }, 120_000);

  it('no source_roots for a src/ layout: the champion is not exported, named as the target’s source_roots, never retried', async () => {
    const repo = await repoWith('no-source-roots', toyTargetModule({ roots: null }));
    const r = await walk('no-source-roots', repo);
    expect(r.code, r.stderr).toBe(2); // the user's to fix, not infrastructure (3)
    expect(r.stderr).toContain("could not be exported: ModuleNotFoundError: No module named 'mypkg'");
    expect(r.stderr).toContain(
      `mypkg is under src/, which the export does not put on sys.path: list that folder in the target's source_roots (hb.Kernel(..., source_roots=("src",)) in bench/scale_target.py`,
    );
    expect(r.stderr).not.toContain('check the machine');
    // The same for the candidate's gate: its verdict names the fix.
    const gate = await cli(repo, ['test']);
    expect(gate.stdout + gate.stderr).toContain('source_roots=("src",)');
  }, 120_000);

  it('a measure whose champion cannot be exported stops once (a missing module), not after retries', async () => {
    const repo = await repoWith('champion-import', toyTargetModule({}));
    const kernel = 'src/mypkg/ops/scale.py';
    // main: the kernel imports a helper its author never committed.
    put(repo, kernel, `from mypkg.ops.helpers import twice  # noqa\n${readFile(repo, kernel)}`);
    git(repo, 'commit', '-qam', 'kernel: use a helper (not added)');
    git(repo, 'switch', '-qc', 'fixed');
    put(repo, 'src/mypkg/ops/helpers.py', 'def twice(x):\n    return 2 * x\n');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'add the helper');
    git(repo, 'switch', '-q', 'main');
    const r = await cli(repo, ['measure', '--base', 'main', '--head', 'fixed']);
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toContain(
      "the champion's programs (", // the base's, before any timing
    );
    expect(r.stderr).toContain(
      "No module named 'mypkg.ops.helpers'; mypkg.ops.helpers is not in the committed tree, though mypkg is: commit its file (git add)",
    );
    expect(r.stdout + r.stderr).not.toMatch(/attempts|retry \d/);
  }, 180_000);
});

function readFile(repo: string, rel: string): string {
  return execFileSync('git', ['show', `HEAD:${rel}`], { cwd: repo, encoding: 'utf8' });
}
