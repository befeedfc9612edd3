/**
 * Starting an agent CLI for one request: the scrubbed environment (with a warning for every name that
 * was asked for and refused), then one run of the process in the request's working tree with its
 * prompt, log file, timeouts and signal. Each adapter adds only what is its own: the command, its model
 * keys and settings, how it recognizes an API failure, the folder it keeps its login in.
 *
 * With `request.isolation.sandbox` the process runs in the namespace sandbox (src/exec/sandbox.ts): it
 * sees its repository, its output folder, a HOME of its own, its binary and Node.js, the Python
 * environment read-only, and nothing else of the machine — not the harness's process or environment (its
 * own PID namespace), not the runner's files, not the repository the harness works in. Whatever it leaves
 * running is killed when it exits. Its network: with the key proxy, a namespace of its own whose one way
 * out is the proxy (its base URL's port, forwarded to the proxy's socket); otherwise the machine's, or
 * none for an agent that asks for none.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import {
  type ExecResult,
  findOnPath,
  nodeReadPaths,
  programReadPaths,
  sandboxCommand,
} from '../exec/index.js';
import { type Logger, readPlainFile } from '../util/index.js';
import type { AgentRequest } from './agent.js';
import { agentEnvironment, gitIdentityEnv } from './environment.js';
import { type KeyProxy, PLACEHOLDER_KEY, withUpstreamNamed } from './key-proxy.js';
import { type LineSignal, type ProcessOutcome, runAgentProcess } from './process.js';

export interface AgentLaunch {
  /** The adapter's name: the git identity of its commits and the prefix of its warnings. */
  agent: string;
  command: string;
  args: readonly string[];
  /** What goes to stdin. Default: the request's prompt. */
  input?: string;
  /** Model API credentials the CLI needs: passed when set, and redacted. */
  modelKeys: readonly string[];
  /** Non-secret settings the CLI reads (e.g. CODEX_HOME). */
  adapterNames?: readonly string[];
  /** `agent.pass_env`. */
  passEnv: readonly string[];
  /** Variables added to the request's env (the command agent's HILLCLIMB_*). */
  extraEnv?: Readonly<Record<string, string>>;
  apiFailure?: (result: ExecResult) => string | undefined;
  /** How the CLI says the API refused its credentials (see process.ts). */
  setupFailure?: (result: ExecResult) => string | undefined;
  /** Reads the output as it arrives: a refused key or an endless API retry stops the run (process.ts). */
  watchLine?: (line: string, stream: 'stdout' | 'stderr') => LineSignal | undefined;
  apiRetryLimitMs?: number;
  /** How long it may fail to reach the model API at all (default: process.ts). */
  unreachableLimitMs?: number;
  infraExitCodes?: readonly number[];
  /**
   * The CLI's own config folder (login, settings), as the variable that names it and its default under
   * the user's home, e.g. CODEX_HOME and .codex. In the sandbox it stays writable, and the variable
   * points at it, since HOME there is an empty folder.
   */
  configDir?: { env: string; defaultInHome: string };
  /**
   * The harness's key proxy holds the credential (key-proxy.ts): every model key the CLI would get is
   * the placeholder instead, the real one is only redacted from the log, and in the sandbox the proxy is
   * all the agent's network reaches.
   */
  keyProxy?: Pick<KeyProxy, 'port' | 'socket' | 'upstream'>;
  /** In the sandbox without a key proxy: the machine's network (default), or none at all. */
  network?: 'host' | 'none';
  /** Files the process needs to read in the sandbox beyond its own (the tools' client). */
  readOnly?: readonly string[];
  logger: Logger;
}

