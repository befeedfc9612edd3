/**
 * guard: the agent may change only the target's editable paths (protected wins), and its added lines
 * must not contain known hacks. Either violation makes the iteration `invalid` before any test runs.
 * So does a change an earlier iteration already made on the same champion (the novelty check): it is
 * not measured again. A refused change is never pushed (no branch, no PR: publish.ts).
 */

import { join } from 'node:path';
import type { HistoryRow, IterationEvidence } from '../../evidence/index.js';
import {
  changeFingerprint,
  classifyChanges,
  describeViolations,
  scanCommits,
} from '../../workspace/index.js';
import { Bundle, iterationDirName } from '../state/bundle.js';
import { readHistory } from '../state/history.js';
import type { Step } from './step.js';

export const guardStep: Step = {
  name: 'guard',
  evaluation: true,
  async run({ ctx, ev }) {
    const candidate = ev.candidate!;
    const rules = { editable: ctx.target.editable, protected: ctx.target.protected };
    const paths = classifyChanges(candidate.changedPaths, rules);
    const scan = await scanCommits(ctx.git, ev.base.commit, candidate.commit, {
      ...rules,
      staticChecks: ctx.target.static_checks,
    });
    ev.guard = {
      allowed: paths.allowed && !scan.blocking,
      changedPaths: candidate.changedPaths,
      protectedTouched: paths.protectedTouched,
      outsideEditable: paths.outsideEditable,
      findings: scan.findings.map((f) => ({
        file: f.file,
        line: f.line ?? null,
        rule: f.ruleId,
        reason: f.reason,
        severity: f.severity,
        excerpt: f.excerpt,
      })),
    };
    // Links and submodules are never a candidate's: a link in a tree the harness reads (the log file,
    // a kernel source) can point it at its own secrets.
    const nonRegular = await ctx.git.nonRegularChanges(ev.base.commit, candidate.commit);
    if (nonRegular.length > 0) ev.guard.allowed = false;
    const reasons: string[] = [];
    if (!paths.allowed) reasons.push(describeViolations(paths));
    for (const n of nonRegular) reasons.push(`${n.path} is a ${n.mode}: only regular files may change`);
    for (const f of scan.findings.filter((x) => x.severity === 'block')) {
      reasons.push(`static scan: ${f.file}${f.line ? `:${f.line}` : ''} ${f.ruleId}: ${f.reason}`);
    }
    if (reasons.length > 0) return { status: 'verdict', verdict: 'invalid', reasons };

    const change = changeFingerprint(
      await ctx.git.diff(ev.base.commit, candidate.commit, {
        paths: candidate.changedPaths,
        context: 0,
        fullIndex: true,
      }),
    );
    if (change) ev.guard.change = change;
    // A person who asks for a measurement (a PR, `hillclimb measure`) asks for it again on purpose.
    const earlier =
      change && !personsChange(ctx, ev)
        ? sameChangeEarlier(readHistory(ctx.stateDir, ctx.target.name), change, {
            runId: ev.runId,
            iteration: ev.iteration,
            base: ev.base.commit,
          })
        : undefined;
    if (earlier) {
      ev.guard.allowed = false;
      ev.guard.repeatOf = repeatName(earlier);
      return {
        status: 'verdict',
        verdict: 'invalid',
        reasons: [repeatReason(earlier)],
        note: `repeat of iteration ${earlier.iteration} of run ${earlier.runId}`,
      };
    }
    // Two candidates of one search that make the same change would be screened twice for one answer.
    const sibling = change ? sameChangeInSearch(ctx.runDir, ev, change) : undefined;
    if (sibling !== undefined) {
      ev.guard.allowed = false;
      ev.guard.repeatOf = `candidate ${sibling} of this iteration`;
      return {
        status: 'verdict',
        verdict: 'invalid',
        reasons: [
          `${NOVELTY_REFUSAL}${ev.iteration}-c${sibling} of this run: candidate ${sibling} of this iteration makes the same change, and is the one tested`,
        ],
        note: `repeat of candidate ${sibling}`,
      };
    }
    const warnings = scan.findings.filter((f) => f.severity !== 'block').length;
    return warnings > 0 ? { status: 'done', note: `${warnings} static-scan warning(s)` } : { status: 'done' };
  },
};

