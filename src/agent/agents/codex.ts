/**
 * The `codex` adapter: OpenAI Codex CLI, non-interactive (`codex exec`).
 *
 *   codex exec --json --color never --sandbox workspace-write --ephemeral -C <workdir>
 *     --output-last-message <log>.last-message.txt --output-schema <result schema>
 *     -c sandbox_workspace_write.network_access=false -c sandbox_workspace_write.exclude_slash_tmp=true
 *     -c analytics.enabled=false -c check_for_update_on_startup=false -c features.apps=false
 *     -c features.plugins=false
 *     [-c openai_base_url="<OPENAI_BASE_URL>"] [-m <model>] [-c model_reasoning_effort="<effort>"]
 *     [--add-dir <result folder>] [<agent.codex.extra_args>...] -        (prompt on stdin)
 *
 * Flags checked against openai/codex `codex-rs/exec/src/cli.rs` (`--json`, `--color`, `--ephemeral`,
 * `-o/--output-last-message`, `--output-schema`, a `-` prompt read from stdin), `codex-rs/utils/cli/src/
 * shared_options.rs` (`-m`, `-s/--sandbox`, `-C/--cd`, `--add-dir` "additional directories that should be
 * writable", `--dangerously-bypass-approvals-and-sandbox`), `codex-rs/utils/cli/src/config_override.rs`
 * (`-c key=value`, global, TOML values), `codex-rs/exec/src/lib.rs` (exec defaults the approval policy to
 * `never`), `docs/exec.md` (JSONL events; CODEX_API_KEY) and developers.openai.com/codex
 * "Agent approvals & security" (workspace-write: writes limited to the workspace, network off). Every
 * flag, config key and event named here is exercised against the real 0.169 binary in
 * tests/agent/codex.real.int.test.ts.
 *
 * Credentials and endpoint (what codex 0.169 really reads, seen with the real binary): `codex exec`
 * authenticates with `CODEX_API_KEY` (or a `codex login` in CODEX_HOME) and ignores `OPENAI_API_KEY`, so
 * a user's OPENAI_API_KEY is handed over as CODEX_API_KEY when CODEX_API_KEY is unset. It ignores
 * `OPENAI_BASE_URL` too: the built-in `openai` provider takes its endpoint from the `openai_base_url`
 * config key (`codex-rs/model-provider-info/src/lib.rs`: built_in_model_providers(openai_base_url)), so
 * OPENAI_BASE_URL becomes `-c openai_base_url=…` unless extra_args pick an endpoint or provider.
 *
 * Sandbox: workspace-write without network, never danger-full-access or the bypass flag unless the user
 * puts it in `extra_args` (a flag given there replaces ours). Workspace-write also makes `/tmp` and
 * `$TMPDIR` writable by default; `/tmp` is excluded and TMPDIR points at a private scratch folder beside
 * the result file, so the agent writes only its working tree, the result folder and that scratch. In
 * workspace-write codex keeps `.git` read-only, so the agent cannot commit; the prompt gets a note saying
 * so, and the harness commits what the agent left in the working tree (leftovers.ts).
 *
 * Inside the harness's own namespace sandbox (`request.isolation.sandbox`, src/exec/sandbox.ts) codex's
 * sandbox cannot start: its bubblewrap fails with "bwrap: setting up uid map: Operation not permitted"
 * (no capabilities left to map a nested user namespace), and the legacy Landlock path refuses
 * workspace-write ("filesystem-restricted execution requires bubblewrap"), so every command and every
 * apply_patch fails and each iteration would be a no-op (seen with the real 0.169 binary). There codex
 * runs with `--sandbox danger-full-access`: the harness's sandbox is the fence (writes only to the
 * agent's repository and output folder); the network stays shared, as the harness's sandbox shares it for
 * the model API.
 *
 * The final message is constrained to the result schema, and is used when the agent did not write the
 * result file.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { ExecResult } from '../../exec/index.js';
import type { Logger } from '../../util/index.js';
import { type Agent, type AgentOutcome, type AgentRequest, AgentSetupError } from '../agent.js';
import { type KeyProxy, PLACEHOLDER_KEY, refusalText, startKeyProxy } from '../key-proxy.js';
import { launchAgent } from '../launch.js';
import { MCP_SERVER_NAME, toolsUrlFor, toolTimeoutSeconds, warnToolRefusals } from '../mcp-config.js';
import { outsideOf, prepareResultFile, toOutcome } from '../outcome.js';
import { firstMatchingLine, jsonLines, type LineSignal, lastMatchingLine, nonJsonLines } from '../process.js';
import { RESULT_JSON_SCHEMA, readAgentResult, resultFromMessage } from '../result.js';

export interface CodexOptions {
  binary: string;
  model?: string;
  reasoningEffort?: string;
  extraArgs: readonly string[];
  passEnv: readonly string[];
  logger: Logger;
  /** How long codex may keep retrying the model API with no answer (default: process.ts). */
  apiRetryLimitMs?: number;
  /** How long it may fail to reach the model API at all (default: process.ts). */
  unreachableLimitMs?: number;
  /** Where OPENAI_API_KEY / CODEX_API_KEY / OPENAI_BASE_URL are read (default: process.env). */
  sourceEnv?: NodeJS.ProcessEnv;
}

