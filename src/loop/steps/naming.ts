/** Names the loop gives things: branches, refs and job ids, all derived from the run and iteration. */
import { loopBranchName } from '../../workspace/index.js';
import type { LoopContext } from '../context.js';
import { iterationDirName } from '../state/bundle.js';

/** The PR branch of an iteration, e.g. hillclimb/gdn/20261121-234512-a3f9/i003. */
export function iterationBranch(ctx: LoopContext, iteration: number): string {
  return loopBranchName({
    prefix: ctx.config.loop.branch_prefix,
    target: ctx.target.name,
    runId: ctx.runId,
    iteration,
  });
}

/** A hidden ref keeping the agent's commits reachable until the branch exists. */
export function candidateRef(runId: string, iteration: number): string {
  return `refs/hillclimb/candidates/${runId}/${iterationDirName(iteration)}`;
}

/** A job id for a backend: unique per run, iteration, step and run index; only [A-Za-z0-9._-]. */
export function jobId(runId: string, iteration: number, ...parts: Array<string | number>): string {
  return [runId, iterationDirName(iteration), ...parts.map(String)]
    .join('-')
    .replace(/[^A-Za-z0-9._-]/g, '_');
}
