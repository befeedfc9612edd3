/**
 * The agent's environment, built from an allow-list (exec runs it with inheritEnv: false): PATH, HOME,
 * LANG/LANGUAGE/LC_*, TMPDIR, the model API key(s) its adapter needs, the names `agent.pass_env` lists,
 * and the request's own variables. Tokens and cloud credentials never pass, even when named: the agent
 * must not be able to push, publish or spend (DESIGN principle 1, github-actions.md §6).
 *
 * This hides variables, not files: on a machine whose HOME holds credential files the agent can still
 * read them. In CI the agent runs in a job that has none (DESIGN "GitHub").
 */

import { agentIdentity, identityEnv } from '../git/index.js';
import { isSecretName } from '../util/index.js';

const BASE_NAMES = ['PATH', 'HOME', 'LANG', 'LANGUAGE', 'TMPDIR'];

/** Never handed to an agent, whatever the config or the request says. */
const NEVER =
  /^(?:GITHUB_TOKEN|GH_TOKEN|GH_ENTERPRISE_TOKEN|GITHUB_ENTERPRISE_TOKEN|HF_TOKEN|HUGGING_FACE_HUB_TOKEN|HUGGINGFACE_TOKEN|GOOGLE_APPLICATION_CREDENTIALS|GOOGLE_GHA_CREDS_PATH|CLOUDSDK_\w*|ACTIONS_\w*|AWS_\w*|AZURE_\w*|GCE_\w*|GOOGLE_CLOUD_\w*|SSH_AUTH_SOCK|GPG_AGENT_INFO|GNUPGHOME|KUBECONFIG|DOCKER_CONFIG|NETRC|GIT_ASKPASS|SSH_ASKPASS|GIT_SSH_COMMAND)$/;

export interface AgentEnvironmentSpec {
  /** Model API credentials this adapter needs (e.g. OPENAI_API_KEY): passed when set, and redacted. */
  modelKeys: readonly string[];
  /** Non-secret settings the adapter's CLI reads (e.g. CODEX_HOME), passed when set. */
  adapterNames?: readonly string[];
  /** `agent.pass_env`: more names to pass from the harness's environment. */
  passEnv?: readonly string[];
  /** Set before the request's env (which may override them). */
  defaults?: Readonly<Record<string, string>>;
  /** The request's env. */
  requestEnv?: Readonly<Record<string, string>>;
  /** Where values come from. Default: process.env. */
  source?: NodeJS.ProcessEnv;
}

export interface AgentEnvironment {
  env: Record<string, string>;
  /** Values to redact from logs (the model keys). */
  secrets: string[];
  /** Names that were asked for but refused (token or credential); for a warning. */
  refused: string[];
}

/** Whether a variable may never reach an agent (unless it is one of the adapter's own model keys). */
export function isRefusedName(name: string, modelKeys: readonly string[] = []): boolean {
  if (modelKeys.includes(name)) return false;
  return NEVER.test(name) || isSecretName(name);
}

export function agentEnvironment(spec: AgentEnvironmentSpec): AgentEnvironment {
  const source = spec.source ?? process.env;
  const env: Record<string, string> = {};
  const refused: string[] = [];
  const take = (name: string) => {
    const v = source[name];
    if (v !== undefined) env[name] = v;
  };
  for (const name of BASE_NAMES) take(name);
  for (const name of Object.keys(source)) if (name.startsWith('LC_')) take(name);
  for (const name of spec.modelKeys) take(name);
  for (const name of spec.adapterNames ?? []) take(name);
  for (const name of spec.passEnv ?? []) {
    if (isRefusedName(name, spec.modelKeys)) refused.push(name);
    else take(name);
  }
  Object.assign(env, spec.defaults ?? {});
  for (const [name, value] of Object.entries(spec.requestEnv ?? {})) {
    if (isRefusedName(name, spec.modelKeys)) refused.push(name);
    else env[name] = value;
  }
  const secrets = spec.modelKeys.map((k) => env[k]).filter((v): v is string => v !== undefined && v !== '');
  return { env, secrets, refused: [...new Set(refused)].sort() };
}

/** The identity an agent's own commits carry (src/git/identity.ts, beside the check that knows it). */
export { agentIdentity };

/** Git identity variables for the agent process (its `git commit` needs one; CI runners have none). */
export function gitIdentityEnv(agent: string): Record<string, string> {
  return identityEnv(agentIdentity(agent));
}
