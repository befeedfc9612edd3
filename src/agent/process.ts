/**
 * Running an agent CLI once and classifying how it ended. Adapters never retry: the loop does, and only
 * for infrastructure failures. The classification:
 *
 * | what happened                                        | status   | infraError |
 * |------------------------------------------------------|----------|------------|
 * | exit 0                                               | finished | —          |
 * | binary missing / cannot start                        | failed   | yes        |
 * | non-zero exit, output shows a model-API failure      | failed   | yes        |
 * |   (429, 5xx, overloaded, unreachable, auth, quota)   |          |            |
 * | non-zero exit for any other reason, or a crash       | failed   | —          |
 * | wall-clock timeout                                   | timeout  | —          |
 * | idle timeout                                         | timeout  | only if the output shows the CLI was retrying a model-API failure |
 * | cancelled through the request's signal               | failed   | yes ("cancelled") |
 *
 * Idle timeouts: both CLIs retry API errors themselves and print each retry, so a silent agent is most
 * often stuck on its own command (a test waiting forever); it counts as the agent's unless its last
 * words were API-retry messages.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Isolation } from '../evidence/iteration.js';
import { displayCommand, ExecError, type ExecResult, run } from '../exec/exec.js';
import { redact } from '../util/redact.js';
import type { AgentStatus } from './agent.js';

export interface AgentProcessSpec {
  command: string;
  args: readonly string[];
  cwd: string;
  /** Written to the agent's stdin (the prompt). */
  input: string;
  /** The complete environment (the process inherits nothing else). */
  env: Record<string, string>;
  /** Redacted from the log file, the output and error messages. */
  secrets: readonly string[];
  logFile: string;
  timeoutMs: number;
  idleTimeoutMs: number;
  signal?: AbortSignal;
  /** Recognize a model-API failure in the output; returns a one-line description. */
  apiFailure?: (result: ExecResult) => string | undefined;
  /** Exit codes by which the agent itself reports an infrastructure failure (the command agent's 75). */
  infraExitCodes?: readonly number[];
}

export interface ProcessOutcome {
  status: AgentStatus;
  exitCode: number | null;
  infraError?: string;
  /** The finished process (absent when it could not start). */
  result?: ExecResult;
  durationMs: number;
  /** How the process was isolated from the harness (set by launchAgent). */
  isolation?: Isolation;
}

/** After SIGTERM, give an agent CLI this long to stop its own children before SIGKILL. */
const AGENT_KILL_GRACE_MS = 5000;

export async function runAgentProcess(spec: AgentProcessSpec): Promise<ProcessOutcome> {
  const started = Date.now();
  mkdirSync(dirname(spec.logFile), { recursive: true });
  appendFileSync(
    spec.logFile,
    `$ ${redact(displayCommand(spec.command, spec.args), spec.secrets)}\n# cwd: ${spec.cwd}\n`,
  );
  let result: ExecResult;
  try {
    result = await run(spec.command, spec.args, {
      cwd: spec.cwd,
      env: spec.env,
      inheritEnv: false,
      input: spec.input,
      allowedExitCodes: 'any',
      timeoutMs: spec.timeoutMs > 0 ? spec.timeoutMs : undefined,
      idleTimeoutMs: spec.idleTimeoutMs > 0 ? spec.idleTimeoutMs : undefined,
      killGraceMs: AGENT_KILL_GRACE_MS,
      logFile: spec.logFile,
      redact: spec.secrets,
      signal: spec.signal,
    });
  } catch (e) {
    if (!(e instanceof ExecError)) throw e;
    const durationMs = Date.now() - started;
    const ended = e.result;
    if (ended === undefined) {
      const missing = e.message.includes('command not found');
      appendFileSync(spec.logFile, `# ${e.message}\n`);
      return {
        status: 'failed',
        exitCode: null,
        infraError: missing
          ? `agent binary not found: ${spec.command}`
          : `agent could not start: ${e.message}`,
        durationMs,
      };
    }
    if (ended.killedBy === 'timeout') {
      return { status: 'timeout', exitCode: null, result: ended, durationMs };
    }
    if (ended.killedBy === 'idle-timeout') {
      const api = spec.apiFailure?.(ended);
      return {
        status: 'timeout',
        exitCode: null,
        result: ended,
        durationMs,
        ...(api ? { infraError: `went silent while retrying the model API: ${api}` } : {}),
      };
    }
    if (ended.killedBy === 'abort') {
      return { status: 'failed', exitCode: null, infraError: 'cancelled', result: ended, durationMs };
    }
    // Killed by a signal nobody here sent: the agent crashed.
    return { status: 'failed', exitCode: null, result: ended, durationMs };
  }
  const durationMs = Date.now() - started;
  if (result.exitCode === 0) return { status: 'finished', exitCode: 0, result, durationMs };
  if (result.exitCode !== null && spec.infraExitCodes?.includes(result.exitCode)) {
    return {
      status: 'failed',
      exitCode: result.exitCode,
      infraError: `the agent reported an infrastructure failure (exit code ${result.exitCode})`,
      result,
      durationMs,
    };
  }
  const api = spec.apiFailure?.(result);
  return {
    status: 'failed',
    exitCode: result.exitCode,
    result,
    durationMs,
    ...(api ? { infraError: `model API failure: ${api}` } : {}),
  };
}

/** The first line among `texts` that matches any pattern, trimmed to a readable length. */
export function firstMatchingLine(texts: readonly string[], patterns: readonly RegExp[]): string | undefined {
  for (const text of texts) {
    for (const line of text.split('\n')) {
      if (patterns.some((p) => p.test(line))) {
        const t = line.trim();
        return t.length > 300 ? `${t.slice(0, 299)}…` : t;
      }
    }
  }
  return undefined;
}

/** Parse JSON Lines, skipping lines that are not JSON objects. */
export function jsonLines(text: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t.startsWith('{')) continue;
    try {
      const v: unknown = JSON.parse(t);
      if (typeof v === 'object' && v !== null && !Array.isArray(v)) out.push(v as Record<string, unknown>);
    } catch {
      // not an event line
    }
  }
  return out;
}

/** Lines of `text` that are not JSON objects (plain error output mixed into an event stream). */
export function nonJsonLines(text: string): string {
  return text
    .split('\n')
    .filter((l) => !l.trim().startsWith('{'))
    .join('\n');
}
