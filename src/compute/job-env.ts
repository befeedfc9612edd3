/**
 * The environment a job sees. Jobs run code the agent wrote, so the engine's secrets (forge and Hub
 * tokens, cloud credentials, Actions runtime tokens) are removed before anything is added.
 */
import { isSecretName } from '../util/redact.js';

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