/** Model credentials: CODEX_API_KEY is what `codex exec` reads; OPENAI_API_KEY is handed over as it. */
export const CODEX_MODEL_KEYS = ['CODEX_API_KEY', 'OPENAI_API_KEY'] as const;
/** Non-secret settings: where codex keeps its login and config. */
const CODEX_SETTINGS = ['CODEX_HOME'] as const;

export const CODEX_SANDBOX_NOTE = `

## Note from the harness (codex sandbox)

This sandbox keeps \`.git\` read-only, so \`git commit\` will fail here. Leave your one change uncommitted in
the working tree: the harness commits it for you, using your result's summary as the commit message. If you
decide on no change, leave the working tree clean.
`;

/**
 * What codex prints when the model API, not the agent, failed (codex-rs/core/src/error.rs messages:
 * RetryLimit, UnexpectedStatus, Stream, InternalServerError, ConnectionFailed, UsageLimitReached,
 * QuotaExceeded; and the reconnect loop's `Reconnecting... n/m (…)` / `Reconnecting... waiting for
 * network (…)`, seen from 0.169).
 */
const API_FAILURE = [
  /exceeded retry limit, last status: (?:429|5\d\d)/i,
  /unexpected status (?:429|5\d\d)/i,
  /stream disconnected before completion/i,
  /currently experiencing high demand/i,
  /Connection failed:|error sending request for url|Error while reading the server response/i,
  /(?:connection|request) (?:timed out|refused|reset)/i,
  /You've hit your usage limit|Quota exceeded|usage limit/i,
  /Reconnecting\.\.\. (?:\d+\/\d+|waiting for network)/,
];

/**
 * A retry notice that got no HTTP answer at all: codex 0.169 says `waiting for network` while the
 * endpoint refuses connections or cannot be resolved; a transport error names the connect failure.
 */
const UNREACHABLE =
  /waiting for network|error sending request|connection refused|dns error|failed to lookup/i;

const OPENAI_API_URL = 'https://api.openai.com/v1';

/**
 * The key codex would send and the endpoint it would send it to, as its documented variables say
 * (`baseUrl` is undefined when OPENAI_BASE_URL is unset; `url` is then the default). The key proxy
 * and the key check before a run read them here, so both agree with the CLI.
 */
export function codexCredentials(source: NodeJS.ProcessEnv): {
  apiKey: string | undefined;
  baseUrl: string | undefined;
  url: string;
} {
  const baseUrl = nonEmpty(source.OPENAI_BASE_URL);
  return {
    apiKey: nonEmpty(source.CODEX_API_KEY) ?? nonEmpty(source.OPENAI_API_KEY),
    baseUrl,
    url: baseUrl ?? OPENAI_API_URL,
  };
}

/**
 * What `codex exec` asks of the Responses API (codex-rs/codex-api: the WebSocket transport's GET and
 * the HTTP fallback's POST on {base}/responses, and the model list): all the key proxy forwards.
 */
function codexEndpoints(base: string): Array<{ method: string; path: string }> {
  const prefix = new URL(base).pathname.replace(/\/+$/, '');
  return [
    { method: 'POST', path: `${prefix}/responses` },
    { method: 'GET', path: `${prefix}/responses` },
    { method: 'GET', path: `${prefix}/models` },
  ];
}

/** The API refused the credentials: no retry can fix it. */
const SETUP_FAILURE = [
  /unexpected status (?:401|403)\b/i,
  /\b401 Unauthorized\b/i,
  /Missing environment variable: `(?:OPENAI|CODEX)_API_KEY`|not logged in|refresh token/i,
];

