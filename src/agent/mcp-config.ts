/**
 * What every adapter does alike to hand its CLI the tools: the server's name in the CLI's MCP
 * configuration (and so in the tool names the model sees: `mcp__hillclimb__check`), how long one call may
 * take, the one warning when a run asked for tools it cannot have, and the one warning for what the
 * endpoint refused.
 */
import type { Logger } from '../util/index.js';
import type { AgentRequest } from './agent.js';
import type { KeyProxy } from './key-proxy.js';
import { refusalText } from './refusals.js';

/** The MCP server's name in the CLIs' configuration. */
export const MCP_SERVER_NAME = 'hillclimb';

/**
 * How long a CLI waits for one tool call, in seconds: as long as the agent may run (a `screen` waits its
 * turn behind the loop's own accelerator work; the harness's timeout is the bound that matters).
 */
export function toolTimeoutSeconds(request: Pick<AgentRequest, 'timeoutMs'>): number {
  return Math.max(60, Math.ceil(request.timeoutMs / 1000));
}

/** The tools' URL for this run, or undefined with a warning when the request asked for tools it cannot have. */
export function toolsUrlFor(
  agent: string,
  request: Pick<AgentRequest, 'tools'>,
  proxy: Pick<KeyProxy, 'toolsUrl'> | undefined,
  logger: Logger,
  why: string,
): string | undefined {
  if (!request.tools) return undefined;
  if (proxy?.toolsUrl) return proxy.toolsUrl;
  logger.warn(`${agent}: no tools for this run (check, screen, profile, ledger): ${why}`);
  return undefined;
}

/** After the run: one warning when the tools endpoint refused something (busy, malformed, too large). */
export function warnToolRefusals(
  agent: string,
  proxy: Pick<KeyProxy, 'tools'> | undefined,
  logger: Logger,
): void {
  const refusals = proxy?.tools?.refusals;
  if (refusals && refusals.count > 0) {
    logger.warn(`${agent}: the tools endpoint refused ${refusalText(refusals)}`);
  }
}
