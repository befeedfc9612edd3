/**
 * A scratch repository that is not hillclimb: its own layout (a toy JAX kernel under src/mypkg/ops/,
 * pytest tests under tests/, a bench under bench/), no kernels/ folder. And the CLI run in it.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type CliRun, runCli } from '../helpers/cli.js';

/** The pin the tests ask for: any full SHA will do, the workflows are checked against this tree's actions. */
export const PIN = { repository: 'acme/hillclimb', commit: 'a'.repeat(40) } as const;
export const PIN_FLAGS = ['--hillclimb-repo', PIN.repository, '--hillclimb-ref', PIN.commit];

export const TOY_FILES: Record<string, string> = {
  'pyproject.toml': '[project]\nname = "mypkg"\nversion = "0.0.1"\n',
  'requirements.txt': 'jax\npytest\n',
  'src/mypkg/__init__.py': '',
  'src/mypkg/ops/__init__.py': 'from mypkg.ops.scale import scale\n\n__all__ = ["scale"]\n',
  'src/mypkg/ops/scale.py':
    'import jax.numpy as jnp\n\n\ndef scale(x: jnp.ndarray, a: float) -> jnp.ndarray:\n    """x: [N] -> [N], each element times a."""\n    return x * a\n',
  'tests/test_scale.py':
    'import jax.numpy as jnp\n\nfrom mypkg.ops import scale\n\n\ndef test_scale() -> None:\n    assert jnp.allclose(scale(jnp.ones(4), 2.0), 2.0)\n',
  'bench/scale_target.py': 'import sys\n\nprint(sys.argv)\n',
};

/**
 * The package README's target module on the toy kernel, with what a mistake changes: `top` goes at its
 * top, `roots` are its source_roots (null: none), `reference` is the program's oracle.
 */
export function toyTargetModule({
  top = '',
  roots = '("src",)',
  reference = 'np.asarray(x, np.float64) * 3.0',
}: {
  top?: string;
  roots?: string | null;
  reference?: string;
}): string {
  return `"""The toy kernel through hillclimb-bench."""

import numpy as np

import hillclimb_bench as hb
${top}

def make_inputs(rng, shape):
    import jax.numpy as jnp

    return (jnp.asarray(rng.standard_normal(shape["n"], np.float32)),)


def kernel(shape):
    from mypkg.ops import scale

    return lambda x: scale(x, 3.0)


TARGET = hb.Kernel(
    name="scale",
    kernel_modules=("mypkg",),
    ${roots === null ? '' : `source_roots=${roots},`}
    programs={"fwd": hb.Program(kernel=kernel, reference=lambda x: ${reference},
                                rel_rms_tol=1e-5, flops=lambda s: s["n"], tokens=lambda s: s["n"])},
    make_inputs=make_inputs,
    bench={"n": 64},
    gate=[{"n": 8}],
    draw=lambda rng: {"n": int(rng.integers(1, 16))},
)

if __name__ == "__main__":
    hb.cli(TARGET)
`;
}

/** A committed git repository holding TOY_FILES at `dir`. */
export function makeToyRepo(dir: string): void {
  for (const [path, text] of Object.entries(TOY_FILES)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('-c', 'user.name=t', '-c', 'user.email=t@t.invalid', 'commit', '-qm', 'toy kernel');
}

/** The answers every test gives, as flags. */
export const TOY_FLAGS = [
  '--yes',
  '--target',
  'scale',
  '--editable',
  'src/mypkg/ops/**',
  '--programs',
  'bench.scale_target',
  '--test-command',
  '["{python}", "-m", "pytest", "tests", "-q", "--junitxml={junit}"]',
  '--agent',
  'replay',
  ...PIN_FLAGS,
];

/** The real CLI with `args` in `cwd`; stdin is not a terminal. */
export function hillclimbIn(cwd: string, args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return runCli(args, env, cwd);
}
