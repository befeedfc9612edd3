/**
 * guard: the agent may change only the target's editable paths (protected wins), and its added lines
 * must not contain known hacks. Either violation makes the iteration `invalid` before any test runs.
 */
import { classifyChanges, describeViolations, scanCommits } from '../../workspace/index.js';
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
    const warnings = scan.findings.filter((f) => f.severity !== 'block').length;
    return warnings > 0 ? { status: 'done', note: `${warnings} static-scan warning(s)` } : { status: 'done' };
  },
};
