// Adoption, end to end, exactly as docs/setup.md ("Your first verdict") says (issues 15, 24, 37): a
// repository that is not hillclimb — its own layout, a JAX kernel under src/mypkg/ops/, pytest tests,
// no kernels/ folder — gets `hillclimb init --yes`, the thirty-line target module of the package
// README, a requirements file naming hillclimb-bench without a source; then the page's block marked
// `<!-- journey: first-verdict -->`, command by command as a user types it (bash, `hillclimb` on PATH,
// `$EDITOR` the change of one's own): `git commit`, `hillclimb setup` (a real pip install: no public
// hillclimb repository, no hand-made venv, nothing added to the sandbox), `doctor`, `check`, `test`, a
// `measure` of a faster branch (improved), and `loop -n 2` with the replay agent: one patch that makes
// the kernel faster (improved), one that breaks it (invalid at the CPU gate).
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INIT_WORKFLOWS } from '../../src/init/workflows.js';
import { allMarkers, planJourney } from '../docs/journeys/plan.js';
import { linkHillclimb, type Ran, runCommand, writeProgram } from '../docs/journeys/runner.js';
import { resolveCommand } from '../docs/journeys/steps.js';
import type { CliRun } from '../helpers/cli.js';
import { REPO_ROOT, tempDir } from '../helpers/paths.js';
import { actionlint } from '../workflows/actionlint.js';
import { checkWorkflow } from '../workflows/policy.js';
import { hillclimbIn, PIN, PIN_FLAGS } from './scratch.js';

// Slow on purpose: PASSES accumulations of x * a / PASSES. The improved patch sets PASSES = 1.
const KERNEL = `"""y = a * x, accumulated in PASSES passes."""

from functools import partial

import jax
import jax.numpy as jnp

PASSES = 4


@partial(jax.jit, static_argnums=1)
def scale(x: jax.Array, a: float) -> jax.Array:
    """x: [N] -> [N], each element times a."""
    step = x * (a / PASSES)
    return jax.lax.fori_loop(0, PASSES, lambda _, y: y + step, jnp.zeros_like(x))
`;

// The user's target module: what packages/hillclimb-bench/README.md shows, on this kernel. It imports
// the kernel only in kernel(), which only the export step calls; the verifier never imports mypkg.
const TARGET = `"""python -m bench.scale_target export|verify: mypkg.ops.scale through hillclimb-bench."""

import numpy as np

import hillclimb_bench as hb

N = 1 << 20


def make_inputs(rng, shape):
    import jax.numpy as jnp

    return (jnp.asarray(rng.standard_normal(shape["n"], np.float32)),)


def kernel(shape):
    from mypkg.ops import scale

    return lambda x: scale(x, 3.0)


TARGET = hb.Kernel(
    name="scale",
    kernel_modules=("mypkg",),
    source_roots=("src",),
    programs={"fwd": hb.Program(kernel=kernel, reference=lambda x: np.asarray(x, np.float64) * 3.0,
                                rel_rms_tol=1e-5, flops=lambda s: s["n"], tokens=lambda s: s["n"])},
    make_inputs=make_inputs,
    bench={"n": N},
    gate=[{"n": 1000}],
    draw=lambda rng: {"n": int(rng.integers(1, 5000))},
)

if __name__ == "__main__":
    hb.cli(TARGET)
`;

// The user's repository before hillclimb.
const FILES: Record<string, string> = {
  'pyproject.toml':
    '[project]\nname = "mypkg"\nversion = "0.0.1"\n\n[tool.pytest.ini_options]\npythonpath = ["src"]\n',
  '.gitignore': '.venv/\n.hillclimb/\n__pycache__/\n',
  'src/mypkg/__init__.py': '',
  'src/mypkg/ops/__init__.py': 'from mypkg.ops.scale import scale\n\n__all__ = ["scale"]\n',
  'src/mypkg/ops/scale.py': KERNEL,
  'tests/test_scale.py': `import jax.numpy as jnp
import numpy as np

from mypkg.ops import scale


def test_scale_matches_numpy() -> None:
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    np.testing.assert_allclose(np.asarray(scale(jnp.asarray(x), 3.0)), x * 3.0, rtol=1e-5, atol=1e-6)
`,
};

