/**
 * Checks made before a run or phase starts, for what would otherwise fail every iteration the same way
 * — each attempt retried as an infrastructure failure, then recorded as an `error` and published: the
 * agent's program, and the project interpreter the CPU gate runs on this machine.
 */
import { existsSync } from 'node:fs';
import { checkAgentInstalled } from '../../agent/factory.js';
import { usesPlaceholder } from '../../config/command.js';
import type { HillclimbConfig, TargetConfig } from '../../config/types.js';
import { venvPython } from '../../project/python.js';
import { ExitCode, HillclimbError } from '../../util/errors.js';

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
