/**
 * Agents (codex, claude, command, replay) behind one interface, built by agent.kind. Other modules
 * import from this entry, never from its files.
 */
export type { Agent, AgentIsolation, AgentOutcome } from './agent.js';
export { claudeCredentials } from './agents/claude.js';
export { codexCredentials } from './agents/codex.js';
export { listReplayPatches, replayDirFor, replaySlots } from './agents/replay.js';
export { agentIdentity } from './environment.js';
export { AGENT_INSTALL_HINTS, buildAgent, checkAgentInstalled } from './factory.js';
export { leftoverMessage } from './leftovers.js';
export { checkModelApi } from './model-api.js';
export type { AgentTools, ToolAnswer, ToolDescription } from './tools.js';