// What the user writes after init, as docs/setup.md shows it (versions pinned to this checkout's, so
// pip finds them in its cache): hillclimb-bench without a source comes from this hillclimb.
const REQUIREMENTS =
  'jax[cpu]==0.10.2\njaxlib==0.10.2\nnumpy==2.4.6\nflatbuffers==25.12.19\npytest==9.2.0\nhillclimb-bench[jax]\n';

const PATCHES: Array<{ name: string; from: string; to: string; json: object }> = [
  {
    name: '0001-one-pass',
    from: 'PASSES = 4',
    to: 'PASSES = 1',
    json: { hypothesis: 'One pass does the same work.', summary: 'PASSES = 1.', next_idea: 'None.' },
  },
  {
    name: '0002-wrong-factor',
    from: 'step = x * (a / PASSES)',
    to: 'step = x * (1.01 * a / PASSES)',
    json: { hypothesis: 'A cheaper constant.', summary: 'Changed the factor.', next_idea: 'None.' },
  },
];

describe('adoption: docs/setup.md, followed on a repository that is not hillclimb', () => {
  const t = tempDir('hc-adopt-');
  const repo = join(t.dir, 'repo');
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', ...args], {
      cwd: repo,
      encoding: 'utf8',
    });
  const put = (rel: string, text: string) => {
    mkdirSync(dirname(join(repo, rel)), { recursive: true });
    writeFileSync(join(repo, rel), text);
  };
  // The project's own .venv, as `hillclimb setup` makes it; never this checkout's.
  const cli = (args: string[]) => hillclimbIn(repo, args, { HILLCLIMB_PYTHON: '' });
  let init: CliRun;
  let setup: Ran;
  let doctor: CliRun;
  let doctorReady: Ran;
  let checked: Ran;
  let gate: Ran;
  let measure: Ran;
  let loop: Ran;
  const started = Date.now();
  const seconds: Record<string, number> = {};

  beforeAll(async () => {
    for (const [path, text] of Object.entries(FILES)) put(path, text);
    git('init', '-q', '-b', 'main');
    git('add', '-A');
    git('commit', '-qm', 'mypkg: a scale kernel');

    let t0 = Date.now();
    init = await cli([
      'init',
      '--yes',
      '--target',
      'scale',
      '--editable',
      'src/mypkg/ops/**',
      '--test-command',
      '{python} -m pytest tests -q -p no:cacheprovider --junitxml={junit}',
      '--programs',
      'bench.scale_target',
      '--agent',
      'replay',
      ...PIN_FLAGS,
    ]);
    seconds.init = (Date.now() - t0) / 1000;
    // Before the replay patches exist, doctor names the missing folder and what to do.
    doctor = await cli(['doctor']);
    // 1. The target module, the requirements file and, for the loop's replay agent, two patches:
    // one that makes the kernel faster, one that breaks it.
    put('bench/scale_target.py', TARGET);
    put('requirements.txt', REQUIREMENTS);
    for (const p of PATCHES) {
      const file = 'src/mypkg/ops/scale.py';
      put(file, KERNEL.replace(p.from, p.to));
      const diff = git('diff');
      git('checkout', '-q', '--', '.');
      put(`hillclimb/replay/${p.name}.patch`, diff);
      put(`hillclimb/replay/${p.name}.json`, JSON.stringify(p.json));
    }
    // The change of one's own that `$EDITOR` makes: one pass instead of four.
    const faster = join(t.dir, 'faster.py');
    writeFileSync(faster, KERNEL.replace('PASSES = 4', 'PASSES = 1'));
    const editor = writeProgram(
      join(t.dir, 'bin'),
      'editor',
      `#!/bin/sh\ncp '${faster}' src/mypkg/ops/scale.py\n`,
    );

    // The page's block, as typed.
    const env = {
      PATH: `${linkHillclimb(t.dir)}:${process.env.PATH}`,
      HILLCLIMB_PYTHON: '',
      EDITOR: editor,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@t.invalid',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@t.invalid',
    };
    const ran: Ran[] = [];
    for (const step of planJourney('first-verdict', allMarkers())) {
      if (step.kind !== 'command')
        throw new Error(`first-verdict: a ${step.kind} step this test does not check`);
      t0 = Date.now();
      const r = await runCommand(resolveCommand(step.text, {}, step.where), {
        cwd: repo,
        env,
        timeoutMs: 600_000,
      });
      seconds[step.text.split(' ').slice(0, 2).join(' ')] = (Date.now() - t0) / 1000;
      if (r.code !== 0 && !/^hillclimb (setup|doctor|check|test|measure|loop)\b/.test(step.text))
        throw new Error(`${step.where}: \`${r.command}\` exited ${r.code}:\n${r.output}`);
      ran.push(r);
    }
    const byCommand = (re: RegExp) => {
      const r = ran.find((x) => re.test(x.command));
      if (!r)
        throw new Error(`the first-verdict block ran no ${re}: ${ran.map((x) => x.command).join('; ')}`);
      return r;
    };
    setup = byCommand(/^hillclimb setup$/);
    doctorReady = byCommand(/^hillclimb doctor$/);
    checked = byCommand(/^hillclimb check$/);
    gate = byCommand(/^hillclimb test$/);
    measure = byCommand(/^hillclimb measure --base main --head faster$/);
    loop = byCommand(/^hillclimb loop -n 2$/);
    seconds.total = (Date.now() - started) / 1000;
    console.log(`adoption: init → first verdict, seconds per step: ${JSON.stringify(seconds)}`);
  }, 900_000);
  afterAll(t.cleanup);

  it('init writes a config the engine accepts, and next steps that end in a first verdict', () => {
    // The one warning: the requirements file is written after init, as the next steps say.
    expect(init.stderr).toMatch(/^warning: --requirements requirements\.txt does not exist: [^\n]*\n$/);
    expect(init.code).toBe(0);
    expect(init.stdout).toContain('created  hillclimb.yml');
    expect(init.stdout).toContain(
      'hillclimb-bench[jax] (no source: it comes from this hillclimb) in requirements.txt',
    );
    expect(init.stdout).toMatch(
      /hillclimb setup[\s\S]*hillclimb doctor[\s\S]*hillclimb test[\s\S]*hillclimb measure --base main/,
    );
  });

  it('setup installs the requirements, hillclimb-bench from this hillclimb, into the project venv', () => {
    expect(setup.code, setup.output).toBe(0);
    expect(setup.output).toContain(`hillclimb-bench from ${join(REPO_ROOT, 'packages', 'hillclimb-bench')}`);
    const pyDir = readdirSync(join(repo, '.venv', 'lib')).find((d) => d.startsWith('python'))!;
    const installed = readdirSync(join(repo, '.venv', 'lib', pyDir, 'site-packages'));
    expect(installed.some((d) => /^hillclimb_bench-.*\.dist-info$/.test(d))).toBe(true);
  });

  it('check: the target module passes every check on HEAD', () => {
    expect(checked.code, checked.output).toBe(0);
    expect(checked.output).toMatch(/^✓ verify +\d+ program\(s\) agree with the reference/m);
  });

  it('test: the CPU gate passes on HEAD', () => {
    expect(gate.code, gate.output).toBe(0);
  });

  it('measure: the faster branch is improved, on verified programs', () => {
    expect(measure.code, measure.output).toBe(0);
    expect(measure.output).toMatch(/^✓ improved: /m);
  });

  it('doctor finds what the first run needs: the target module, hillclimb-bench, the kernel, the patches', () => {
    expect(doctorReady.output).toMatch(
      /ok\s+target module\s+bench\.scale_target \(bench\/scale_target\.py\)/,
    );
    expect(doctorReady.output).toMatch(/ok\s+hillclimb-bench\s+hillclimb-bench \S+ in \.venv/);
    expect(doctorReady.output).toMatch(/ok\s+editable paths\s+1 glob\(s\), each matching committed files/);
    // Before the replay patches exist: named, with what to do.
    expect(doctor.stdout).toMatch(
      /MISSING replay folder\s+hillclimb\/replay \(agent\.replay\.dir\) does not exist/,
    );
    expect(doctor.stdout).toContain('put NNNN-*.patch files there, or choose another agent.kind');
    expect(doctor.code).toBe(1);
    expect(doctorReady.output).toMatch(/ok\s+replay folder\s+hillclimb\/replay/);
    expect(doctorReady.output).toContain('doctor: all required pieces present');
    expect(doctorReady.code).toBe(0);
  });

  it('the workflows init wrote pass actionlint and the workflow policy', async () => {
    for (const file of INIT_WORKFLOWS) {
      const path = join(repo, '.github', 'workflows', file);
      expect(await actionlint(path), file).toEqual([]);
      expect(
        checkWorkflow(path, join(REPO_ROOT, 'actions'), { hillclimbRepository: PIN.repository }),
        file,
      ).toEqual([]);
    }
  });

  it('the loop runs both iterations: the faster kernel improves, the wrong one is invalid', () => {
    expect(loop.code, loop.output).toBe(0);
    expect(loop.output).toMatch(/^run \S+: completed$/m);
    expect([...loop.output.matchAll(/^(i\d{3}) +\S+ ([a-z-]+) /gm)].map((m) => `${m[1]} ${m[2]}`)).toEqual([
      'i001 improved',
      'i002 invalid',
    ]);
    expect(loop.output).toMatch(/^\[i002 scale\] invalid: CPU correctness failed/m);

    // The improved verdict stands on the verifier's rounds (sandboxed), both arms' programs verified.
    const bundle = join(/^evidence: (\S+)$/m.exec(loop.output)![1]!, 'i001');
    const evidence = JSON.parse(readFileSync(join(bundle, 'evidence.json'), 'utf8')) as {
      isolation: Record<string, { mode: string }>;
      measurement: { runs: Array<{ arm: string; metricsFile: string }> };
    };
    expect(evidence.isolation.measure?.mode).toBe('sandbox');
    const runs = evidence.measurement.runs;
    expect(new Set(runs.map((r) => r.arm))).toEqual(new Set(['A', 'B']));
    for (const run of runs) {
      const metrics = JSON.parse(readFileSync(join(bundle, run.metricsFile), 'utf8'));
      expect(metrics.target).toBe('scale');
      expect(metrics.verification).toMatchObject({ verified: true, seed_source: 'os.urandom' });
      expect(metrics.verification.timed_outputs_compared).toBe(10);
      expect(Object.keys(metrics.programs.sha256)).toEqual(['fwd@n1048576']);
      expect(metrics.device.peak.source).toBe('measured'); // a CPU: no table peak
    }
  });

  // The adopter's silent no-change (issue 20): mypkg also installed, not editable, in .venv. Both arms
  // importing that one copy measured the same kernel twice. With the README's `source_roots` the
  // tree's copy wins; without it the export names the installed copy and the gate fails, never a
  // measured no-change.
  it('a kernel installed in .venv is refused by name unless the tree under test provides it', async () => {
    const pyDir = readdirSync(join(repo, '.venv', 'lib')).find((d) => d.startsWith('python'))!;
    cpSync(join(repo, 'src', 'mypkg'), join(repo, '.venv', 'lib', pyDir, 'site-packages', 'mypkg'), {
      recursive: true,
    });
    const runGate = () => cli(['test']);

    const withRoots = await runGate();
    expect(withRoots.code, withRoots.stdout + withRoots.stderr).toBe(0);

    put('bench/scale_target.py', TARGET.replace('    source_roots=("src",),\n', ''));
    git('commit', '-qam', 'the target module without source_roots');
    const without = await runGate();
    git('reset', '-q', '--hard', 'HEAD~1');
    expect(without.code).toBe(1);
    const text = without.stdout + without.stderr;
    expect(text).toMatch(/mypkg[^\n]*imported from [^\n]*site-packages/);
    expect(text).toContain('outside the tree under test');
    expect(text).toContain('source_roots'); // the hint, whole
  }, 300_000);
});
