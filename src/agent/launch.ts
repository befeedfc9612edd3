/**
 * Starting an agent CLI for one request: the scrubbed environment (with a warning for every name that
 * was asked for and refused), then one run of the process in the request's working tree with its
 * prompt, log file, timeouts and signal. Each adapter adds only what is its own: the command, its model
 * keys and settings, how it recognizes an API failure.
 */
import type { ExecResult } from '../exec/exec.js';
import type { Logger } from '../util/log.js';
import type { AgentRequest } from './agent.js';
import { agentEnvironment, gitIdentityEnv } from './environment.js';
import { type ProcessOutcome, runAgentProcess } from './process.js';

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
  infraExitCodes?: readonly number[];
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
  return runAgentProcess({
    command: launch.command,
    args: launch.args,
    cwd: request.workdir,
    input: launch.input ?? request.prompt,
    env,
    secrets,
    logFile: request.logFile,
    timeoutMs: request.timeoutMs,
    idleTimeoutMs: request.idleTimeoutMs,
    signal: request.signal,
    apiFailure: launch.apiFailure,
    infraExitCodes: launch.infraExitCodes,
  });
}