/**
 * codex's own calls home, off: the agent reaches the model API and nothing else. Each one was seen
 * with the real 0.169 binary behind a refusing proxy: analytics (ab.chatgpt.com), the plugin
 * marketplace (github.com, api.github.com), apps (chatgpt.com), the update check.
 */
const QUIET_CONFIG = [
  'analytics.enabled=false',
  'check_for_update_on_startup=false',
  'features.apps=false',
  'features.plugins=false',
] as const;

/** The warning codex 0.169 gives for a model outside its catalog (no apply_patch tool for it). */
const UNKNOWN_MODEL = /Model metadata for `([^`]+)` not found/;

export class CodexAgent implements Agent {
  readonly name = 'codex';

  constructor(private readonly opts: CodexOptions) {}

  async run(request: AgentRequest): Promise<AgentOutcome> {
    prepareResultFile(request.resultFile);
    const lastMessageFile = `${request.logFile.replace(/\.log$/, '')}.last-message.txt`;
    rmSync(lastMessageFile, { force: true });
    // Beside the result file when that lies outside the working tree: a folder the agent can see (and
    // write) even in the sandbox, that never ends up in its change.
    const resultDir = outsideOf(request.workdir, dirname(request.resultFile));
    const scratch = mkdtempSync(join(resultDir ?? tmpdir(), resultDir ? '.codex-' : 'hc-codex-'));
    let proxy: KeyProxy | undefined;
    try {
      const schemaFile = join(scratch, 'result.schema.json');
      writeFileSync(schemaFile, `${JSON.stringify(RESULT_JSON_SCHEMA, null, 2)}\n`);
      // The agent's TMPDIR: workspace-write keeps $TMPDIR writable, and this one holds nothing else. (In
      // the harness's namespace sandbox launchAgent points TMPDIR at that sandbox's own /tmp instead.)
      const agentTmp = join(scratch, 'tmp');
      mkdirSync(agentTmp);
      const source = { ...(this.opts.sourceEnv ?? process.env), ...request.env };
      const { apiKey, baseUrl, url } = codexCredentials(source);
      // With an API key, the harness holds it: codex talks to the key proxy with a placeholder.
      proxy = apiKey
        ? await startKeyProxy({
            upstream: url,
            allow: codexEndpoints(url),
            // In the sandbox the agent reaches it through its socket only: no port for anyone else.
            loopback: !request.isolation?.sandbox,
            credential: { header: 'authorization', value: `Bearer ${apiKey}` },
            tools: request.tools,
          })
        : undefined;
      const toolsUrl = toolsUrlFor(
        this.name,
        request,
        proxy,
        this.opts.logger,
        'the harness serves them on its key proxy, which runs only when it holds the API key ' +
          '(set OPENAI_API_KEY or CODEX_API_KEY; a `codex login` keeps the agent on its own login)',
      );
      const args = codexArgs({
        insideHarnessSandbox: Boolean(request.isolation?.sandbox),
        workdir: request.workdir,
        lastMessageFile,
        schemaFile,
        resultDir: outsideOf(request.workdir, dirname(request.resultFile)),
        baseUrl: proxy?.url ?? baseUrl,
        model: this.opts.model,
        reasoningEffort: this.opts.reasoningEffort,
        tools: toolsUrl ? { url: toolsUrl, timeoutSec: toolTimeoutSeconds(request) } : undefined,
        extraArgs: this.opts.extraArgs,
      });
      const proc = await launchAgent(request, {
        agent: this.name,
        command: this.opts.binary,
        args,
        // The note is true only in our sandbox; a user who replaced it via extra_args gets the bare prompt.
        input: args.includes('workspace-write') ? `${request.prompt}${CODEX_SANDBOX_NOTE}` : request.prompt,
        modelKeys: CODEX_MODEL_KEYS,
        adapterNames: CODEX_SETTINGS,
        passEnv: this.opts.passEnv,
        extraEnv: { TMPDIR: agentTmp, ...(apiKey ? { CODEX_API_KEY: PLACEHOLDER_KEY } : {}) },
        keyProxy: proxy,
        apiFailure: codexApiFailure,
        configDir: { env: 'CODEX_HOME', defaultInHome: '.codex' },
        setupFailure: codexSetupFailure,
        watchLine: codexLineSignal,
        apiRetryLimitMs: this.opts.apiRetryLimitMs,
        unreachableLimitMs: this.opts.unreachableLimitMs,
        logger: this.opts.logger,
      });
      const unknownModel = proc.result?.stdout.match(UNKNOWN_MODEL)?.[1];
      if (unknownModel) {
        this.opts.logger.warn(
          `codex: model ${unknownModel} is not in this codex's model catalog (codex debug models --bundled): ` +
            'it gets no apply_patch tool and edits through shell commands only',
        );
      }
      if (proc.setupError) {
        throw new AgentSetupError(this.name, proc.setupError, {
          hint: codexKeyHint(source, nonEmpty(source.OPENAI_BASE_URL)),
          logFile: request.logFile,
        });
      }

      let { result, problem } = readAgentResult(request.resultFile);
      if (!result && existsSync(lastMessageFile)) {
        const fromMessage = resultFromMessage(readFileSync(lastMessageFile, 'utf8'));
        if (fromMessage) [result, problem] = [fromMessage, undefined];
      }
      // What the agent changed stays in its working tree: the loop takes it from there as plain files
      // (workspace/agent-tree.ts) and never runs git in a repository the agent could rewrite.
      if (proxy && proxy.refusals.count > 0) {
        this.opts.logger.warn(`codex: the key proxy refused ${refusalText(proxy.refusals)}`);
      }
      warnToolRefusals(this.name, proxy, this.opts.logger);
      return toOutcome(proc, request.logFile, result, problem);
    } finally {
      await proxy?.close();
      rmSync(scratch, { recursive: true, force: true });
    }
  }
}

