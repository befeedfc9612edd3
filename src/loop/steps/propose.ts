/**
 * propose: the agent edits the candidate worktree (reset to the champion first, so a resumed step
 * starts clean) and commits. The harness then records what it committed — the commits, their paths,
 * a git bundle and a patch — so later steps, possibly in another job, can rebuild the candidate.
 * No commit → `no-op`. Infrastructure failures (binary missing, model API down) are retried by the
 * runner; the agent's own failures are not.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { writeFileAtomic } from '../../util/files.js';
import { BundleFiles } from '../bundle.js';
import { InfraFailure } from '../failures.js';
import { candidateRef, iterationBranch } from '../naming.js';
import { candidateWorktreePath, worktreeAt } from '../worktrees.js';
import type { Step } from './step.js';

const MINUTE_MS = 60_000;

export const proposeStep: Step = {
  name: 'propose',
  evaluation: true,
  async run({ ctx, bundle, ev }) {
    const base = ev.base.commit;
    const wt = await worktreeAt(ctx, candidateWorktreePath(ctx, ev.iteration), base);
    const promptFile = bundle.path(BundleFiles.prompt);
    const resultFile = bundle.path(BundleFiles.agentResult);
    const logFile = bundle.path(BundleFiles.agentLog);
    mkdirSync(dirname(resultFile), { recursive: true });

    const attempts = (ev.agent?.attempts ?? 0) + 1;
    const outcome = await ctx.agent.run({
      iteration: ev.iteration,
      workdir: wt.root,
      prompt: readFileSync(promptFile, 'utf8'),
      resultFile,
      logFile,
      timeoutMs: ctx.config.agent.timeout_minutes * MINUTE_MS,
      idleTimeoutMs: ctx.config.agent.idle_timeout_minutes * MINUTE_MS,
      env: {
        HILLCLIMB_ITERATION: String(ev.iteration),
        HILLCLIMB_TARGET: ctx.target.name,
        HILLCLIMB_RESULT_FILE: resultFile,
      },
      signal: ctx.signal,
    });
    ev.agent = {
      kind: ctx.agent.name,
      status: outcome.status,
      exitCode: outcome.exitCode,
      durationMs: outcome.durationMs,
      attempts,
      ...(outcome.infraError ? { infraError: outcome.infraError } : {}),
      ...(outcome.result ? { result: outcome.result } : {}),
      ...(outcome.resultProblem ? { resultProblem: outcome.resultProblem } : {}),
      logFile: BundleFiles.agentLog,
      promptFile: BundleFiles.prompt,
    };
    if (outcome.infraError) {
      throw new InfraFailure(`agent ${ctx.agent.name}: ${outcome.infraError}`, {
        hint: `the agent log is ${logFile}`,
      });
    }

    const head = await wt.head();
    const commits = head === base ? [] : await wt.commitsBetween(base, head);
    if (commits.length === 0) {
      const why =
        outcome.status === 'finished'
          ? 'the agent made no commit'
          : outcome.status === 'timeout'
            ? 'the agent timed out without a commit'
            : `the agent failed (exit code ${outcome.exitCode}) without a commit`;
      return { status: 'verdict', verdict: 'no-op', reasons: [why] };
    }
    if (!(await wt.isAncestor(base, head))) {
      return {
        status: 'verdict',
        verdict: 'invalid',
        reasons: ['the agent rewrote history: the champion is not an ancestor of its commit'],
      };
    }

    // Keep the commits reachable and portable: a ref in the repository and a git bundle.
    const ref = candidateRef(ctx.runId, ev.iteration);
    await ctx.git.updateRef(ref, head);
    await ctx.git.createBundle(bundle.path(BundleFiles.gitBundle), ref, base);
    writeFileAtomic(bundle.path(BundleFiles.patch), await ctx.git.formatPatch(base, head));
    ev.candidate = {
      branch: iterationBranch(ctx, ev.iteration),
      commit: head,
      commits,
      subject: await ctx.git.subject(head),
      changedPaths: await ctx.git.changedPaths(base, head),
      patchFile: BundleFiles.patch,
    };
    const note = outcome.status === 'finished' ? undefined : `agent ${outcome.status}, but it committed`;
    return note ? { status: 'done', note } : { status: 'done' };
  },
};