export async function launchAgent(request: AgentRequest, launch: AgentLaunch): Promise<ProcessOutcome> {
  const { env, secrets, refused } = agentEnvironment({
    modelKeys: launch.modelKeys,
    adapterNames: launch.adapterNames,
    passEnv: launch.passEnv,
    defaults: gitIdentityEnv(launch.agent),
    requestEnv: { ...request.env, ...launch.extraEnv },
  });
  if (refused.length > 0)
    launch.logger.warn(`${launch.agent}: not passing ${refused.join(', ')} to the agent`);
  if (launch.keyProxy) {
    for (const k of launch.modelKeys) if (env[k] !== undefined) env[k] = PLACEHOLDER_KEY;
  }
  let command = launch.command;
  let args: readonly string[] = launch.args;
  const sandbox = request.isolation?.sandbox;
  if (sandbox) {
    const binary = findOnPath(launch.command);
    if (binary === undefined) {
      return {
        status: 'failed',
        exitCode: null,
        infraError: `agent binary not found: ${launch.command}`,
        durationMs: 0,
      };
    }
    const writable = [...sandbox.writable];
    mkdirSync(sandbox.home, { recursive: true });
    if (launch.configDir) {
      // A private copy of its login and settings, never the user's folder: what the agent writes there
      // (a hook, a notify command) must not run in the user's next session, and its tokens are redacted.
      const dir = env[launch.configDir.env] ?? join(homedir(), launch.configDir.defaultInHome);
      if (isAbsolute(dir) && existsSync(dir)) {
        const copy = join(sandbox.home, launch.configDir.defaultInHome);
        secrets.push(...copyConfigFolder(dir, copy, launch.keyProxy ? LOGIN_FILES : []));
        env[launch.configDir.env] = copy;
      }
    }
    if (!launch.keyProxy && launch.modelKeys.length > 0 && launch.network !== 'none') {
      launch.logger.warn(
        `${launch.agent}: no API key for the harness to hold, so the agent signs in with its own login, ` +
          'holds it, and gets the machine\'s network (docs/agents.md, "The key proxy")',
      );
    }
    env.HOME = sandbox.home;
    env.TMPDIR = '/tmp';
    const wrapped = sandboxCommand(
      {
        cwd: request.workdir,
        readOnly: [
          ...programReadPaths(binary),
          ...nodeReadPaths(),
          ...argumentFiles(launch.args, writable),
          ...(launch.readOnly ?? []),
          ...sandbox.readOnly,
        ],
        writable,
        network: launch.keyProxy ?? (launch.network === 'none' ? undefined : 'host'),
      },
      binary,
      launch.args,
    );
    command = wrapped.command;
    args = wrapped.args;
  }
  const outcome = await runAgentProcess({
    command,
    args,
    cwd: request.workdir,
    input: launch.input ?? request.prompt,
    env,
    secrets,
    logFile: request.logFile,
    timeoutMs: request.timeoutMs,
    idleTimeoutMs: request.idleTimeoutMs,
    signal: request.signal,
    apiFailure: launch.apiFailure,
    setupFailure: launch.setupFailure,
    watchLine: launch.watchLine,
    apiRetryLimitMs: launch.apiRetryLimitMs,
    unreachableLimitMs: launch.unreachableLimitMs,
    infraExitCodes: launch.infraExitCodes,
  });
  const proxy = launch.keyProxy;
  // The CLI only knew the proxy's address; the user knows their endpoint (key-proxy.ts).
  const named = (m: string | undefined) => (m === undefined || !proxy ? m : withUpstreamNamed(m, proxy));
  return {
    ...outcome,
    ...(outcome.infraError !== undefined ? { infraError: named(outcome.infraError) } : {}),
    ...(outcome.setupError !== undefined ? { setupError: named(outcome.setupError) } : {}),
    isolation: sandbox ? 'sandbox' : 'none',
  };
}

/** Files the command names by absolute path (a configured agent's script), outside its writable folders. */
function argumentFiles(args: readonly string[], writable: readonly string[]): string[] {
  const inside = (p: string) => writable.some((w) => p === w || p.startsWith(`${w}/`));
  return args.filter((a) => isAbsolute(a) && !inside(a) && existsSync(a));
}

/** Files of an agent's config folder worth copying: its login and settings, not its session history. */
const CONFIG_FILE_MAX_BYTES = 1024 * 1024;

/**
 * Copy the plain files at the top of `from` into `to` (subfolders — sessions, logs, caches — stay
 * behind); returns the long string values of its JSON files (tokens) for redaction.
 */
/**
 * Login files of the CLIs' config folders (codex's auth.json with its refresh token, Claude Code's
 * .credentials.json): left out of the agent's copy when the key proxy holds the credential.
 */
const LOGIN_FILES = ['auth.json', '.credentials.json'];

function copyConfigFolder(from: string, to: string, omit: readonly string[]): string[] {
  mkdirSync(to, { recursive: true });
  const secrets: string[] = [];
  for (const name of readdirSync(from)) {
    if (omit.includes(name)) continue;
    const src = join(from, name);
    let data: Buffer;
    try {
      data = readPlainFile(src, CONFIG_FILE_MAX_BYTES);
    } catch {
      continue; // a folder, a link, or too large
    }
    writeFileSync(join(to, name), data, { mode: 0o600 });
    if (name.endsWith('.json')) secrets.push(...tokenLikeStrings(data.toString('utf8')));
  }
  return secrets;
}

/** String values of a JSON text long enough to be a credential. */
function tokenLikeStrings(text: string): string[] {
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') {
      if (v.length >= 20 && !/\s/.test(v)) out.push(v);
    } else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  try {
    walk(JSON.parse(text));
  } catch {
    // not JSON: nothing to redact from it
  }
  return out;
}
