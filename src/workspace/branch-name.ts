/**
 * Branch names the loop creates. An allow-list (not a deny-list): letters, digits, `.`, `_`, `-` and `/`
 * only, so spaces, control characters and `~^:?*[\@{` can never appear; then git's own structural rules
 * (no leading dash, no `..`, no `//`, no component starting with `.` or ending in `.lock`). Callers that
 * create a branch also pass it through `git check-ref-format --branch` (see checkBranchName).
 */
import { ExitCode, HillclimbError } from '../util/errors.js';
import type { Git } from './git.js';

/** Long enough for prefix/target/run-id/iNNN, short enough for every forge and file system. */
export const MAX_BRANCH_NAME_LENGTH = 200;

const ALLOWED = /^[A-Za-z0-9._/-]+$/;

/** Why `name` is not an acceptable branch name, or undefined when it is. */
export function branchNameProblem(name: string): string | undefined {
  if (name === '') return 'is empty';
  if (name.length > MAX_BRANCH_NAME_LENGTH) return `is longer than ${MAX_BRANCH_NAME_LENGTH} characters`;
  if (!ALLOWED.test(name)) {
    const bad = [...name].find((c) => !ALLOWED.test(c)) ?? '';
    return `contains ${JSON.stringify(bad)}; only letters, digits, ".", "_", "-" and "/" are allowed`;
  }
  if (name.startsWith('-')) return 'starts with "-"';
  if (name.startsWith('/') || name.endsWith('/')) return 'starts or ends with "/"';
  if (name.endsWith('.')) return 'ends with "."';
  if (name.includes('..')) return 'contains ".."';
  if (name.includes('//')) return 'contains "//"';
  for (const part of name.split('/')) {
    if (part.startsWith('.')) return `has a component starting with "." (${part})`;
    if (part.endsWith('.lock')) return `has a component ending in ".lock" (${part})`;
  }
  if (name === 'HEAD') return 'is "HEAD"';
  return undefined;
}

/** Throw a HillclimbError naming the problem unless `name` passes the allow-list. */
export function assertBranchName(name: string): void {
  const problem = branchNameProblem(name);
  if (problem !== undefined) {
    throw new HillclimbError(`invalid branch name ${JSON.stringify(name)}: ${problem}`, {
      exitCode: ExitCode.badInput,
    });
  }
}

/** The allow-list and `git check-ref-format --branch`; throws naming the problem. */
export async function checkBranchName(name: string, git: Git): Promise<void> {
  assertBranchName(name);
  if (!(await git.checkBranchName(name))) {
    throw new HillclimbError(
      `invalid branch name ${JSON.stringify(name)}: rejected by git check-ref-format`,
      {
        exitCode: ExitCode.badInput,
      },
    );
  }
}

export interface LoopBranchParts {
  /** From `loop.branch_prefix`, e.g. `hillclimb/` (may be empty; a trailing `/` is the caller's choice). */
  prefix: string;
  /** The target's name (config key, `[a-z][a-z0-9-]*`). */
  target: string;
  runId: string;
  /** 1-based iteration number. */
  iteration: number;
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
  const name = `${parts.prefix}${parts.target}/${parts.runId}/i${String(parts.iteration).padStart(3, '0')}`;
  assertBranchName(name);
  return name;
}
