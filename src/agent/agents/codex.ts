/**
 * The `codex` adapter: OpenAI Codex CLI, non-interactive (`codex exec`).
 *
 *   codex exec --json --color never --sandbox workspace-write --ephemeral -C <workdir>
 *     --output-last-message <log>.last-message.txt --output-schema <result schema>
 *     -c sandbox_workspace_write.network_access=false [-m <model>] [-c model_reasoning_effort="<effort>"]
 *     [--add-dir <result folder>] [<agent.codex.extra_args>...] -        (prompt on stdin)
 *
 * Flags checked against openai/codex `codex-rs/exec/src/cli.rs` (`--json`, `--color`, `--ephemeral`,
 * `-o/--output-last-message`, `--output-schema`, a `-` prompt read from stdin), `codex-rs/utils/cli/src/
 * shared_options.rs` (`-m`, `-s/--sandbox`, `-C/--cd`, `--add-dir` "additional directories that should be
 * writable", `--dangerously-bypass-approvals-and-sandbox`), `codex-rs/utils/cli/src/config_override.rs`
 * (`-c key=value`, global, TOML values), `codex-rs/exec/src/lib.rs` (exec defaults the approval policy to
 * `never`), `docs/exec.md` (JSONL events; CODEX_API_KEY) and developers.openai.com/codex
 * "Agent approvals & security" (workspace-write: writes limited to the workspace, network off).
 *
 * Sandbox: workspace-write without network, never danger-full-access or the bypass flag unless the user
 * puts it in `extra_args` (a flag given there replaces ours). In workspace-write codex keeps `.git`
 * read-only, so the agent cannot commit; the prompt gets a note saying so, and the harness commits what
 * the agent left in the working tree (leftovers.ts). The final message is constrained to the result
 * schema, and is used when the agent did not write the result file.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { ExecResult } from '../../exec/exec.js';
import type { Logger } from '../../util/log.js';
import { Git } from '../../workspace/git.js';
import type { Agent, AgentOutcome, AgentRequest } from '../agent.js';
import { launchAgent } from '../launch.js';
import { commitLeftovers } from '../leftovers.js';
import { outsideOf, prepareResultFile, toOutcome } from '../outcome.js';
import { firstMatchingLine, jsonLines, nonJsonLines } from '../process.js';
import { RESULT_JSON_SCHEMA, readAgentResult, resultFromMessage } from '../result.js';

export interface CodexOptions {
  binary: string;
  model?: string;
  reasoningEffort?: string;
  extraArgs: readonly string[];
  passEnv: readonly string[];
  logger: Logger;
}

/** Model credentials codex reads (CODEX_API_KEY is exec-only, per docs/exec.md). */
export const CODEX_MODEL_KEYS = ['OPENAI_API_KEY', 'CODEX_API_KEY'] as const;
/** Non-secret settings: where codex keeps its login and config; a custom endpoint. */
const CODEX_SETTINGS = ['CODEX_HOME', 'OPENAI_BASE_URL'] as const;

export const CODEX_SANDBOX_NOTE = `

## Note from the harness (codex sandbox)

This sandbox keeps \`.git\` read-only, so \`git commit\` will fail here. Leave your one change uncommitted in
the working tree: the harness commits it for you, using your result's summary as the commit message. If you
decide on no change, leave the working tree clean.
`;

/**
 * What codex prints when the model API, not the agent, failed (codex-rs/core/src/error.rs messages:
 * RetryLimit, UnexpectedStatus, Stream, InternalServerError, ConnectionFailed, UsageLimitReached,
 * QuotaExceeded, auth).
 */
const API_FAILURE = [
  /exceeded retry limit, last status: (?:429|5\d\d)/i,
  /unexpected status (?:429|5\d\d|401|403)/i,
  /stream disconnected before completion/i,
  /currently experiencing high demand/i,
  /Connection failed:|error sending request for url|Error while reading the server response/i,
  /(?:connection|request) (?:timed out|refused|reset)/i,
  /You've hit your usage limit|Quota exceeded|usage limit/i,
  /401 Unauthorized|Missing environment variable: `(?:OPENAI|CODEX)_API_KEY`|not logged in|refresh token/i,
  /Reconnecting\.\.\. \d+\/\d+/,
];

