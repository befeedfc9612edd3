/**
 * The loop's own git worktrees, under `<run>/worktrees/`: one per iteration for the candidate, one per
 * champion commit for arm A. The user's checkout is never touched. Worktrees are disposable: a resumed
 * run re-creates any it needs at the recorded commit.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Git } from '../../workspace/index.js';
import type { LoopContext } from '../context.js';
import { type IterationKey, iterationDirName } from './bundle.js';

export function candidateWorktreePath(ctx: LoopContext, key: number | IterationKey): string {
  return join(ctx.runDir, 'worktrees', iterationDirName(key));
}

export function championWorktreePath(ctx: LoopContext, commit: string): string {
  return join(ctx.runDir, 'worktrees', `champion-${commit.slice(0, 12)}`);
}

/**
 * The agent's own repository (Git.cloneForAgent) and its output folder (result file, log, scratch): the
 * only places the agent can write. Both are removed once the harness has taken the change.
 */
export function agentRepoPath(ctx: LoopContext, key: number | IterationKey): string {
  return join(ctx.runDir, 'agent', iterationDirName(key), 'repo');
}

export function agentOutputPath(ctx: LoopContext, key: number | IterationKey): string {
  return join(ctx.runDir, 'agent', iterationDirName(key), 'out');
}

/**
 * A clean worktree at `commit` at `path`: reused when it is already there, at that commit and clean;
 * otherwise (left over by a killed run, or dirty) removed and added afresh.
 */
export async function worktreeAt(ctx: LoopContext, path: string, commit: string): Promise<Git> {
  if (existsSync(path)) {
    try {
      const wt = await Git.create(path);
      if ((await wt.head()) === commit && (await wt.isClean())) return wt;
    } catch {
      // not a usable worktree: fall through and re-create it
    }
    await ctx.git.removeWorktree(path).catch(() => rmSync(path, { recursive: true, force: true }));
    await ctx.git.pruneWorktrees();
  }
  await ctx.git.addWorktree(path, commit);
  return Git.create(path);
}

/**
 * Remove every worktree of this run, including ones a killed process left behind (this process may
 * have reused them without creating them), then let git forget any whose folder is already gone.
 */
export async function removeRunWorktrees(ctx: LoopContext): Promise<void> {
  const dir = join(ctx.runDir, 'worktrees');
  if (existsSync(dir)) {
    for (const name of readdirSync(dir)) {
      await ctx.git
        .removeWorktree(join(dir, name))
        .catch(() => rmSync(join(dir, name), { recursive: true, force: true }));
    }
  }
  await ctx.git.pruneWorktrees();
}
