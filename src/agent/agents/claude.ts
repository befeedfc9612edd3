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
 * Permissions: `acceptEdits` approves file edits in the working folders without prompting; shell commands
 * run only when an allowed-tools rule names them (by default: read-only git, `git add`/`git commit`, and
 * python for the CPU tests). In print mode anything else is refused, not asked. Never
 * `--dangerously-skip-permissions` unless the user puts it in `extra_args`. Claude Code has no OS sandbox
 * here: the scrubbed environment and the CI job boundary (no tokens, no cloud credentials) are the fence.
 */
import { dirname } from 'node:path';
import type { ExecResult } from '../../exec/exec.js';
import type { Logger } from '../../util/log.js';
import type { Agent, AgentOutcome, AgentRequest, AgentResult } from '../agent.js';
import { launchAgent } from '../launch.js';
import { outsideOf, prepareResultFile, toOutcome } from '../outcome.js';
import { firstMatchingLine, jsonLines, nonJsonLines } from '../process.js';
import { readAgentResult, resultFromMessage } from '../result.js';

export interface ClaudeOptions {
  binary: string;
  model?: string;
  maxTurns?: number;
  allowedTools: readonly string[];
  extraArgs: readonly string[];
  passEnv: readonly string[];
  logger: Logger;
}

/** Enough to read and edit the kernel, run its CPU tests and commit; nothing that reaches out. */
export const DEFAULT_CLAUDE_ALLOWED_TOOLS = [
  'Read',
  'Edit',
  'Write',
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

/** API key or subscription OAuth token (claude-code-action takes either). */
export const CLAUDE_MODEL_KEYS = ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN'] as const;
const CLAUDE_SETTINGS = ['ANTHROPIC_BASE_URL', 'CLAUDE_CONFIG_DIR'] as const;

/** What Claude Code prints when the model API, not the agent, failed ("API Error: 529 …" and kin). */
const API_FAILURE = [
  /API Error:? \(?(?:429|5\d\d)\b/i,
  /overloaded_error|rate_limit_error|"type":"api_error"/,
  /API Error: (?:Connection error|Request timed out)/i,
  /usage limit reached|out of (?:extra )?usage/i,
  /Invalid API key|authentication_error|OAuth token (?:has )?expired|Please run \/login|API Error: 40[13]\b/i,
  /Retrying in \d+ seconds/,
];

export class ClaudeAgent implements Agent {
  readonly name = 'claude';

  constructor(private readonly opts: ClaudeOptions) {}

  async run(request: AgentRequest): Promise<AgentOutcome> {
    prepareResultFile(request.resultFile);
    const args = claudeArgs({
      model: this.opts.model,
      maxTurns: this.opts.maxTurns,
      allowedTools: this.opts.allowedTools,
      resultDir: outsideOf(request.workdir, dirname(request.resultFile)),
      extraArgs: this.opts.extraArgs,
    });
    const proc = await launchAgent(request, {
      agent: this.name,
      command: this.opts.binary,
      args,
      modelKeys: CLAUDE_MODEL_KEYS,
      adapterNames: CLAUDE_SETTINGS,
      passEnv: this.opts.passEnv,
      apiFailure: claudeApiFailure,
      configDir: { env: 'CLAUDE_CONFIG_DIR', defaultInHome: '.claude' },
      logger: this.opts.logger,
    });
    let { result, problem } = readAgentResult(request.resultFile);
    if (!result && proc.result) {
      const fromMessage = finalResult(proc.result.stdout);
      if (fromMessage) [result, problem] = [fromMessage, undefined];
    }
    return toOutcome(proc, request.logFile, result, problem);
  }
}

export interface ClaudeArgsInput {
  model?: string;
  maxTurns?: number;
  allowedTools: readonly string[];
  resultDir?: string;
  extraArgs: readonly string[];
}

/** The exact argument array (after the binary). Flags the user put in extra_args are not repeated. */
export function claudeArgs(i: ClaudeArgsInput): string[] {
  const user = i.extraArgs;
  const has = (...flags: string[]) => user.some((a) => flags.some((f) => a === f || a.startsWith(`${f}=`)));
  const args = ['-p', '--verbose', '--output-format', 'stream-json'];
  if (!has('--permission-mode', '--dangerously-skip-permissions'))
    args.push('--permission-mode', 'acceptEdits');
  if (i.allowedTools.length > 0 && !has('--allowedTools', '--allowed-tools')) {
    args.push('--allowedTools', i.allowedTools.join(','));
  }
  if (i.model !== undefined && !has('--model')) args.push('--model', i.model);
  if (i.maxTurns !== undefined && !has('--max-turns')) args.push('--max-turns', String(i.maxTurns));
  if (i.resultDir !== undefined) args.push('--add-dir', i.resultDir);
  args.push(...user);
  return args;
}

/** Model-API failures in the stream's final `result` event, stderr, or plain (non-JSON) stdout. */
export function claudeApiFailure(result: ExecResult): string | undefined {
  const messages: string[] = [];
  for (const ev of jsonLines(result.stdout)) {
    if (ev.type !== 'result') continue;
    const failed = ev.is_error === true || (typeof ev.subtype === 'string' && ev.subtype.startsWith('error'));
    if (failed && typeof ev.result === 'string') messages.push(ev.result);
  }
  return firstMatchingLine([messages.join('\n'), result.stderr, nonJsonLines(result.stdout)], API_FAILURE);
}

/** A result in the final `result` event: `structured_output` (with --json-schema) or the final text. */
function finalResult(stdout: string): AgentResult | undefined {
  const last = jsonLines(stdout)
    .filter((e) => e.type === 'result')
    .at(-1);
  if (!last) return undefined;
  if (last.structured_output !== undefined) {
    const fromStructured = resultFromMessage(JSON.stringify(last.structured_output));
    if (fromStructured) return fromStructured;
  }
  return typeof last.result === 'string' ? resultFromMessage(last.result) : undefined;
}