export class CodexAgent implements Agent {
  readonly name = 'codex';

  constructor(private readonly opts: CodexOptions) {}

  async run(request: AgentRequest): Promise<AgentOutcome> {
    const git = await Git.create(request.workdir);
    const headBefore = await git.head();
    prepareResultFile(request.resultFile);
    const lastMessageFile = `${request.logFile.replace(/\.log$/, '')}.last-message.txt`;
    rmSync(lastMessageFile, { force: true });
    // Beside the result file when that lies outside the working tree: a folder the agent can see (and
    // write) even in the sandbox, that never ends up in its change.
    const resultDir = outsideOf(request.workdir, dirname(request.resultFile));
    const scratch = mkdtempSync(join(resultDir ?? tmpdir(), resultDir ? '.codex-' : 'hc-codex-'));
    try {
      const schemaFile = join(scratch, 'result.schema.json');
      writeFileSync(schemaFile, `${JSON.stringify(RESULT_JSON_SCHEMA, null, 2)}\n`);
      const args = codexArgs({
        workdir: request.workdir,
        lastMessageFile,
        schemaFile,
        resultDir: outsideOf(request.workdir, dirname(request.resultFile)),
        model: this.opts.model,
        reasoningEffort: this.opts.reasoningEffort,
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
        apiFailure: codexApiFailure,
        configDir: { env: 'CODEX_HOME', defaultInHome: '.codex' },
        logger: this.opts.logger,
      });

      let { result, problem } = readAgentResult(request.resultFile);
      if (!result && existsSync(lastMessageFile)) {
        const fromMessage = resultFromMessage(readFileSync(lastMessageFile, 'utf8'));
        if (fromMessage) [result, problem] = [fromMessage, undefined];
      }
      const harnessCommit =
        proc.status === 'finished'
          ? await commitLeftovers(git, headBefore, this.name, result, [
              request.resultFile,
              request.logFile,
              lastMessageFile,
            ])
          : undefined;
      if (harnessCommit)
        this.opts.logger.info(`codex: committed the agent's change as ${harnessCommit.slice(0, 12)}`);
      return toOutcome(proc, request.logFile, result, problem, harnessCommit);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
}

export interface CodexArgsInput {
  workdir: string;
  lastMessageFile: string;
  schemaFile: string;
  /** A folder outside the workdir the agent must be able to write (the result file's), if any. */
  resultDir?: string;
  model?: string;
  reasoningEffort?: string;
  extraArgs: readonly string[];
}

/** The exact argument array (after the binary). Flags the user put in extra_args are not repeated. */
export function codexArgs(i: CodexArgsInput): string[] {
  const user = i.extraArgs;
  const has = (...flags: string[]) => user.some((a) => flags.some((f) => a === f || a.startsWith(`${f}=`)));
  const args = ['exec', '--json'];
  if (!has('--color')) args.push('--color', 'never');
  if (!has('--sandbox', '-s', '--dangerously-bypass-approvals-and-sandbox', '--yolo')) {
    args.push('--sandbox', 'workspace-write');
  }
  if (!has('--ephemeral')) args.push('--ephemeral');
  args.push('-C', i.workdir, '--output-last-message', i.lastMessageFile, '--output-schema', i.schemaFile);
  args.push('-c', 'sandbox_workspace_write.network_access=false');
  if (i.model !== undefined && !has('-m', '--model')) args.push('-m', i.model);
  if (i.reasoningEffort !== undefined) args.push('-c', `model_reasoning_effort="${i.reasoningEffort}"`);
  if (i.resultDir !== undefined) args.push('--add-dir', i.resultDir);
  args.push(...user, '-');
  return args;
}

/** Model-API failures in codex's JSONL events (`error`, `turn.failed`) and its plain stderr. */
export function codexApiFailure(result: ExecResult): string | undefined {
  const messages: string[] = [];
  for (const ev of jsonLines(result.stdout)) {
    if (ev.type === 'error' && typeof ev.message === 'string') messages.push(ev.message);
    const err = ev.error as { message?: unknown } | undefined;
    if (ev.type === 'turn.failed' && typeof err?.message === 'string') messages.push(err.message);
  }
  return firstMatchingLine([messages.join('\n'), result.stderr, nonJsonLines(result.stdout)], API_FAILURE);
}