export interface CodexArgsInput {
  /** The process runs in the harness's namespace sandbox, where codex's own cannot start (see above). */
  insideHarnessSandbox?: boolean;
  workdir: string;
  lastMessageFile: string;
  schemaFile: string;
  /** A folder outside the workdir the agent must be able to write (the result file's), if any. */
  resultDir?: string;
  /** The model API's base URL (OPENAI_BASE_URL), when not the default. */
  baseUrl?: string;
  model?: string;
  reasoningEffort?: string;
  /** The harness's tools: the MCP endpoint's URL and how long one call may take. */
  tools?: { url: string; timeoutSec: number };
  extraArgs: readonly string[];
}

/** The exact argument array (after the binary). Flags the user put in extra_args are not repeated. */
export function codexArgs(i: CodexArgsInput): string[] {
  const user = i.extraArgs;
  const has = (...flags: string[]) => user.some((a) => flags.some((f) => a === f || a.startsWith(`${f}=`)));
  const configures = (...keys: string[]) => user.some((a) => keys.some((k) => a.startsWith(`${k}=`)));
  const args = ['exec', '--json'];
  if (!has('--color')) args.push('--color', 'never');
  if (!has('--sandbox', '-s', '--dangerously-bypass-approvals-and-sandbox', '--yolo')) {
    args.push('--sandbox', i.insideHarnessSandbox ? 'danger-full-access' : 'workspace-write');
  }
  if (!has('--ephemeral')) args.push('--ephemeral');
  args.push('-C', i.workdir, '--output-last-message', i.lastMessageFile, '--output-schema', i.schemaFile);
  args.push('-c', 'sandbox_workspace_write.network_access=false');
  args.push('-c', 'sandbox_workspace_write.exclude_slash_tmp=true');
  for (const quiet of QUIET_CONFIG) args.push('-c', quiet);
  if (i.baseUrl !== undefined && !configures('openai_base_url', 'model_provider')) {
    args.push('-c', `openai_base_url=${JSON.stringify(i.baseUrl)}`);
  }
  if (i.model !== undefined && !has('-m', '--model')) args.push('-m', i.model);
  if (i.reasoningEffort !== undefined) args.push('-c', `model_reasoning_effort="${i.reasoningEffort}"`);
  if (i.resultDir !== undefined) args.push('--add-dir', i.resultDir);
  if (i.tools) args.push(...toolsConfig(i.tools));
  args.push(...user, '-');
  return args;
}

/**
 * The tools' MCP server as codex config overrides (codex-rs/config/src/mcp_types.rs RawMcpServerConfig:
 * `url` makes it a streamable-HTTP server; `default_tools_approval_mode` is `auto`, `prompt` or
 * `approve`). `approve` runs its tools without asking: in `exec` the approval policy is `never`, so a call
 * codex would ask about is refused instead — with `prompt`, and with `auto` (the default) under
 * workspace-write (seen with the real 0.169; under danger-full-access `auto` runs them, so the harness's
 * sandbox alone would not show it). `required`: exec stops if the server cannot start, rather
 * than run an iteration whose prompt names tools it does not have.
 */
