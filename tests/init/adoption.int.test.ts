// Adoption, end to end (issue 15): a repository that is not hillclimb — its own layout, a JAX kernel
// under src/mypkg/ops/, pytest tests, a thirty-line target module on hillclimb-bench (exactly the
// package README's form: nothing installs mypkg), no kernels/ folder —
// gets `hillclimb init --yes`, then `hillclimb loop -n 2` with the replay agent: one patch that makes
// the kernel faster (improved), one that breaks it (invalid at the CPU gate).
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INIT_WORKFLOWS } from '../../src/init/workflows.js';
import { REPO_ROOT, tempDir } from '../helpers/paths.js';
import { actionlint } from '../workflows/actionlint.js';
import { checkWorkflow } from '../workflows/policy.js';
import { hillclimbIn, PIN, PIN_FLAGS } from './scratch.js';

// Slow on purpose: PASSES accumulations of x * a / PASSES. The improved patch sets PASSES = 1.
const KERNEL = `"""y = a * x, accumulated in PASSES passes."""

from functools import partial

import jax
import jax.numpy as jnp

PASSES = 8


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

const FILES: Record<string, string> = {
  'pyproject.toml':
    '[project]\nname = "mypkg"\nversion = "0.0.1"\n\n[tool.pytest.ini_options]\npythonpath = ["src"]\n',
  'requirements.txt': 'jax\npytest\nhillclimb-bench\n',
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
  'bench/scale_target.py': TARGET,
};

const PATCHES: Array<{ name: string; from: string; to: string; json: object }> = [
  {
    name: '0001-one-pass',
    from: 'PASSES = 8',
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

const VENV_SITE = join(REPO_ROOT, '.venv', 'lib');
const PACKAGE_SRC = join(REPO_ROOT, 'packages', 'hillclimb-bench', 'src');
// The peak table the package reads from the checkout it sits in (a wheel carries its own copy).
const PEAKS = join(REPO_ROOT, 'schemas', 'device-peaks.json');

describe('adoption: hillclimb init, then the loop, in a repository that is not hillclimb', () => {
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
  let init: Awaited<ReturnType<typeof hillclimbIn>>;
  let loop: Awaited<ReturnType<typeof hillclimbIn>>;
  let doctor: Awaited<ReturnType<typeof hillclimbIn>>;

  beforeAll(async () => {
    for (const [path, text] of Object.entries(FILES)) put(path, text);
    git('init', '-q', '-b', 'main');
    git('add', '-A');
    git('commit', '-qm', 'mypkg: a scale kernel');

    // The user's .venv: JAX, pytest and numpy of this checkout's venv, and hillclimb-bench from this
    // checkout's source (a .pth: what `pip install -e packages/hillclimb-bench` leaves, without a build).
    const python = join(REPO_ROOT, '.venv', 'bin', 'python');
    execFileSync(python, ['-m', 'venv', '--without-pip', join(repo, '.venv')]);
    const pyDir = readdirSync(join(repo, '.venv', 'lib')).find((d) => d.startsWith('python'))!;
    const site = join(
      VENV_SITE,
      readdirSync(VENV_SITE).find((d) => d.startsWith('python'))!,
      'site-packages',
    );
    writeFileSync(
      join(repo, '.venv', 'lib', pyDir, 'site-packages', 'deps.pth'),
      `${site}\n${PACKAGE_SRC}\n`,
    );

    init = await hillclimbIn(repo, [
      'init',
      '--yes',
      '--target',
      'scale',
      '--editable',
      'src/mypkg/ops/**',
      '--programs',
      'bench.scale_target',
      '--test-command',
      '["{python}", "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider", "--junitxml={junit}"]',
      '--agent',
      'replay',
      ...PIN_FLAGS,
    ]);
    // What the user adds by hand: the sandbox may read what the .pth points to, and the peak table.
    const config = readFileSync(join(repo, 'hillclimb.yml'), 'utf8');
    put(
      'hillclimb.yml',
      `${config}\nsandbox:\n  read_paths: [${[site, PACKAGE_SRC, PEAKS].map((p) => JSON.stringify(p)).join(', ')}]\n`,
    );
    for (const p of PATCHES) {
      const file = 'src/mypkg/ops/scale.py';
      put(file, KERNEL.replace(p.from, p.to));
      const diff = git('diff');
      git('checkout', '-q', '--', '.');
      put(`hillclimb/replay/${p.name}.patch`, diff);
      put(`hillclimb/replay/${p.name}.json`, JSON.stringify(p.json));
    }
    git('add', '-A');
    git('commit', '-qm', 'hillclimb init, and two replay patches');

    doctor = await hillclimbIn(repo, ['doctor'], { HILLCLIMB_PYTHON: '' });

    loop = await hillclimbIn(repo, ['loop', '-n', '2', '--json'], { HILLCLIMB_PYTHON: '' });
  }, 600_000);
  afterAll(t.cleanup);

  it('init writes a config the engine accepts', () => {
    expect(init.stderr).toBe('');
    expect(init.code).toBe(0);
    expect(init.stdout).toContain('created  hillclimb.yml');
  });

  it('doctor finds what the first run needs: the target module, hillclimb-bench, the kernel, the patches', () => {
    expect(doctor.stdout).toMatch(/ok\s+target module\s+bench\.scale_target \(bench\/scale_target\.py\)/);
    expect(doctor.stdout).toMatch(/ok\s+hillclimb-bench\s+hillclimb-bench \S+ in \.venv/);
    expect(doctor.stdout).toMatch(/ok\s+editable paths\s+1 glob\(s\), each matching committed files/);
    expect(doctor.stdout).toMatch(/ok\s+replay folder\s+hillclimb\/replay/);
    expect(doctor.stdout).toContain('doctor: all required pieces present');
    expect(doctor.code).toBe(0);
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
    expect(loop.code, loop.stderr).toBe(0);
    const result = JSON.parse(loop.stdout) as {
      endReason: string;
      iterations: Array<{ verdict: string; reason: string; bundle: string }>;
    };
    expect(result.endReason).toBe('completed');
    expect(
      result.iterations.map((i) => i.verdict),
      loop.stdout,
    ).toEqual(['improved', 'invalid']);
    expect(result.iterations[1]!.reason).toContain('CPU correctness failed');

    // The improved verdict stands on the verifier's rounds (sandboxed), both arms' programs verified.
    const bundle = result.iterations[0]!.bundle;
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
    const gate = () => hillclimbIn(repo, ['test'], { HILLCLIMB_PYTHON: '' });

    const withRoots = await gate();
    expect(withRoots.code, withRoots.stdout + withRoots.stderr).toBe(0);

    put('bench/scale_target.py', TARGET.replace('    source_roots=("src",),\n', ''));
    git('commit', '-qam', 'the target module without source_roots');
    const without = await gate();
    git('reset', '-q', '--hard', 'HEAD~1');
    expect(without.code).toBe(1);
    const text = without.stdout + without.stderr;
    expect(text).toMatch(/mypkg[^\n]*imported from [^\n]*site-packages/);
    expect(text).toContain('outside the tree under test');
    expect(text).toContain('source_roots'); // the hint, whole
  }, 300_000);
});
