/**
 * Agents chosen by `agent.kind`: a map from the config name to a builder (release-please's factory
 * pattern). An unknown name fails with the sorted list of known ones.
 */
import { isAbsolute, resolve } from 'node:path';
import type { HillclimbConfig } from '../config/types.js';
import { ConfigError, UnknownNameError } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import type { Agent } from './agent.js';
import { ClaudeAgent, DEFAULT_CLAUDE_ALLOWED_TOOLS } from './agents/claude.js';
import { CodexAgent } from './agents/codex.js';
import { CommandAgent } from './agents/command.js';
import { ReplayAgent } from './agents/replay.js';
import { isRefusedName } from './environment.js';

export interface AgentFactoryOptions {
  /** The project root; relative paths in the agent section (replay dir) are resolved against it. */
  root: string;
  logger: Logger;
}

export type AgentBuilder = (config: HillclimbConfig, opts: AgentFactoryOptions) => Agent;

const builders = new Map<string, AgentBuilder>([
  [
    'codex',
    (c, o) =>
      new CodexAgent({
        binary: c.agent.codex.binary,
        model: c.agent.codex.model,
        reasoningEffort: c.agent.codex.reasoning_effort,
        extraArgs: c.agent.codex.extra_args,
        passEnv: c.agent.pass_env ?? [],
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
        passEnv: c.agent.pass_env ?? [],
        logger: o.logger,
      });
    },
  ],
  [
    'replay',
    (c, o) =>
      new ReplayAgent({
        dir: isAbsolute(c.agent.replay.dir) ? c.agent.replay.dir : resolve(o.root, c.agent.replay.dir),
        logger: o.logger,
      }),
  ],
]);

/** Build the agent `config.agent.kind` names. */
export function buildAgent(config: HillclimbConfig, opts: AgentFactoryOptions): Agent {
  const build = builders.get(config.agent.kind);
  if (!build) throw new UnknownNameError('agent', config.agent.kind, getAgentTypes());
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

/** The known agent kinds, sorted. */
export function getAgentTypes(): string[] {
  return [...builders.keys()].sort();
}

/** Add (or replace) an agent kind, e.g. for an extension. */
export function registerAgent(kind: string, builder: AgentBuilder): void {
  builders.set(kind, builder);
}

export function unregisterAgent(kind: string): void {
  builders.delete(kind);
}