function toolsConfig(tools: { url: string; timeoutSec: number }): string[] {
  const key = `mcp_servers.${MCP_SERVER_NAME}`;
  return [
    `${key}.url=${JSON.stringify(tools.url)}`,
    `${key}.default_tools_approval_mode="approve"`,
    `${key}.tool_timeout_sec=${tools.timeoutSec}`,
    `${key}.required=true`,
  ].flatMap((c) => ['-c', c]);
}

/**
 * The messages codex reported as errors, `error` events and `turn.failed`, in their order, each on one
 * line: a message can quote an HTTP body with its own line breaks (a proxy's chunked 404 arrives as
 * `404 Not Found: 59\r\n{…}\r\n0`), which must not cut it short.
 */
function errorMessages(stdout: string): string[] {
  const messages: string[] = [];
  for (const ev of jsonLines(stdout)) {
    if (ev.type === 'error' && typeof ev.message === 'string') messages.push(ev.message);
    const err = ev.error as { message?: unknown } | undefined;
    if (ev.type === 'turn.failed' && typeof err?.message === 'string') messages.push(err.message);
  }
  return messages.map((m) => m.replace(/\s*[\r\n]+\s*/g, ' '));
}

/**
 * Model-API failures in codex's JSONL events (`error`, `turn.failed`) and its plain stderr. The last one
 * decides: codex reports each retry as it goes (a WebSocket handshake refused before its HTTP fallback,
 * say), and the error it gave up on comes last (`turn.failed`: `exceeded retry limit, last status: 429`).
 */
export function codexApiFailure(result: ExecResult): string | undefined {
  const messages = errorMessages(result.stdout).join('\n');
  return lastMatchingLine([messages, result.stderr, nonJsonLines(result.stdout)], API_FAILURE);
}

/** The API refused codex's credentials (in its error events or stderr). */
export function codexSetupFailure(result: ExecResult): string | undefined {
  const messages = errorMessages(result.stdout).join('\n');
  const line = firstMatchingLine([messages, result.stderr], SETUP_FAILURE);
  return line === undefined ? undefined : `the model API refused the credentials: ${line}`;
}

/**
 * One line of `codex exec --json` as it arrives (event types from codex-rs/exec/src/exec_events.rs):
 * an `error` event is a retry notice (`Reconnecting... …`), and a setup error when the status is 401 or
 * 403; an `item.started` / `item.completed` that is not itself an error means the model answered.
 */
export function codexLineSignal(line: string, stream: 'stdout' | 'stderr'): LineSignal | undefined {
  if (stream !== 'stdout' || !line.startsWith('{')) return undefined;
  let ev: { type?: unknown; message?: unknown; item?: { type?: unknown } };
  try {
    ev = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (ev.type === 'error' && typeof ev.message === 'string') {
    if (SETUP_FAILURE.some((p) => p.test(ev.message as string))) {
      return { setup: `the model API refused the credentials: ${ev.message}` };
    }
    if (!ev.message.startsWith('Reconnecting...')) return undefined;
    const notice = ev.message.replace(/\s*[\r\n]+\s*/g, ' '); // a quoted HTTP body's line breaks
    return { retrying: notice, unreachable: UNREACHABLE.test(notice) };
  }
  if ((ev.type === 'item.started' || ev.type === 'item.completed') && ev.item?.type !== 'error') {
    return { progress: true };
  }
  return undefined;
}

/** What to tell a user whose key was refused: which variable held it, and where it was sent. */
export function codexKeyHint(source: NodeJS.ProcessEnv, baseUrl: string | undefined): string {
  const where = baseUrl ?? 'api.openai.com';
  if (nonEmpty(source.CODEX_API_KEY)) return `CODEX_API_KEY was refused by ${where}: set a valid key there`;
  if (nonEmpty(source.OPENAI_API_KEY)) {
    return `OPENAI_API_KEY (passed to codex as CODEX_API_KEY, the only key codex exec reads) was refused by ${where}: set a valid key`;
  }
  return 'neither OPENAI_API_KEY nor CODEX_API_KEY is set: set one to an OpenAI API key (or run `codex login` as this user)';
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
