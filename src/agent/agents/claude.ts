/**
 * The `claude` adapter: Claude Code in print mode.
 *
 *   claude -p --verbose --output-format stream-json --permission-mode acceptEdits
 *     --allowedTools <agent.claude.allowed_tools, comma-joined> [--model <model>] [--max-turns <n>]
 *     [--add-dir <result folder>] [<agent.claude.extra_args>...]        (cwd = workdir, prompt on stdin)
 *
 * Flags checked against anthropics/claude-code-action `base-action/src/run-claude.ts` (`-p` with the
 * prompt piped to stdin; `--verbose --output-format stream-json` always appended), `base-action/src/
 * parse-sdk-options.ts` (allowed tools merged and passed comma-separated; `--max-turns`, `--model`), and
 * the Claude Code CLI reference (docs.anthropic.com/en/docs/claude-code/cli-reference: `--add-dir`,
 * `--allowedTools`, `--permission-mode` with `acceptEdits`, `--max-turns`, `--output-format`).
 *
 * Permissions: `acceptEdits` approves file edits in the working folders (the working tree and the
 * `--add-dir` result folder) without prompting; shell commands run only when an allowed-tools rule names
 * them (by default: read-only git, `git add`/`git commit`, and python for the CPU tests). In print mode
 * anything else is refused, not asked. `Edit` and `Write` are deliberately NOT allow-listed: a bare tool
 * rule approves that tool on every path, and with it Claude Code 2.1 writes outside the working folders
 * (seen with the real binary; tests/agent/claude.real.int.test.ts). Never
 * `--dangerously-skip-permissions` unless the user puts it in `extra_args`. Claude Code has no OS sandbox
 * here (an allowed `python` can still write anywhere the user can): the scrubbed environment and the CI
 * job boundary (no tokens, no cloud credentials) are the fence.
 *
 * API failures: Claude Code retries them itself and reports each retry as a stream-json
 * `{"type":"system","subtype":"api_retry","attempt","max_retries","retry_delay_ms","error_status","error"}`
 * event (`error_status` is null when no HTTP response came, e.g. connection refused), and ends a failed
 * run with a `result` event carrying `is_error`, `terminal_reason: "api_error"` and `api_error_status`
 * (the SDK message schema bundled in the 2.1.332 binary). A 401/403 is a setup error and stops the run at
 * the first retry notice; anything else is infrastructure.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { ExecResult } from '../../exec/index.js';
import type { Logger } from '../../util/index.js';
import {
  type Agent,
  type AgentOutcome,
  type AgentRequest,
  type AgentResult,
  AgentSetupError,
} from '../agent.js';
import { type KeyProxy, refusalText, startKeyProxy } from '../key-proxy.js';
import { launchAgent } from '../launch.js';
import { MCP_SERVER_NAME, toolsUrlFor, toolTimeoutSeconds, warnToolRefusals } from '../mcp-config.js';
import { outsideOf, prepareResultFile, toOutcome } from '../outcome.js';
import { firstMatchingLine, jsonLines, type LineSignal, nonJsonLines } from '../process.js';
import { readAgentResult, resultFromMessage } from '../result.js';

export interface ClaudeOptions {
  binary: string;
  model?: string;
  maxTurns?: number;
  allowedTools: readonly string[];
  extraArgs: readonly string[];
  passEnv: readonly string[];
  logger: Logger;
  /** How long Claude Code may keep retrying the model API with no answer (default: process.ts). */
  apiRetryLimitMs?: number;
  /** How long it may fail to reach the model API at all (default: process.ts). */
  unreachableLimitMs?: number;
  /** Where the credentials are looked up for the setup-error hint (default: process.env). */
  sourceEnv?: NodeJS.ProcessEnv;
}

/**
 * Enough to read the kernel, run its CPU tests and commit; nothing that reaches out. Edits need no rule:
 * `acceptEdits` approves them inside the working folders, and only there.
 */
