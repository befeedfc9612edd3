/**
 * Agents chosen by `agent.kind`: a map from the config name to a builder (release-please's factory
 * pattern). An unknown name fails with the sorted list of known ones.
 */
import { isAbsolute, resolve } from 'node:path';
import type { HillclimbConfig } from '../config/index.js';
import { findOnPath } from '../exec/index.js';
import { ConfigError, ExitCode, HillclimbError, type Logger, Registry } from '../util/index.js';
import type { Agent } from './agent.js';
import { ClaudeAgent, DEFAULT_CLAUDE_ALLOWED_TOOLS } from './agents/claude.js';
import { CodexAgent } from './agents/codex.js';
import { CommandAgent } from './agents/command.js';
import { ReplayAgent, replayDirFor } from './agents/replay.js';
import { isRefusedName } from './environment.js';

export interface AgentFactoryOptions {
  /** The project root; relative paths in the agent section (replay dir) are resolved against it. */
  root: string;
  logger: Logger;
  /** The target the loop runs: the replay agent reads its own folder when there is one. */
  target?: string;
}

export type AgentBuilder = (config: HillclimbConfig, opts: AgentFactoryOptions) => Agent;

/** The agents known by name: register one for an out-of-tree extension or a test. */
export const agents = new Registry<AgentBuilder>('agent', [
  [
    'codex',
    (c, o) =>
      new CodexAgent({
        binary: c.agent.codex.binary,
        model: c.agent.codex.model,
        reasoningEffort: c.agent.codex.reasoning_effort,
        extraArgs: c.agent.codex.extra_args,
        passEnv: c.agent.pass_env ?? [],
        ...apiLimits(c),
        logger: o.logger,
      }),
  ],
  [
    'claude',
    (c, o) =>
      new ClaudeAgent({
        binary: c.agent.claude.binary,
        model: c.agent.claude.model,
        maxTurns: c.agent.claude.max_turns,
        allowedTools: c.agent.claude.allowed_tools ?? DEFAULT_CLAUDE_ALLOWED_TOOLS,
        extraArgs: c.agent.claude.extra_args,
        passEnv: c.agent.pass_env ?? [],
        ...apiLimits(c),
        logger: o.logger,
      }),
  ],
  [
    'command',
    (c, o) => {
      if (!c.agent.command) {
        throw new ConfigError(
          c.file,
          'agent.command',
          'agent.kind is command, so agent.command.command is required',
        );
      }
      return new CommandAgent({
        command: c.agent.command.command,
        network: c.agent.command.network,
        passEnv: c.agent.pass_env ?? [],
        logger: o.logger,
      });
    },
  ],
  [
    'replay',
    (c, o) =>
      new ReplayAgent({
        dir: replayDirFor(
          isAbsolute(c.agent.replay.dir) ? c.agent.replay.dir : resolve(o.root, c.agent.replay.dir),
          o.target,
        ),
        logger: o.logger,
      }),
  ],
]);

/** How long a CLI may retry a failing model API, and fail to reach it, before the attempt stops. */
function apiLimits(c: HillclimbConfig): { apiRetryLimitMs: number; unreachableLimitMs: number } {
  return {
    apiRetryLimitMs: c.agent.api_retry_limit_minutes * 60_000,
    unreachableLimitMs: c.agent.unreachable_limit_seconds * 1000,
  };
}

/** Build the agent `config.agent.kind` names. */
export function buildAgent(config: HillclimbConfig, opts: AgentFactoryOptions): Agent {
  const build = agents.get(config.agent.kind);
  const refused = (config.agent.pass_env ?? []).filter((name) => isRefusedName(name));
  if (refused.length > 0) {
    throw new ConfigError(
      config.file,
      'agent.pass_env',
      `${refused.join(', ')}: tokens and cloud credentials are never passed to an agent`,
      { hint: 'the agent must not be able to push, publish or spend; see docs/agents.md' },
    );
  }
  return build(config, opts);
}

/** How to install the agent CLIs hillclimb drives (doctor prints them too). */
export const AGENT_INSTALL_HINTS: Readonly<Record<string, string>> = {
  codex: 'npm i -g @openai/codex',
  claude: 'npm i -g @anthropic-ai/claude-code',
};

/**
 * Fail before a loop starts when the agent's program is not installed. Found later, a missing binary
 * is retried as an infrastructure failure in every iteration, and each ends in `error`. A relative
 * path with a slash (a script in the repository) resolves in the agent's worktree and is not checked.
 * @throws HillclimbError naming the config key and how to install the program.
 */
export function checkAgentInstalled(config: HillclimbConfig): void {
  const { kind } = config.agent;
  const [program, key] =
    kind === 'codex'
      ? [config.agent.codex.binary, 'agent.codex.binary']
      : kind === 'claude'
        ? [config.agent.claude.binary, 'agent.claude.binary']
        : kind === 'command'
          ? [config.agent.command?.command[0], 'agent.command.command']
          : [undefined, ''];
  if (program === undefined || (program.includes('/') && !isAbsolute(program))) return;
  if (findOnPath(program) !== undefined) return;
  const install = AGENT_INSTALL_HINTS[kind];
  throw new HillclimbError(`agent ${kind}: "${program}" is not installed (not found on PATH)`, {
    hint: `${install ? `install it (${install}) or ` : ''}point ${key} in ${config.file} at the program`,
    exitCode: ExitCode.failure,
  });
}
