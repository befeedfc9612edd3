/**
 * publish: the bundle goes to the store, the iteration's branch to the forge, a draft PR is opened or
 * updated (found by its head branch), labelled by verdict, and the sticky comment is written or updated
 * in place. Every call is idempotent, so a retried or resumed publish updates and never duplicates.
 * An iteration without a commit (no-op) has nothing to review: only its bundle is stored. Neither has
 * a change the guard refused: it is never pushed (no branch, no PR); its bundle and patch go to the
 * store, and the report says why. A candidate that lost its iteration's search (loop.candidates > 1)
 * gets no PR either unless search.publish_losers: the winner's comment lists it. What is pushed is checked first: the candidate on the champion plus
 * the harness's log commit, which changes the log file and nothing else.
 * A dry run publishes nothing: it writes the PR and comment texts into the bundle and says what it
 * would have done.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { IterationEvidence, PublishEvidence } from '../../evidence/index.js';
import type { CommentStamp } from '../../forge/index.js';
import { renderComment, renderPullRequest } from '../../report/index.js';
import { perfettoLinkFor, type Store } from '../../store/index.js';
import { HillclimbError, writeFileAtomic } from '../../util/index.js';
import type { LoopContext } from '../context.js';
import { type Bundle, BundleFiles, iterationDirName } from '../state/bundle.js';
import { readHistory } from '../state/history.js';
import type { Step, StepResult } from './step.js';

/** The key of hillclimb's sticky comment (one per PR). */
export const STICKY_KEY = 'hillclimb';

export const publishStep: Step = {
  name: 'publish',
  evaluation: false,
  async run({ ctx, bundle, ev, save }) {
    if (ctx.dryRun) return dryRunPublish(ctx, bundle, ev);
    const publish = await storeBundle(ctx.store, bundle, ev, `runs/${ctx.runId}/${iterationDirName(ev)}`);
    save();

    const candidate = ev.candidate;
    if (!candidate) return { status: 'done', note: 'no commit: bundle stored, no PR' };
    if (ev.guard?.allowed !== true) {
      const why = ev.guard ? 'the guard refused the change' : 'the change was never guarded';
      publish.warnings.push(`${why}: not pushed (no branch, no PR); the patch is in the stored bundle`);
      save();
      return { status: 'done', note: `${why}: bundle stored, nothing pushed` };
    }
    // A candidate that lost its iteration's search is a row in the winner's comment, not a PR of its own.
    if (lostTheSearch(ctx, ev)) {
      return {
        status: 'done',
        note: `candidate ${ev.slot?.index} of ${ev.slot?.of} (${ev.verdict ?? 'no verdict'}): bundle stored, no PR (search.publish_losers is off)`,
      };
    }

    const head = await pushableHead(ctx, ev);
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
    await ctx.store.put(
      `runs/${ctx.runId}/${iterationDirName(ev)}/${BundleFiles.evidence}`,
      bundle.path(BundleFiles.evidence),
    );
    return {
      status: 'done',
      note: `PR #${result.pr.number} ${result.operation}, comment ${sticky.operation}`,
    };
  },
};

/**
 * What may be pushed: the candidate (on the champion, guarded) and the harness's log commit on top of
 * it, which must change the log file and nothing else. Anything else is a bug or an attack: throw.
 */
async function pushableHead(ctx: LoopContext, ev: IterationEvidence): Promise<string> {
  const candidate = ev.candidate!;
  if (!(await ctx.git.isAncestor(ev.base.commit, candidate.commit))) {
    throw new HillclimbError(
      `refusing to push ${candidate.commit.slice(0, 12)}: it does not descend from the champion`,
    );
  }
  const log = candidate.logCommit;
  if (log === undefined) return candidate.commit;
  const parents = await ctx.git.parents(log);
  const changed = await ctx.git.changedPaths(candidate.commit, log);
  const logFile = ctx.config.paths.log_file;
  if (parents.length !== 1 || parents[0] !== candidate.commit || changed.some((p) => p !== logFile)) {
    throw new HillclimbError(
      `refusing to push ${log.slice(0, 12)}: not the harness's log commit on the candidate (parents ${parents.join(', ')}; changes ${changed.join(', ') || 'nothing'})`,
    );
  }
  return log;
}

/**
 * Put an iteration's bundle in the store under `prefix` and record where it went: the evidence URL and,
 * when a profile was taken, the trace URL and a Perfetto link (or why there is none).
 */
export async function storeBundle(
  store: Store,
  bundle: Bundle,
  ev: IterationEvidence,
  prefix: string,
): Promise<PublishEvidence> {
  ev.publish ??= { warnings: [] };
  const publish = ev.publish;
  const stored = await store.putDir(prefix, bundle.dir);
  publish.bundleUrl = store.url(`${prefix}/${BundleFiles.evidence}`);
  const trace = stored.find((o) => /perfetto_trace\.json\.gz$|\.trace\.json\.gz$/.test(o.key));
  if (ev.profile?.status === 'done' && trace) {
    // The trace file itself: a folder has no URL on the Hub (resolve/main/<folder> is a 404).
    publish.traceUrl = store.url(trace.key);
    const link = perfettoLinkFor(store, trace.key);
    if (link.ok) publish.perfettoUrl = link.url;
    else if (!publish.warnings.some((w) => w.startsWith('no Perfetto link'))) {
      publish.warnings.push(`no Perfetto link: ${link.reason}`);
    }
  }
  return publish;
}

/** What publish would do, without doing it: the texts go into the bundle for inspection. */
/** A candidate that lost its iteration's search, which gets no PR of its own unless search.publish_losers. */
function lostTheSearch(ctx: LoopContext, ev: IterationEvidence): boolean {
  return ev.search?.role === 'loser' && !ctx.config.search.publish_losers;
}

function dryRunPublish(ctx: LoopContext, bundle: Bundle, ev: IterationEvidence): StepResult {
  const candidate = ev.candidate;
  if (!candidate) return { status: 'skipped', note: 'dry run: no commit, nothing would be published' };
  if (lostTheSearch(ctx, ev)) {
    return {
      status: 'skipped',
      note: `dry run: candidate ${ev.slot?.index} of ${ev.slot?.of} lost the search: no PR would be opened (search.publish_losers is off)`,
    };
  }
  const pr = renderPullRequest(ev, { logFile: ctx.config.paths.log_file });
  writeFileAtomic(bundle.path(BundleFiles.prBody), pr.body);
  const history = readHistory(ctx.stateDir, ctx.target.name).filter((r) => r.runId === ctx.runId);
  writeFileAtomic(bundle.path(BundleFiles.comment), renderComment(ev, history, {}).body);
  return {
    status: 'skipped',
    note: `dry run: would push ${candidate.branch} and open or update the ${ctx.config.forge.kind} PR "${pr.title}" with its comment (texts in ${bundle.dir})`,
  };
}