/**
 * Whether the candidate is a person's change, which is measured whenever asked, repeat or not.
 * `candidate.from` says so, but it is a field of the bundle, which an untrusted job can write: it counts
 * only where it is the harness's own fact — in the job that made the candidate (it runs the propose
 * step: the agent's, or a person's change prepared by the harness), or in a later job that took over an
 * attested bundle. The guard record of the job that made it is how the guard knows the latter: trust.ts
 * keeps a bundle's step records only when an attestation vouches for the bundle, and drops the guard's
 * from any other before it guards the change again.
 */
export function personsChange(
  ctx: { proposes: boolean },
  ev: Pick<IterationEvidence, 'candidate' | 'steps'>,
): boolean {
  if (!ev.candidate?.from) return false;
  return ctx.proposes || ev.steps.guard !== undefined;
}

/** How the guard's refusal of a repeat starts (a history row's reason says it was refused, unmeasured). */
export const NOVELTY_REFUSAL = 'novelty check: a repeat of iteration ';

/**
 * The earlier candidate of the same search iteration (a lower slot) whose guard saw the same change, if
 * any. Their history rows are written only after the screen, so the history cannot tell.
 */
export function sameChangeInSearch(
  runDir: string,
  ev: Pick<IterationEvidence, 'iteration' | 'slot'>,
  change: string,
): number | undefined {
  for (let index = 1; index < (ev.slot?.index ?? 1); index++) {
    const sibling = new Bundle(join(runDir, iterationDirName({ iteration: ev.iteration, slot: { index } })));
    if (sibling.exists() && sibling.load().guard?.change === change) return index;
  }
  return undefined;
}

/**
 * The last earlier iteration that made this change on the same champion: that is what a repeat is. The
 * same edit on another champion is another experiment (a null result, a regression, a failed gate or a
 * program that came out the same bytes on an old champion says little about the new one), so it is
 * measured again once the champion has moved. An `error` row said nothing about the change (the
 * infrastructure failed), so it does not count, nor does an earlier refusal of the same repeat (it was
 * never measured; the iteration it repeated is the one to name); nor does this iteration's own row (a
 * later job — the publish job re-guards what it pushes — or a resumed run reads the history with it
 * already there).
 */
export function sameChangeEarlier(
  rows: readonly HistoryRow[],
  change: string,
  self: { runId: string; iteration: number; base: string },
): HistoryRow | undefined {
  return rows.findLast(
    (r) =>
      r.change === change &&
      r.baseCommit === self.base &&
      r.verdict !== 'error' &&
      !r.reason.startsWith('novelty check: ') &&
      !(r.runId === self.runId && r.iteration === self.iteration),
  );
}

/** `iteration 3-c2 of run <id>`: the earlier iteration a repeat repeats. */
function repeatName(row: HistoryRow): string {
  return `iteration ${row.iteration}${row.slot ? `-c${row.slot}` : ''} of run ${row.runId}`;
}

/** The refusal: which iteration this repeats, how that ended, and how a person has it measured anyway. */
export function repeatReason(row: HistoryRow): string {
  const ratio =
    row.ratio === null
      ? 'not measured'
      : `ratio ${row.ratio.toFixed(3)}${row.ciLow !== null && row.ciHigh !== null ? ` [${row.ciLow.toFixed(3)}, ${row.ciHigh.toFixed(3)}]` : ''}`;
  return (
    `${NOVELTY_REFUSAL}${row.iteration}${row.slot ? `-c${row.slot}` : ''} of run ${row.runId} ` +
    `(${row.verdict}, ${ratio}${row.reason ? `: ${row.reason}` : ''}), the same change on the same champion ${row.baseCommit.slice(0, 12)}. ` +
    'Not measured again until the champion moves; no PR is opened for it; ' +
    'a person who wants it measured anyway measures it as their own change: /hillclimb measure on a pull ' +
    'request that makes it, or hillclimb measure --base <champion> --head <commit>.'
  );
}
