/**
 * The `command` adapter: any program, from `agent.command.command` (an argument array, no shell).
 * It runs in the working tree with the prompt on stdin and a scrubbed environment plus:
 *
 *   HILLCLIMB_RESULT_FILE  where to write {"hypothesis", "summary", "next_idea"}
 *   HILLCLIMB_WORKDIR      the working tree (also the current directory)
 *   HILLCLIMB_ITERATION    the 1-based iteration number
 *
 * It edits files and commits its one change, like any agent. Exit 0 = finished; exit 75 (EX_TEMPFAIL)
 * = "infrastructure failure, retry me later" (the loop backs off and retries); any other exit = failed.
 * In the sandbox it has no network unless `agent.command.network` is `host`.
 */
import type { CommandArgs } from '../../config/index.js';
import type { Logger } from '../../util/index.js';
import type { Agent, AgentOutcome, AgentRequest } from '../agent.js';
import { launchAgent } from '../launch.js';
import { prepareResultFile, toOutcome } from '../outcome.js';
import { readAgentResult } from '../result.js';

/** sysexits.h EX_TEMPFAIL: "temporary failure; the user is invited to retry". */
export const COMMAND_INFRA_EXIT_CODE = 75;

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
    const [program, ...args] = this.opts.command;
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
      },
      infraExitCodes: [COMMAND_INFRA_EXIT_CODE],
      network: this.opts.network ?? 'none',
      logger: this.opts.logger,
    });
    const { result, problem } = readAgentResult(request.resultFile);
    return toOutcome(proc, request.logFile, result, problem);
  }
}
