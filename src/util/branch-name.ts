/**
 * The one validator of the branch names hillclimb creates and pushes (loop branches, the forge's PR
 * heads). An allow-list, not a deny-list: letters, digits, `.`, `_`, `-` and `/` only, so spaces,
 * control characters and `~^:?*[\@{` can never appear; then git's own structural rules (no leading
 * dash, no `..`, no `//`, no component starting with `.` or ending in `.lock`). Every name it accepts,
 * `git check-ref-format --branch` accepts too (tests/util/branch-name.unit.test.ts asks git), so no
 * caller needs to ask git again. A name hillclimb only reads (`forge.base`) is git's business:
 * `Git.checkBranchName` asks git, so any branch a repository really has can be named.
 */
import { ExitCode, HillclimbError } from './errors.js';

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