export const DEFAULT_CLAUDE_ALLOWED_TOOLS = [
  'Read',
  'Glob',
  'Grep',
  'Bash(git status:*)',
  'Bash(git diff:*)',
  'Bash(git log:*)',
  'Bash(git show:*)',
  'Bash(git add:*)',
  'Bash(git commit:*)',
  'Bash(python:*)',
  'Bash(python3:*)',
  'Bash(.venv/bin/python:*)',
] as const;

/**
 * Claude Code's own calls home, off (telemetry, error reports, the update check, feature flags): the
 * agent reaches the model API and nothing else. Without it, 2.1.332 calls api.anthropic.com even when
 * ANTHROPIC_BASE_URL points elsewhere (seen behind a refusing proxy; tests/agent/claude.real.int.test.ts).
 */
export const CLAUDE_QUIET_ENV = { CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' } as const;

/** API key or subscription OAuth token (claude-code-action takes either). */
export const CLAUDE_MODEL_KEYS = ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN'] as const;
const CLAUDE_SETTINGS = ['ANTHROPIC_BASE_URL', 'CLAUDE_CONFIG_DIR'] as const;

/**
 * What Claude Code prints when the model API, not the agent, failed, for output without the structured
 * fields: 2.1.332's texts (`API Error: Request rejected (429)`, `API Error: 529 …`, `API Error: Connection
 * refused …`) and earlier 2.1 builds' (`Repeated 529 Overloaded errors`, `Unable to connect to API
 * (ConnectionRefused)`).
 */
const API_FAILURE = [
  /API Error:? \(?(?:429|5\d\d)\b/i,
  /Request rejected \(429\)|Repeated 529 Overloaded errors|Unable to connect to API/i,
  /overloaded_error|rate_limit_error|"type":"api_error"/,
  /API Error: (?:Connection error|Connection refused|Request timed out)/i,
  /usage limit reached|out of (?:extra )?usage/i,
  /Retrying in \d+ seconds/,
];

/** The API refused the credentials. */
const SETUP_FAILURE = [
  /Invalid API key|authentication_error|OAuth token (?:has )?expired|Please run \/login|Failed to authenticate|API Error: 40[13]\b/i,
];

/**
 * `error` values of `api_retry` events and synthetic assistant messages that no retry can fix (the enum in
 * Claude Code 2.1.332's SDK schema: authentication_failed, oauth_org_not_allowed, account_on_hold,
 * verification_required, billing_error, rate_limit, overloaded, invalid_request, model_not_found,
 * server_error, unknown, max_output_tokens, cloud_credential_error).
 */
const SETUP_ERRORS = new Set([
  'authentication_failed',
  'oauth_org_not_allowed',
  'account_on_hold',
  'verification_required',
  'billing_error',
  'model_not_found',
  'cloud_credential_error',
]);

export class ClaudeAgent implements Agent {
  readonly name = 'claude';

  constructor(private readonly opts: ClaudeOptions) {}

  async run(request: AgentRequest): Promise<AgentOutcome> {
    const source = { ...(this.opts.sourceEnv ?? process.env), ...request.env };
    // With an API key, the harness holds it: Claude Code talks to the key proxy with a placeholder.
    const { apiKey, url: upstream } = claudeCredentials(source);
    const proxy = apiKey
      ? await startKeyProxy({
          upstream,
          allow: claudeEndpoints(upstream),
          // In the sandbox the agent reaches it through its socket only: no port for anyone else.
          loopback: !request.isolation?.sandbox,
          credential: { header: 'x-api-key', value: apiKey },
          tools: request.tools,
        })
      : undefined;
    const toolsUrl = toolsUrlFor(
      this.name,
      request,
      proxy,
      this.opts.logger,
      'the harness serves them on its key proxy, which runs only when it holds the API key ' +
        '(set ANTHROPIC_API_KEY; an OAuth token keeps the agent on its own login)',
    );
    // The server's URL carries the run's token: a private file, not an argument other users could read.
    const configDir = toolsUrl ? mkdtempSync(join(tmpdir(), 'hc-claude-mcp-')) : undefined;
    try {
      const tools =
        toolsUrl && configDir && request.tools
          ? {
              configFile: writeMcpConfig(configDir, toolsUrl),
              names: request.tools.list().map((t) => claudeToolName(t.name)),
            }
          : undefined;
      return await this.runWith(request, proxy, tools);
    } finally {
      await proxy?.close();
      if (configDir) rmSync(configDir, { recursive: true, force: true });
    }
  }

  private async runWith(
    request: AgentRequest,
    proxy: KeyProxy | undefined,
    tools: { configFile: string; names: string[] } | undefined,
  ): Promise<AgentOutcome> {
    prepareResultFile(request.resultFile);
    const args = claudeArgs({
      model: this.opts.model,
      maxTurns: this.opts.maxTurns,
      // The prompt's test command names the project's interpreter by its absolute path.
      allowedTools: request.interpreter
        ? [...this.opts.allowedTools, `Bash(${request.interpreter}:*)`]
        : this.opts.allowedTools,
      resultDir: outsideOf(request.workdir, dirname(request.resultFile)),
      tools,
      extraArgs: this.opts.extraArgs,
    });
    const proc = await launchAgent(request, {
      agent: this.name,
      command: this.opts.binary,
      args,
      modelKeys: CLAUDE_MODEL_KEYS,
      adapterNames: CLAUDE_SETTINGS,
      passEnv: this.opts.passEnv,
      extraEnv: {
        ...CLAUDE_QUIET_ENV,
        ...(proxy ? { ANTHROPIC_BASE_URL: proxy.url } : {}),
        // How long one tool call may take (ms): a `screen` waits behind the loop's accelerator work.
        ...(tools ? { MCP_TOOL_TIMEOUT: String(toolTimeoutSeconds(request) * 1000) } : {}),
        // The few tools in the model's tool list from the start, not behind a search it must think of.
        ...(tools ? { ENABLE_TOOL_SEARCH: 'false' } : {}),
      },
      keyProxy: proxy,
      apiFailure: claudeApiFailure,
      configDir: { env: 'CLAUDE_CONFIG_DIR', defaultInHome: '.claude' },
      setupFailure: claudeSetupFailure,
      watchLine: claudeLineSignal,
      apiRetryLimitMs: this.opts.apiRetryLimitMs,
      unreachableLimitMs: this.opts.unreachableLimitMs,
      logger: this.opts.logger,
    });
    if (proc.setupError) {
      throw new AgentSetupError(this.name, proc.setupError, {
        hint: claudeKeyHint({ ...(this.opts.sourceEnv ?? process.env), ...request.env }),
        logFile: request.logFile,
      });
    }
    let { result, problem } = readAgentResult(request.resultFile);
    if (!result && proc.result) {
      const fromMessage = finalResult(proc.result.stdout);
      if (fromMessage) [result, problem] = [fromMessage, undefined];
    }
    if (proxy && proxy.refusals.count > 0) {
      this.opts.logger.warn(`claude: the key proxy refused ${refusalText(proxy.refusals)}`);
    }
    warnToolRefusals(this.name, proxy, this.opts.logger);
    return toOutcome(proc, request.logFile, result, problem);
  }
}

const ANTHROPIC_API_URL = 'https://api.anthropic.com';

/**
 * The API key Claude Code would send (an OAuth token is not one) and the endpoint, as its documented
 * variables say; the key proxy and the key check before a run read them here.
 */
export function claudeCredentials(source: NodeJS.ProcessEnv): { apiKey: string | undefined; url: string } {
  return {
    apiKey: source.ANTHROPIC_API_KEY?.trim() || undefined,
    url: source.ANTHROPIC_BASE_URL?.trim() || ANTHROPIC_API_URL,
  };
}

/**
 * What Claude Code 2.1 asks of the API in print mode (seen with the real binary against the fake
 * server): the Messages API, token counting, the model list and its connectivity probe. All the key
 * proxy forwards.
 */
function claudeEndpoints(base: string): Array<{ method: string; path: string }> {
  const prefix = new URL(base).pathname.replace(/\/+$/, '');
  return [
    { method: 'POST', path: `${prefix}/v1/messages` },
    { method: 'POST', path: `${prefix}/v1/messages/count_tokens` },
    { method: 'GET', path: `${prefix}/v1/models` },
    { method: 'HEAD', path: `${prefix}/api/hello` },
  ];
}

export interface ClaudeArgsInput {
  model?: string;
  maxTurns?: number;
  allowedTools: readonly string[];
  resultDir?: string;
  /** The harness's tools: the MCP config file naming the server, and the tools to allow by name. */
  tools?: { configFile: string; names: readonly string[] };
  extraArgs: readonly string[];
}

/**
 * The name Claude Code gives an MCP server's tool (`mcp__<server>__<tool>`): what the model calls and
 * what an allowed-tools rule names (code.claude.com/docs/en/mcp, docs/en/iam "MCP" permission rules).
 */
export function claudeToolName(tool: string): string {
  return `mcp__${MCP_SERVER_NAME}__${tool}`;
}

/**
 * The tools' server as `--mcp-config` reads it (`{"mcpServers": {name: {"type": "http", "url"}}}`,
 * code.claude.com/docs/en/mcp), in a file of its own (mode 0600).
 */
function writeMcpConfig(dir: string, url: string): string {
  const file = join(dir, 'mcp.json');
  const config = { mcpServers: { [MCP_SERVER_NAME]: { type: 'http', url } } };
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  return file;
}

/** The exact argument array (after the binary). Flags the user put in extra_args are not repeated. */
export function claudeArgs(i: ClaudeArgsInput): string[] {
  const user = i.extraArgs;
  const has = (...flags: string[]) => user.some((a) => flags.some((f) => a === f || a.startsWith(`${f}=`)));
  const args = ['-p', '--verbose', '--output-format', 'stream-json'];
  if (!has('--permission-mode', '--dangerously-skip-permissions'))
    args.push('--permission-mode', 'acceptEdits');
  const allowed = [...i.allowedTools, ...(i.tools?.names ?? [])];
  if (allowed.length > 0 && !has('--allowedTools', '--allowed-tools')) {
    args.push('--allowedTools', allowed.join(','));
  }
  // Only the harness's server: none of the user's, the project's (.mcp.json) or a plugin's.
  if (i.tools) args.push('--mcp-config', i.tools.configFile, '--strict-mcp-config');
  if (i.model !== undefined && !has('--model')) args.push('--model', i.model);
  if (i.maxTurns !== undefined && !has('--max-turns')) args.push('--max-turns', String(i.maxTurns));
  if (i.resultDir !== undefined) args.push('--add-dir', i.resultDir);
  args.push(...user);
  return args;
}

/** The stream's final `result` event, when there is one. */
function finalEvent(stdout: string): Record<string, unknown> | undefined {
  return jsonLines(stdout)
    .filter((e) => e.type === 'result')
    .at(-1);
}

/** The HTTP status of the API error that ended the run (`result.api_error_status`), if any. */
function apiErrorStatus(final: Record<string, unknown> | undefined): number | undefined {
  return typeof final?.api_error_status === 'number' ? final.api_error_status : undefined;
}

/** The `error` class Claude Code gave the failed call (on its synthetic assistant message). */
function assistantErrors(stdout: string): string[] {
  return jsonLines(stdout)
    .filter((e) => e.type === 'assistant' && typeof e.error === 'string')
    .map((e) => e.error as string);
}

/** Text of a failed final `result` event (`is_error`, or an `error_*` subtype). */
function failedResultText(final: Record<string, unknown> | undefined): string {
  if (!final) return '';
  const failed =
    final.is_error === true || (typeof final.subtype === 'string' && final.subtype.startsWith('error'));
  return failed && typeof final.result === 'string' ? final.result : '';
}

/**
 * Model-API failures: the final `result` event's `terminal_reason: "api_error"` / `api_error_status`
 * first, then the known texts in the final result, stderr, or plain (non-JSON) stdout.
 */
export function claudeApiFailure(result: ExecResult): string | undefined {
  const final = finalEvent(result.stdout);
  const text = failedResultText(final).split('\n')[0]!.trim();
  const status = apiErrorStatus(final);
  if (final?.is_error === true && (final.terminal_reason === 'api_error' || status !== undefined)) {
    return `${text || 'API error'} (${status === undefined ? 'no HTTP response' : `status ${status}`})`;
  }
  return firstMatchingLine([text, result.stderr, nonJsonLines(result.stdout)], API_FAILURE);
}

/** The API refused Claude Code's credentials (401/403, or an authentication `error` class). */
export function claudeSetupFailure(result: ExecResult): string | undefined {
  const final = finalEvent(result.stdout);
  const text = failedResultText(final).split('\n')[0]!.trim();
  const status = apiErrorStatus(final);
  const refused =
    status === 401 || status === 403 || assistantErrors(result.stdout).some((e) => SETUP_ERRORS.has(e));
  if (refused) return `the model API refused the credentials: ${text || `status ${status}`}`;
  const line = firstMatchingLine([text, result.stderr], SETUP_FAILURE);
  return line === undefined ? undefined : `the model API refused the credentials: ${line}`;
}

/**
 * One stream-json line as it arrives: an `api_retry` event is a retry notice (a setup error when the
 * status is 401/403 or the error class is one no retry fixes); a real assistant message (not the
 * `<synthetic>` one Claude Code writes for an API error) or a tool result means the model answered.
 */
export function claudeLineSignal(line: string, stream: 'stdout' | 'stderr'): LineSignal | undefined {
  if (stream !== 'stdout' || !line.startsWith('{')) return undefined;
  let ev: Record<string, unknown>;
  try {
    ev = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (ev.type === 'system' && ev.subtype === 'api_retry') {
    const status = typeof ev.error_status === 'number' ? ev.error_status : undefined;
    const error = typeof ev.error === 'string' ? ev.error : 'unknown';
    const what = status !== undefined ? `${status} ${error}` : noResponse(error);
    if (status === 401 || status === 403 || SETUP_ERRORS.has(error)) {
      return { setup: `the model API refused the credentials (${what})` };
    }
    return {
      retrying: `API retry ${String(ev.attempt)}/${String(ev.max_retries)}: ${what}`,
      // No status: no HTTP response came (connection refused, no network).
      unreachable: status === undefined,
    };
  }
  const message = ev.message as { model?: unknown } | undefined;
  if ((ev.type === 'assistant' && message?.model !== '<synthetic>') || ev.type === 'user') {
    return { progress: true };
  }
  return undefined;
}

/**
 * A retry notice without an HTTP status: the request never got an answer. Claude Code classes that
 * `unknown`, which says nothing; what is known is that the connection failed (refused, dropped, timed
 * out, or the name did not resolve).
 */
function noResponse(error: string): string {
  return `no HTTP response (${error === 'unknown' ? 'the connection failed or dropped' : error})`;
}

/** What to tell a user whose credentials were refused. */
export function claudeKeyHint(source: NodeJS.ProcessEnv): string {
  const where = source.ANTHROPIC_BASE_URL?.trim() || 'api.anthropic.com';
  if (source.ANTHROPIC_API_KEY?.trim()) return `ANTHROPIC_API_KEY was refused by ${where}: set a valid key`;
  if (source.CLAUDE_CODE_OAUTH_TOKEN?.trim()) {
    return `CLAUDE_CODE_OAUTH_TOKEN was refused by ${where}: create a new one with \`claude setup-token\``;
  }
  return 'neither ANTHROPIC_API_KEY nor CLAUDE_CODE_OAUTH_TOKEN is set: set one (an API key, or a token from `claude setup-token`)';
}

/** A result in the final `result` event: `structured_output` (with --json-schema) or the final text. */
function finalResult(stdout: string): AgentResult | undefined {
  const last = finalEvent(stdout);
  if (!last) return undefined;
  if (last.structured_output !== undefined) {
    const fromStructured = resultFromMessage(JSON.stringify(last.structured_output));
    if (fromStructured) return fromStructured;
  }
  return typeof last.result === 'string' ? resultFromMessage(last.result) : undefined;
}
