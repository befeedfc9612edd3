/**
 * The names of the branches the loop creates: `<prefix><target>/<run-id>/i<NNN>` (`…/i<NNN>-c<slot>` for
 * one of several candidates), each part checked,
 * the whole through the one branch-name validator (src/util/branch-name.ts).
 */
import { assertBranchName, ExitCode, HillclimbError } from '../util/index.js';

export interface LoopBranchParts {
  /** From `loop.branch_prefix`, e.g. `hillclimb/` (may be empty; a trailing `/` is the caller's choice). */
  prefix: string;
  /** The target's name (config key, `[a-z][a-z0-9-]*`). */
  target: string;
  runId: string;
  /** 1-based iteration number. */
  iteration: number;
  /** Which of the iteration's candidates (loop.candidates > 1), 1-based: `i<NNN>-c<slot>`. */
  slot?: number;
}

/** `<prefix><target>/<run-id>/i<NNN>`, e.g. `hillclimb/gdn/20261121-2340-ab12/i007`. Validated. */
export function loopBranchName(parts: LoopBranchParts): string {
  if (!/^[a-z][a-z0-9-]*$/.test(parts.target)) {
    throw new HillclimbError(`invalid target name for a branch: ${JSON.stringify(parts.target)}`, {
      exitCode: ExitCode.badInput,
    });
  }
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(parts.runId)) {
    throw new HillclimbError(`invalid run id for a branch: ${JSON.stringify(parts.runId)}`, {
      exitCode: ExitCode.badInput,
    });
  }
  if (!Number.isInteger(parts.iteration) || parts.iteration < 0) {
    throw new HillclimbError(`invalid iteration number for a branch: ${parts.iteration}`, {
      exitCode: ExitCode.badInput,
    });
  }
  if (parts.slot !== undefined && !(Number.isInteger(parts.slot) && parts.slot >= 1)) {
    throw new HillclimbError(`invalid candidate slot for a branch: ${parts.slot}`, {
      exitCode: ExitCode.badInput,
    });
  }
  const slot = parts.slot === undefined ? '' : `-c${parts.slot}`;
  const name = `${parts.prefix}${parts.target}/${parts.runId}/i${String(parts.iteration).padStart(3, '0')}${slot}`;
  assertBranchName(name);
  return name;
}
