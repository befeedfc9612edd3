/**
 * publish: the bundle goes to the store, the iteration's branch to the forge, a draft PR is opened or
 * updated (found by its head branch), labelled by verdict, and the sticky comment is written or updated
 * in place. Every call is idempotent, so a retried or resumed publish updates and never duplicates.
 * An iteration without a commit (no-op) has nothing to review: only its bundle is stored.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { CommentStamp } from '../../forge/forge.js';
import { renderComment } from '../../report/comment.js';
import { renderPullRequest } from '../../report/pr.js';
import { perfettoLinkFor } from '../../store/perfetto.js';
import { writeFileAtomic } from '../../util/files.js';
import { BundleFiles, iterationDirName } from '../bundle.js';
import { readHistory } from '../history.js';
import type { Step } from './step.js';

/** The key of hillclimb's sticky comment (one per PR). */
export const STICKY_KEY = 'hillclimb';

export const publishStep: Step = {
  name: 'publish',
  evaluation: false,
  async run({ ctx, bundle, ev, save }) {
    ev.publish ??= { warnings: [] };
    const publish = ev.publish;
    const prefix = `runs/${ctx.runId}/${iterationDirName(ev.iteration)}`;
    const stored = await ctx.store.putDir(prefix, bundle.dir);
    publish.bundleUrl = ctx.store.url(`${prefix}/${BundleFiles.evidence}`);
    if (
      ev.profile?.status === 'done' &&
      stored.some((o) => o.key.startsWith(`${prefix}/${BundleFiles.profileDir}`))
    ) {
      publish.traceUrl = ctx.store.url(`${prefix}/${BundleFiles.profileDir}`);
      const trace = stored.find((o) => /perfetto_trace\.json\.gz$|\.trace\.json\.gz$/.test(o.key));
      if (trace) {
        const link = perfettoLinkFor(ctx.store, trace.key);
        if (link.ok) publish.perfettoUrl = link.url;
        else publish.warnings.push(`no Perfetto link: ${link.reason}`);
      }
    }
    save();

    const candidate = ev.candidate;
    if (!candidate) return { status: 'done', note: 'no commit: bundle stored, no PR' };

    const head = candidate.logCommit ?? candidate.commit;
    await ctx.forge.pushBranch(ctx.root, candidate.branch, head);
    publish.branch = candidate.branch;

    const history = readHistory(ctx.stateDir, ctx.target.name).filter((r) => r.runId === ctx.runId);
    const logEntry = existsSync(bundle.path(BundleFiles.logEntry))
      ? readFileSync(bundle.path(BundleFiles.logEntry), 'utf8')
      : undefined;
    const pr = renderPullRequest(ev, {
      ...(logEntry ? { logEntry } : {}),
      logFile: ctx.config.paths.log_file,
    });
    const result = await ctx.forge.upsertPullRequest({
      branch: candidate.branch,
      base: ev.base.branch ?? ctx.config.forge.base,
      title: pr.title,
      body: pr.body,
      draft: ctx.config.forge.draft,
      labels: pr.labels,
    });
    writeFileAtomic(bundle.path(BundleFiles.prBody), pr.body);
    publish.prNumber = result.pr.number;
    publish.prUrl = result.pr.url;
    publish.prOperation = result.operation;
    save();

    const comment = renderComment(ev, history, {});
    if (comment.truncated)
      publish.warnings.push('the sticky comment was shortened to fit; see the job summary');
    writeFileAtomic(bundle.path(BundleFiles.comment), comment.body);
    const stamp: CommentStamp = {
      runStartedAt: ctx.runStartedAt,
      runId: ctx.runId,
      iteration: ev.iteration,
      commit: head,
    };
    const sticky = await ctx.forge.upsertStickyComment(result.pr.number, STICKY_KEY, comment.body, stamp);
    publish.commentId = sticky.commentId;
    publish.commentOperation = sticky.operation;
    save();
    // The stored copy of evidence.json should carry the PR and comment too.
    await ctx.store.put(`${prefix}/${BundleFiles.evidence}`, bundle.path(BundleFiles.evidence));
    return {
      status: 'done',
      note: `PR #${result.pr.number} ${result.operation}, comment ${sticky.operation}`,
    };
  },
};
