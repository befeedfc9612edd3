/**
 * The `command` adapter: any program, from `agent.command.command` (an argument array, no shell).
 * It runs in the working tree with the prompt on stdin and a scrubbed environment plus:
 *
 *   HILLCLIMB_RESULT_FILE  where to write {"hypothesis", "summary", "next_idea"}
 *   HILLCLIMB_WORKDIR      the working tree (also the current directory)
 *   HILLCLIMB_ITERATION    the 1-based iteration number
 *   HILLCLIMB_TOOLS_URL    with tools: their MCP endpoint (streamable HTTP, behind the run's token)
 *   HILLCLIMB_TOOLS_CLIENT with tools: bin/hillclimb-tool.mjs, a client for it (`node "$…" check`)
 *
 * It edits files and commits its one change, like any agent. Exit 0 = finished; exit 75 (EX_TEMPFAIL)
 * = "infrastructure failure, retry me later" (the loop backs off and retries); any other exit = failed.
 * In the sandbox it has no network unless `agent.command.network` is `host`. With tools the harness runs a
 * proxy that serves them and forwards nothing (key-proxy.ts startToolsProxy): without a network of its
 * own the agent's only way out is that proxy's forward; with the machine's, its loopback port.
 */
import { join } from 'node:path';
import type { CommandArgs } from '../../config/index.js';
import { packageRoot } from '../../project/index.js';
import type { Logger } from '../../util/index.js';
import type { Agent, AgentOutcome, AgentRequest } from '../agent.js';
import { type KeyProxy, startToolsProxy } from '../key-proxy.js';
import { launchAgent } from '../launch.js';
import { warnToolRefusals } from '../mcp-config.js';
import { prepareResultFile, toOutcome } from '../outcome.js';
import { readAgentResult } from '../result.js';

/** sysexits.h EX_TEMPFAIL: "temporary failure; the user is invited to retry". */
export const COMMAND_INFRA_EXIT_CODE = 75;

/** The tools' client, in the package's bin/. */
export const TOOLS_CLIENT = 'hillclimb-tool.mjs';

export interface CommandOptions {
  command: CommandArgs;
  /** What it reaches in the sandbox. Default: nothing. */
  network?: 'none' | 'host';
  passEnv: readonly string[];
  logger: Logger;
}

export class CommandAgent implements Agent {
  readonly name = 'command';

  constructor(private readonly opts: CommandOptions) {
    if (opts.command.length === 0) throw new Error('agent.command.command is empty');
  }

  async run(request: AgentRequest): Promise<AgentOutcome> {
    prepareResultFile(request.resultFile);
    const network = this.opts.network ?? 'none';
    const sandboxed = Boolean(request.isolation?.sandbox);
    const proxy = request.tools
      ? await startToolsProxy(request.tools, { loopback: !sandboxed || network === 'host' })
      : undefined;
    try {
      return await this.runWith(request, network, proxy);
    } finally {
      await proxy?.close();
    }
  }

  private async runWith(
    request: AgentRequest,
    network: 'none' | 'host',
    proxy: KeyProxy | undefined,
  ): Promise<AgentOutcome> {
    const [program, ...args] = this.opts.command;
    const client = join(packageRoot(), 'bin', TOOLS_CLIENT);
    const proc = await launchAgent(request, {
      agent: this.name,
      command: program!,
      args,
      modelKeys: [],
      passEnv: this.opts.passEnv,
      extraEnv: {
        HILLCLIMB_RESULT_FILE: request.resultFile,
        HILLCLIMB_WORKDIR: request.workdir,
        HILLCLIMB_ITERATION: String(request.iteration),
        ...(proxy?.toolsUrl ? { HILLCLIMB_TOOLS_URL: proxy.toolsUrl, HILLCLIMB_TOOLS_CLIENT: client } : {}),
      },
      infraExitCodes: [COMMAND_INFRA_EXIT_CODE],
      network,
      // Without a network of its own, the tools proxy's forward is the one way out it gets.
      ...(proxy && network === 'none' ? { keyProxy: proxy } : {}),
      ...(proxy ? { readOnly: [client] } : {}),
      logger: this.opts.logger,
    });
    warnToolRefusals(this.name, proxy, this.opts.logger);
    const { result, problem } = readAgentResult(request.resultFile);
    return toOutcome(proc, request.logFile, result, problem);
  }
}
