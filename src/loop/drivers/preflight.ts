/**
 * Checks made before a run or phase starts, for what would otherwise fail every iteration the same way
 * — each attempt retried as an infrastructure failure, then recorded as an `error` and published: the
 * agent's program, and the project interpreter the CPU gate runs on this machine.
 */
import { existsSync } from 'node:fs';
import { checkAgentInstalled, checkModelApi } from '../../agent/index.js';
import { type HillclimbConfig, loadConfig, type TargetConfig, usesPlaceholder } from '../../config/index.js';
import { venvPython } from '../../project/index.js';
import { ExitCode, HillclimbError, type Logger } from '../../util/index.js';

export interface PreflightNeeds {
  /** The agent will be asked to propose. */
  agent: boolean;
  /** The CPU gate is among the steps to run. */
  cpuGate: boolean;
  /** A dry run: on the local backend the CPU gate's command is printed, so it needs no interpreter. */
  dryRun?: boolean;
}

/** @throws HillclimbError saying what is missing and how to get it. */
export function preflight(config: HillclimbConfig, target: TargetConfig, needs: PreflightNeeds): void {
  if (needs.agent) checkAgentInstalled(config);
  const gateRunsHere = needs.cpuGate && !(needs.dryRun && config.compute.backend === 'local');
  if (gateRunsHere && usesPlaceholder(target.correctness.cpu.command, 'python')) {
    const python = venvPython(config.root);
    if (!existsSync(python)) {
      throw new HillclimbError(`the project interpreter ${python} does not exist`, {
        hint: `run: hillclimb setup (in ${config.root}; creates .venv and installs kernels/requirements.txt)`,
        exitCode: ExitCode.failure,
      });
    }
  }
}

/**
 * The agent's model API key, checked with one request (src/agent/model-api.ts), in a step of its own
 * before anything slow: CI runs it first in the agent's job, where the key is. Nothing in a dry run.
 */
export async function checkAgentApi(opts: {
  configFile: string;
  overrides?: Record<string, unknown>;
  dryRun: boolean;
  logger: Logger;
}): Promise<void> {
  const config = loadConfig(opts.configFile, opts.overrides);
  if (opts.dryRun) {
    opts.logger.info(`dry run: the ${config.agent.kind} agent's model API key is not checked`);
    return;
  }
  await checkModelApi(config.agent.kind, process.env, opts.logger);
}
