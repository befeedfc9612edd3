/**
 * The trust boundary between phases. In CI each phase runs in its own job and gets the iteration's
 * bundle from the previous one; the agent's job (and the job that runs candidate code for the CPU gate)
 * run code the harness does not control, which could rewrite any file in the bundle. So a phase never
 * takes the bundle's word for what it can derive itself:
 *
 * - the champion (`base`) must match the one the trusted workflow passes in;
 * - the candidate is re-read from the git objects (the bundled ref's tip, its commits and paths are
 *   content-addressed), and the path guard and static scan run again on them;
 * - results a phase produces (gates, measurement, profile, verdict) are dropped before it runs, so a
 *   planted "measurement" or "verdict" can never be resumed or published. A failed CPU gate is kept: it
 *   can only hurt the candidate.
 */
import { existsSync } from 'node:fs';
import type { IterationEvidence, StepName } from '../evidence/iteration.js';
import { ExitCode, HillclimbError } from '../util/errors.js';
import { type Bundle, BundleFiles } from './bundle.js';
import type { LoopContext } from './context.js';
import { candidateRef, iterationBranch } from './naming.js';
import type { Phase } from './phases.js';
import { guardStep } from './steps/guard.js';

/** Steps whose results each phase recomputes (and so must not inherit). */
const PRODUCED_BY: Readonly<Record<Exclude<Phase, 'propose' | 'all'>, readonly StepName[]>> = {
  'cpu-gate': ['cpu-gate', 'accelerator-gate', 'measure', 'profile', 'decide', 'record', 'publish'],
  'accelerator-gate': ['accelerator-gate', 'measure', 'profile', 'decide', 'record', 'publish'],
  measure: ['measure', 'profile', 'decide', 'record', 'publish'],
  publish: ['record', 'publish'],
};

export async function revalidateBundle(
  ctx: LoopContext,
  bundle: Bundle,
  phase: Exclude<Phase, 'propose' | 'all'>,
  trustedBase: string | undefined,
): Promise<IterationEvidence> {
  const ev = bundle.load();
  if (trustedBase !== undefined) {
    const expected = await ctx.git.revParse(trustedBase);
    if (ev.base.commit !== expected) {
      throw new HillclimbError(
        `${bundle.path(BundleFiles.evidence)}: the bundle's champion ${ev.base.commit.slice(0, 12)} is not the expected ${expected.slice(0, 12)}`,
        {
          hint: 'the bundle was changed after the propose phase; rerun the iteration',
          exitCode: ExitCode.badInput,
        },
      );
    }
  }

  const keptCpuFailure = ev.gates.cpu?.status === 'failed' ? ev.gates.cpu : undefined;
  for (const step of PRODUCED_BY[phase]) delete ev.steps[step];
  if (phase !== 'publish') {
    ev.measurement = undefined;
    ev.profile = undefined;
    ev.gates = { ...(keptCpuFailure && phase !== 'cpu-gate' ? { cpu: keptCpuFailure } : {}) };
    if (phase !== 'cpu-gate' && ev.steps['cpu-gate'] === undefined && keptCpuFailure) {
      ev.steps['cpu-gate'] = { status: 'done', startedAt: ev.startedAt, finishedAt: ev.startedAt };
    }
  }
  const keptVerdict = phase === 'publish' ? ev.verdict : undefined;
  const keptReasons = phase === 'publish' ? ev.verdictReasons : [];
  ev.verdict = undefined;
  ev.verdictReasons = [];
  ev.stoppedAt = undefined;

  const file = bundle.path(BundleFiles.gitBundle);
  if (!existsSync(file)) {
    if (ev.candidate) {
      throw new HillclimbError(`${file} is missing but the evidence names a candidate`, {
        exitCode: ExitCode.badInput,
      });
    }
    ev.verdict = 'no-op';
    ev.verdictReasons = ['the agent made no commit'];
    ev.stoppedAt = 'propose';
    bundle.save(ev);
    return ev;
  }

  // The candidate, from the git objects.
  const ref = candidateRef(ctx.runId, ev.iteration);
  await ctx.git.fetchBundle(file, ref);
  const head = await ctx.git.revParse(ref);
  if (!(await ctx.git.isAncestor(ev.base.commit, head))) {
    ev.verdict = 'invalid';
    ev.verdictReasons = ['the candidate does not descend from the champion'];
    ev.stoppedAt = 'propose';
    bundle.save(ev);
    return ev;
  }
  ev.candidate = {
    ...(ev.candidate ?? { patchFile: BundleFiles.patch }),
    branch: iterationBranch(ctx, ev.iteration),
    commit: head,
    commits: await ctx.git.commitsBetween(ev.base.commit, head),
    subject: await ctx.git.subject(head),
    changedPaths: await ctx.git.changedPaths(ev.base.commit, head),
    patchFile: BundleFiles.patch,
  };
  if (phase !== 'publish') delete ev.candidate.logCommit;

  const guard = await guardStep.run({ ctx, bundle, ev, save: () => bundle.save(ev) });
  if (guard.status === 'verdict') {
    ev.verdict = guard.verdict;
    ev.verdictReasons = guard.reasons;
    ev.stoppedAt = 'guard';
  } else if (keptCpuFailure && phase !== 'cpu-gate') {
    ev.verdict = 'invalid';
    ev.verdictReasons = [`CPU correctness failed: ${keptCpuFailure.reason ?? 'see the JUnit report'}`];
    ev.stoppedAt = 'cpu-gate';
  } else if (keptVerdict !== undefined) {
    ev.verdict = keptVerdict;
    ev.verdictReasons = keptReasons;
  }
  bundle.save(ev);
  return ev;
}
