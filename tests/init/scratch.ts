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
