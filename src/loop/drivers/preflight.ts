/**
 * Checks made before a run or phase starts, for what would otherwise fail every iteration the same way
 * — each attempt retried as an infrastructure failure, then recorded as an `error` and published: the
 * agent's program, and the project interpreter the CPU gate runs on this machine.
 */
import { existsSync } from 'node:fs';
import { checkAgentInstalled, checkModelApi } from '../../agent/index.js';
import { type HillclimbConfig, loadConfig, type TargetConfig, usesPlaceholder } from '../../config/index.js';
import { SANDBOX_HINT, sandboxAvailability } from '../../exec/index.js';
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
        hint: `run: hillclimb setup (in ${config.root}; creates .venv and installs ${config.paths.requirements})`,
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

/**
 * The agent and candidate code run in the sandbox, or not at all: unless the config names the opt-out
 * (`sandbox.mode: allow-unsandboxed`), a machine that cannot build the sandbox stops the run before
 * anything untrusted starts; with the opt-out, it is said loudly once.
 */
export async function checkSandbox(config: HillclimbConfig, logger: Logger): Promise<void> {
  const available = await sandboxAvailability();
  if (available.available) return;
  if (config.sandbox.mode !== 'allow-unsandboxed') {
    throw new HillclimbError(
      `this machine cannot build the sandbox the agent and candidate code run in (${available.reason})`,
      {
        hint:
          `${SANDBOX_HINT}. Or, to run them here with every right you have (your files, credentials and ` +
          `network; their numbers marked unverified), set sandbox.mode: allow-unsandboxed in ${config.file}`,
        exitCode: ExitCode.failure,
      },
    );
  }
  logger.warn(
    `UNSANDBOXED (sandbox.mode: allow-unsandboxed): the agent and candidate code run with your rights — ` +
      `your files, credentials and network — because this machine cannot build the sandbox ` +
      `(${available.reason}); their numbers are unverified and no iteration can be improved`,
  );
}
