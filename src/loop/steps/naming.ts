/** Names the loop gives things: branches, refs and job ids, all derived from the run and iteration. */
import { loopBranchName } from '../../workspace/index.js';
import type { LoopContext } from '../context.js';
import { type IterationKey, iterationDirName } from '../state/bundle.js';

/** The PR branch of an iteration, e.g. hillclimb/gdn/20261121-234512-a3f9/i003. */
export function iterationBranch(ctx: LoopContext, key: number | IterationKey): string {
  const k = typeof key === 'number' ? { iteration: key } : key;
  return loopBranchName({
    prefix: ctx.config.loop.branch_prefix,
    target: ctx.target.name,
    runId: ctx.runId,
    iteration: k.iteration,
    ...(k.slot ? { slot: k.slot.index } : {}),
  });
}

/** A hidden ref keeping the agent's commits reachable until the branch exists. */
export function candidateRef(runId: string, key: number | IterationKey): string {
  return `refs/hillclimb/candidates/${runId}/${iterationDirName(key)}`;
}

/** A job id for a backend: unique per run, iteration, step and run index; only [A-Za-z0-9._-]. */
export function jobId(runId: string, key: number | IterationKey, ...parts: Array<string | number>): string {
  return [runId, iterationDirName(key), ...parts.map(String)].join('-').replace(/[^A-Za-z0-9._-]/g, '_');
}
