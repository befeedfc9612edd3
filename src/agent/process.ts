/**
 * Running an agent CLI once and classifying how it ended. Adapters never retry: the loop does, and only
 * for infrastructure failures. The classification:
 *
 * | what happened                                        | status   | infraError |
 * |------------------------------------------------------|----------|------------|
 * | exit 0                                               | finished | —          |
 * | binary missing / cannot start                        | failed   | yes        |
 * | non-zero exit, output shows a model-API failure      | failed   | yes        |
 * |   (429, 5xx, overloaded, unreachable, quota)         |          |            |
 * | the model API refused the credentials (401, 403)     | failed   | — (setupError: stopped at the first refusal) |
 * | the CLI kept retrying the model API with no progress | failed   | yes (stopped after `apiRetryLimitMs`) |
 * | the CLI could not reach the model API at all         | failed   | yes (stopped after `unreachableLimitMs`) |
 * | non-zero exit for any other reason, or a crash       | failed   | —          |
 * | wall-clock timeout                                   | timeout  | —          |
 * | idle timeout                                         | timeout  | only if the output shows the CLI was retrying a model-API failure |
 * | cancelled through the request's signal               | failed   | yes ("cancelled") |
 *
 * Idle timeouts: both CLIs retry API errors themselves and print each retry, so a silent agent is most
 * often stuck on its own command (a test waiting forever); it counts as the agent's unless its last
 * words were API-retry messages.
 *
 * Two things cannot wait for the process to end, so the adapter reads the output line by line
 * (`watchLine`): a rejected key (both CLIs retry a 401 for minutes, and no retry can fix it), and an API
 * that never answers (codex 0.169 prints `Reconnecting... waiting for network` every ~20 s for as long
 * as the endpoint is unreachable, so neither the idle timeout nor its own retry limit ever ends it).
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Isolation } from '../evidence/index.js';
import { displayCommand, ExecError, type ExecResult, run } from '../exec/index.js';
import { redact, secretsFromEnv } from '../util/index.js';
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
  /** Recognize, in the finished output, that the API refused the credentials (a setup error). */
  setupFailure?: (result: ExecResult) => string | undefined;
  /** Read each output line as it arrives (see LineSignal). */
  watchLine?: (line: string, stream: 'stdout' | 'stderr') => LineSignal | undefined;
  /**
   * How long the CLI may keep retrying the model API with no sign of progress before the run is stopped
   * as an infrastructure failure. Default DEFAULT_API_RETRY_LIMIT_MS; only used with `watchLine`.
   */
  apiRetryLimitMs?: number;
  /**
   * How long the CLI may keep failing to reach the model API at all (no HTTP answer: connection refused,
   * no network) before the run is stopped. Default DEFAULT_UNREACHABLE_LIMIT_MS; only with `watchLine`.
   */
  unreachableLimitMs?: number;
  /** Exit codes by which the agent itself reports an infrastructure failure (the command agent's 75). */
  infraExitCodes?: readonly number[];
}

/** What one output line says about the model API, as `watchLine` reads it. */
export type LineSignal =
  /** A failure no retry can fix (the key was refused): the run stops now, as a setup error. */
  | { setup: string }
  /**
   * The CLI is retrying or reconnecting to the model API; `unreachable` when no HTTP answer came at all
   * (connection refused, no network), which gets the shorter limit.
   */
  | { retrying: string; unreachable?: boolean }
  /** The model answered (a tool ran, a message arrived): the API works. */
  | { progress: true };

export interface ProcessOutcome {
  status: AgentStatus;
  exitCode: number | null;
  infraError?: string;
  /** The model API refused the agent's credentials: retrying cannot help, the user must fix the key. */
  setupError?: string;
  /** The finished process (absent when it could not start). */
  result?: ExecResult;
  durationMs: number;
  /** How the process was isolated from the harness (set by launchAgent). */
  isolation?: Isolation;
}

/** After SIGTERM, give an agent CLI this long to stop its own children before SIGKILL. */
const AGENT_KILL_GRACE_MS = 5000;

/**
 * Longer than either CLI's own retry schedule for a failing API (Claude Code 2.1: 10 retries, about
 * three minutes; codex 0.169: 5 stream retries per transport, under a minute), so a CLI that gives up by
 * itself is classified from its own final words; only an endless wait is cut short.
 */
export const DEFAULT_API_RETRY_LIMIT_MS = 5 * 60_000;

/**
 * An endpoint that never answers is a wrong URL, a proxy or no network far more often than an outage
 * that ends within minutes: stop after half a minute (the loop's retry, with its backoff, tries again).
 */
export const DEFAULT_UNREACHABLE_LIMIT_MS = 30_000;

export async function runAgentProcess(spec: AgentProcessSpec): Promise<ProcessOutcome> {
  const started = Date.now();
  mkdirSync(dirname(spec.logFile), { recursive: true });
  appendFileSync(
    spec.logFile,
    `$ ${redact(displayCommand(spec.command, spec.args), spec.secrets)}\n# cwd: ${spec.cwd}\n`,
  );
  const watch = new ApiWatch(
    spec.apiRetryLimitMs ?? DEFAULT_API_RETRY_LIMIT_MS,
    spec.unreachableLimitMs ?? DEFAULT_UNREACHABLE_LIMIT_MS,
    spec.signal,
  );
  try {
    return await runWatched(spec, started, watch);
  } finally {
    watch.dispose();
  }
}

