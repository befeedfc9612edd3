/**
 * The environment a job sees. Jobs run code the agent wrote, so the engine's secrets (forge and Hub
 * tokens, cloud credentials, Actions runtime tokens) are removed before anything is added.
 */
import { isSecretName } from '../util/index.js';

/** Exec `env` overrides: every secret-looking variable of `base` unset, then the job's own variables. */
export function jobEnv(
  extra: Record<string, string> = {},
  base: NodeJS.ProcessEnv = process.env,
): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {};
  for (const name of Object.keys(base)) {
    if (isSecretName(name)) env[name] = undefined;
  }
  return { ...env, ...extra };
}

/**
 * What a sandboxed job inherits from the harness: the locale, the search path and the accelerator and
 * numeric-library settings JAX reads. Nothing else: the runner's variables (GITHUB_OUTPUT, RUNNER_TEMP,
 * ACTIONS_*) and anything secret never reach it.
 */
const SANDBOX_PASSED =
  /^(?:PATH|LANG|LANGUAGE|LC_\w+|TZ|TERM|HILLCLIMB_ACCELERATOR|(?:JAX|XLA|TPU|LIBTPU|PJRT|CUDA|NVIDIA|ROCR|HIP|OMP|MKL|OPENBLAS)_\w+)$/;

/** The complete environment of a sandboxed job (exec with inheritEnv: false). HOME and TMPDIR are its private /tmp. */
export function sandboxJobEnv(
  extra: Record<string, string> = {},
  base: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(base)) {
    if (value !== undefined && SANDBOX_PASSED.test(name) && !isSecretName(name)) env[name] = value;
  }
  return {
    ...env,
    HOME: '/tmp',
    TMPDIR: '/tmp',
    XDG_CACHE_HOME: '/tmp/.cache',
    // The working tree is read-only: Python must not try to write bytecode next to the sources.
    PYTHONDONTWRITEBYTECODE: '1',
    ...Object.fromEntries(Object.entries(extra).filter(([name]) => !isSecretName(name))),
  };
}
