/**
 * guard: the agent may change only the target's editable paths (protected wins), and its added lines
 * must not contain known hacks. Either violation makes the iteration `invalid` before any test runs.
 * So does a change an earlier iteration already made (the novelty check): it is not measured again.
 */
import type { HistoryRow } from '../../evidence/index.js';
import {
  changeFingerprint,
  classifyChanges,
  describeViolations,
  scanCommits,
} from '../../workspace/index.js';
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
      await ctx.git.diff(ev.base.commit, candidate.commit, { paths: candidate.changedPaths, context: 0 }),
    );
    if (change) ev.guard.change = change;
    // A person who asks for a measurement (a PR, `hillclimb measure`) asks for it again on purpose.
    const earlier =
      change && !candidate.from
        ? sameChangeEarlier(readHistory(ctx.stateDir, ctx.target.name), change, ev)
        : undefined;
    if (earlier) return { status: 'verdict', verdict: 'invalid', reasons: [repeatReason(earlier)] };
    const warnings = scan.findings.filter((f) => f.severity !== 'block').length;
    return warnings > 0 ? { status: 'done', note: `${warnings} static-scan warning(s)` } : { status: 'done' };
  },
};

/**
 * The last earlier iteration that made this change. An `error` row said nothing about the change (the
 * infrastructure failed), so it does not count; nor does this iteration's own row (a later job — the
 * publish job re-guards what it pushes — or a resumed run reads the history with it already there).
 */
export function sameChangeEarlier(
  rows: readonly HistoryRow[],
  change: string,
  self: { runId: string; iteration: number },
): HistoryRow | undefined {
  return rows.findLast(
    (r) =>
      r.change === change &&
      r.verdict !== 'error' &&
      !(r.runId === self.runId && r.iteration === self.iteration),
  );
}

function repeatReason(row: HistoryRow): string {
  const measured =
    row.ratio !== null
      ? `, ratio ${row.ratio.toFixed(3)}${row.ciLow !== null && row.ciHigh !== null ? ` [${row.ciLow.toFixed(3)}, ${row.ciHigh.toFixed(3)}]` : ''}`
      : '';
  return (
    `novelty check: the same change as iteration ${row.iteration} of run ${row.runId} ` +
    `(${row.verdict}${measured}: ${row.reason}); not measured again — change something that made it fail`
  );
}
