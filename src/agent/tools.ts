/**
 * Tools the harness offers an agent while it works (issue 38): `check`, `screen`, `profile`, `ledger`.
 * They run harness code on a snapshot of the agent's working tree, outside its sandbox; the agent reaches
 * them over MCP (mcp-server.ts) on its key proxy's port, the same way out it has for its model API.
 *
 * This file is the contract between the two sides: the loop implements `AgentTools` (what a tool does,
 * its budget, its journal: src/loop/steps/agent-tools.ts) and hands it to the agent in its request; the
 * agent module serves it (the protocol, the caps on what a caller can send) and tells the CLI where it is.
 * Nothing the agent sends is a path or a command: a tool's arguments are small JSON values its schema
 * names, checked by the tool.
 */

/** Agent kinds that can call the tools (over MCP, through their key proxy): not the replay agent. */
export const TOOL_AGENT_KINDS: readonly string[] = ['codex', 'claude', 'command'];

/** One tool as the agent sees it (MCP `tools/list`). */
export interface ToolDescription {
  name: string;
  /** What it does, what it costs, what it never is (evidence): the model reads this. */
  description: string;
  /** JSON Schema of its arguments (an object). */
  inputSchema: Record<string, unknown>;
}

/** What a call answered: text for the model, and whether the call failed (MCP `isError`). */
export interface ToolAnswer {
  text: string;
  isError: boolean;
}

export interface AgentTools {
  /** The tools offered, in the order the agent should consider them. */
  list(): readonly ToolDescription[];
  /**
   * Run one call. Never rejects for anything the caller did (unknown tool, bad arguments, a budget
   * spent, a tree that does not build): those are answers with `isError`. `signal` aborts with the
   * agent's run.
   */
  call(name: string, args: unknown, signal?: AbortSignal): Promise<ToolAnswer>;
}
