/**
 * Running git: the one place hillclimb starts a `git` process (through src/exec, argument arrays only).
 * Every call gets the same non-interactive, English-speaking environment: a credential prompt would
 * hang an unattended loop, and callers read git's messages (lock contention, a protected branch).
 */
import { type ExecOptions, type ExecResult, run } from '../exec/index.js';

/** Never prompt (terminal or Git Credential Manager); stable English messages. */
export const GIT_ENV: Readonly<Record<string, string>> = {
  GIT_TERMINAL_PROMPT: '0',
  GCM_INTERACTIVE: 'never',
  LC_ALL: 'C',
  LANGUAGE: 'C',
};

/**
 * Settings for git calls in a repository an agent may have written to. Hooks and fsmonitor run
 * arbitrary programs named by repository config or files under .git; quotePath=false keeps non-ASCII
 * paths readable.
 */
export const HARDENING_CONFIG: Readonly<Record<string, string>> = {
  'core.hooksPath': '/dev/null',
  'core.fsmonitor': 'false',
  'core.quotePath': 'false',
};

/** Generous: a fetch over a slow network is the longest thing git does for hillclimb. */
export const DEFAULT_GIT_TIMEOUT_MS = 10 * 60 * 1000;

export interface GitCommandOptions {
  /** The git program. Default `git` (found on PATH by src/exec). */
  binary?: string;
  cwd?: string;
  /** Extra environment (e.g. GIT_DIR, GIT_INDEX_FILE, auth through GIT_CONFIG_*; see ./auth.ts). */
  env?: Record<string, string | undefined>;
  /** `-c key=value` settings for this command, before the verb. */
  config?: Readonly<Record<string, string>>;
  /** Strings masked in output and errors (tokens). */
  redact?: readonly string[];
  /** Exit codes that are answers rather than failures (e.g. `merge-base --is-ancestor`). Default [0]. */
  allowedExitCodes?: ExecOptions['allowedExitCodes'];
  /** Default DEFAULT_GIT_TIMEOUT_MS. */
  timeoutMs?: number;
  input?: string;
}

/** Run `git <args>`. Throws src/exec's ExecError on a disallowed exit, naming the (redacted) command. */
export function runGit(args: readonly string[], opts: GitCommandOptions = {}): Promise<ExecResult> {
  const config = Object.entries(opts.config ?? {}).flatMap(([k, v]) => ['-c', `${k}=${v}`]);
  return run(opts.binary ?? 'git', [...config, ...args], {
    ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
    env: { ...GIT_ENV, ...opts.env },
    ...(opts.redact ? { redact: opts.redact } : {}),
    ...(opts.allowedExitCodes !== undefined ? { allowedExitCodes: opts.allowedExitCodes } : {}),
    timeoutMs: opts.timeoutMs ?? DEFAULT_GIT_TIMEOUT_MS,
    ...(opts.input !== undefined ? { input: opts.input } : {}),
  });
}