async function runWatched(spec: AgentProcessSpec, started: number, watch: ApiWatch): Promise<ProcessOutcome> {
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
      signal: watch.signal,
      ...(spec.watchLine ? { onLine: (line, stream) => watch.read(spec.watchLine!(line, stream)) } : {}),
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
      const stop = watch.stopped;
      if (stop?.kind === 'setup') {
        appendFileSync(spec.logFile, `# stopped by the harness: ${stop.message}\n`);
        return { status: 'failed', exitCode: null, setupError: stop.message, result: ended, durationMs };
      }
      if (stop?.kind === 'api') {
        appendFileSync(spec.logFile, `# stopped by the harness: ${stop.message}\n`);
        return { status: 'failed', exitCode: null, infraError: stop.message, result: ended, durationMs };
      }
      return { status: 'failed', exitCode: null, infraError: 'cancelled', result: ended, durationMs };
    }
    // Killed by a signal nobody here sent: the agent crashed.
    return { status: 'failed', exitCode: null, result: ended, durationMs };
  }
  const durationMs = Date.now() - started;
  if (result.exitCode === 0) return { status: 'finished', exitCode: 0, result, durationMs };
  if (result.exitCode !== null && spec.infraExitCodes?.includes(result.exitCode)) {
    const said = lastWords(result.stderr);
    return {
      status: 'failed',
      exitCode: result.exitCode,
      infraError: `the agent reported an infrastructure failure (exit code ${result.exitCode})${said ? `: ${said}` : ''}`,
      result,
      durationMs,
    };
  }
  const setup = spec.setupFailure?.(result);
  if (setup) return { status: 'failed', exitCode: result.exitCode, setupError: setup, result, durationMs };
  const api = spec.apiFailure?.(result);
  return {
    status: 'failed',
    exitCode: result.exitCode,
    result,
    durationMs,
    ...(api ? { infraError: `model API failure: ${api}` } : {}),
  };
}

/** Lines of stderr an exit-75 message quotes, and the characters it keeps of them. */
const LAST_WORDS_LINES = 3;
const LAST_WORDS_CHARS = 300;

/**
 * The end of what an agent printed on stderr, on one line (`a / b / c`), bounded: why it says the
 * infrastructure failed. Its output is already redacted of the agent's own secrets; the harness's
 * secret-named variables (a token the agent never got, but could have been handed some other way) are
 * redacted too, since the line goes to the terminal, the evidence and the history.
 */
function lastWords(stderr: string): string {
  const lines = stderr
    .split(/\r?\n|\r/)
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .slice(-LAST_WORDS_LINES);
  const text = redact(lines.join(' / '), secretsFromEnv());
  return text.length > LAST_WORDS_CHARS ? `…${text.slice(-(LAST_WORDS_CHARS - 1))}` : text;
}

/**
 * Acts on the signals `watchLine` reads while the agent runs: stops the process at the first setup
 * error, when API retries go on for `limitMs` with no progress in between, and when the API cannot be
 * reached at all for `unreachableLimitMs`. Its signal also follows the request's own (cancel).
 */
class ApiWatch {
  private readonly controller = new AbortController();
  private retryTimer: NodeJS.Timeout | undefined;
  private unreachableTimer: NodeJS.Timeout | undefined;
  private lastRetry = '';
  private readonly onCancel = () => this.controller.abort();
  stopped: { kind: 'setup' | 'api'; message: string } | undefined;

  constructor(
    private readonly limitMs: number,
    private readonly unreachableLimitMs: number,
    private readonly outer: AbortSignal | undefined,
  ) {
    if (outer?.aborted) this.controller.abort();
    else outer?.addEventListener('abort', this.onCancel, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  read(signal: LineSignal | undefined): void {
    if (signal === undefined || this.stopped) return;
    if ('setup' in signal) this.stop('setup', signal.setup);
    else if ('retrying' in signal) {
      this.lastRetry = signal.retrying;
      this.retryTimer ??= this.stopAfter(
        this.limitMs,
        (s) => `the model API kept failing for ${s} s with no answer: ${this.lastRetry}`,
      );
      if (!signal.unreachable)
        this.clearUnreachable(); // an HTTP answer came: the endpoint is there
      else {
        this.unreachableTimer ??= this.stopAfter(
          this.unreachableLimitMs,
          (s) => `the model API was unreachable for ${s} s with no answer: ${this.lastRetry}`,
        );
      }
    } else {
      clearTimeout(this.retryTimer);
      this.retryTimer = undefined;
      this.clearUnreachable();
    }
  }

  private stopAfter(ms: number, message: (seconds: number) => string): NodeJS.Timeout {
    return setTimeout(() => this.stop('api', message(Math.round(ms / 1000))), ms);
  }

  private clearUnreachable(): void {
    clearTimeout(this.unreachableTimer);
    this.unreachableTimer = undefined;
  }

  private stop(kind: 'setup' | 'api', message: string): void {
    if (this.controller.signal.aborted) return;
    this.stopped = { kind, message: message.length > 300 ? `${message.slice(0, 299)}…` : message };
    this.controller.abort();
  }

  dispose(): void {
    clearTimeout(this.retryTimer);
    clearTimeout(this.unreachableTimer);
    this.outer?.removeEventListener('abort', this.onCancel);
  }
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

/**
 * The last line of the first of `texts` that has one matching any pattern, trimmed to a readable length:
 * where a CLI reports every retry before the error it gave up on, the last word is the cause.
 */
export function lastMatchingLine(texts: readonly string[], patterns: readonly RegExp[]): string | undefined {
  for (const text of texts) {
    const line = text.split(/\r?\n|\r/).findLast((l) => patterns.some((p) => p.test(l)));
    if (line !== undefined) {
      const t = line.trim();
      return t.length > 300 ? `${t.slice(0, 299)}…` : t;
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
