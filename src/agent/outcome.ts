/** Small pieces every process-based adapter shares: the result file's folder, and the outcome record. */
import { mkdirSync, rmSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import type { AgentOutcome, AgentResult } from './agent.js';
import type { ProcessOutcome } from './process.js';

/** Remove a stale result file (so an old one is never mistaken for this run's) and create its folder. */
export function prepareResultFile(file: string): void {
  rmSync(file, { force: true });
  mkdirSync(dirname(file), { recursive: true });
}

/** `dir` when it lies outside `root` (so a sandboxed agent must be granted it), else undefined. */
export function outsideOf(root: string, dir: string): string | undefined {
  const rel = relative(resolve(root), resolve(dir));
  return rel === '' || (!rel.startsWith('..') && !rel.startsWith('/')) ? undefined : resolve(dir);
}

export function toOutcome(
  proc: ProcessOutcome,
  logFile: string,
  result: AgentResult | undefined,
  problem: string | undefined,
): AgentOutcome {
  return {
    status: proc.status,
    exitCode: proc.exitCode,
    ...(proc.infraError !== undefined ? { infraError: proc.infraError } : {}),
    ...(result ? { result } : { resultProblem: problem ?? 'no result' }),
    logFile,
    durationMs: proc.durationMs,
    ...(proc.isolation ? { isolation: proc.isolation } : {}),
  };
}
