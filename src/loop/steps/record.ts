/**
 * record: runs for every iteration, whatever its verdict — nothing is lost. It finishes the evidence,
 * renders the log entry from it (the harness writes the log, never the agent), commits the entry on
 * top of the candidate as the harness, appends the history row once, and renders the PR and comment
 * text into the bundle. A dry run appends no history row.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IterationEvidence, KeptPrograms } from '../../evidence/index.js';
import {
  appendLogEntry,
  evidenceLoader,
  formatProblem,
  lintLog,
  renderLogEntry,
} from '../../report/index.js';
import { writeFileAtomic } from '../../util/index.js';
import { HARNESS_IDENTITY } from '../../workspace/index.js';
import type { LoopContext } from '../context.js';
import { BundleFiles } from '../state/bundle.js';
import { appendHistory, historyRow, readHistory } from '../state/history.js';
import { keepChampionPrograms } from './champion-programs.js';
import { shareProfileSummary } from './profile.js';
import { bundlePrograms, PLATFORMS, type Platform } from './programs.js';
import type { Step } from './step.js';

export const recordStep: Step = {
  name: 'record',
  evaluation: false,
  async run({ ctx, bundle, ev, save }) {
    ev.finishedAt ??= new Date().toISOString();
    const evidenceRef = join('runs', ctx.runId, bundle.dir.split('/').pop()!, 'evidence.json');
    const entry = renderLogEntry(ev, { evidencePath: evidenceRef });
    writeFileAtomic(bundle.path(BundleFiles.logEntry), entry);

    // The run's own log holds every iteration, including those without a branch (no-op).
    const runLog = join(ctx.runDir, 'hillclimb-log.md');
    const runLogText = existsSync(runLog) ? readFileSync(runLog, 'utf8') : undefined;
    const tag = ev.slot ? `${ev.iteration}-c${ev.slot.index}` : `${ev.iteration}`;
    if (!runLogText?.includes(`<!-- hillclimb:iteration ${ctx.runId}/${tag} -->`)) {
      const text = appendLogEntry(
        runLogText,
        tagged(entry, ctx.runId, tag),
        {},
        { candidate: Boolean(ev.slot) },
      );
      writeFileSync(runLog, text);
      // The entry must pass the log's own rules against the evidence as saved: anything else is a bug
      // in rendering, kept as a warning on the iteration rather than lost.
      save();
      for (const p of lintLog(text, { scope: 'last-entry', loadEvidence: evidenceLoader([ctx.stateDir]) })) {
        const line = `log lint: ${formatProblem(runLog, p)}`;
        ctx.logger.warn(line);
        ev.publish ??= { warnings: [] };
        ev.publish.warnings.push(line);
      }
    }

    // A change the guard refused is never pushed, so it gets no log commit either.
    if (ev.candidate && !ev.candidate.logCommit && ev.guard?.allowed !== false) {
      ev.candidate.logCommit = await commitLogEntry(
        ctx,
        ev.iteration,
        ev.candidate.commit,
        entry,
        ev.verdict ?? 'error',
      );
      save();
    }

    // A dry run measured nothing: it leaves the shared history and the profile cache alone.
    if (ctx.dryRun) return { status: 'done', note: 'dry run: no history row' };

    // A new champion's profile is the candidate's (the log commit changes only the log): share it.
    const summary = bundle.path(BundleFiles.summary);
    if (ev.verdict === 'improved' && ev.candidate?.logCommit && existsSync(summary)) {
      await shareProfileSummary(ctx, ev.candidate.logCommit, summary);
    }

    const already = readHistory(ctx.stateDir, ctx.target.name).some(
      (r) => r.runId === ctx.runId && r.iteration === ev.iteration && r.slot === ev.slot?.index,
    );
    const promoted = ev.verdict === 'improved' && ev.candidate;
    const championAfter = promoted ? (ev.candidate!.logCommit ?? ev.candidate!.commit) : ev.base.commit;
    let kept: KeptPrograms | undefined;
    if (promoted && !already) {
      // The new champion is timed from now on by the programs this iteration measured, never
      // re-exported: kept in the state and the store, and their hashes in its history row.
      for (const platform of PLATFORMS) {
        const measured = measuredPrograms(ev, platform);
        const versions = ev.requests?.[platform]?.versions;
        if (!measured || !versions) continue;
        const k = await keepChampionPrograms(
          ctx,
          championAfter,
          platform,
          bundlePrograms(bundle, 'B', platform),
          {
            versions,
            measured,
          },
        );
        if (k && platform === ev.measurement?.programs?.platform) kept = k;
      }
    }
    if (!already) appendHistory(ctx.stateDir, historyRow(ev, championAfter, new Date(), kept));
    return { status: 'done' };
  },
};

/**
 * The hashes a platform's programs were verified with: the timed ones the measurement read, else the
 * ones the platform's gate verified.
 */
function measuredPrograms(ev: IterationEvidence, platform: Platform): Record<string, string> | undefined {
  const m = ev.measurement?.programs;
  if (m?.platform === platform && Object.keys(m.B).length > 0) return m.B;
  const gate = platform === 'cpu' ? ev.gates.cpu : ev.gates.accelerator;
  const v = gate?.verifier;
  return v?.passed && v.platform === platform ? v.programs : undefined;
}

/** A marker that lets a resumed record step see the entry is already in the run log. */
function tagged(entry: string, runId: string, tag: string): string {
  return `${entry.trimEnd()}\n<!-- hillclimb:iteration ${runId}/${tag} -->\n`;
}

/**
 * Commit the entry to the repository's log file on top of the candidate; returns the new commit. Built
 * from git objects (Git.commitFile): the candidate's tree is never checked out, so a log file that is a
 * link cannot make the harness read or write anything else. Dated like the candidate, so recording the
 * same iteration twice (a re-run publish job) makes the same commit instead of a second one.
 */
async function commitLogEntry(
  ctx: LoopContext,
  iteration: number,
  candidate: string,
  entry: string,
  verdict: string,
): Promise<string> {
  const logFile = ctx.config.paths.log_file;
  const current = await ctx.git.regularFileAt(candidate, logFile);
  return ctx.git.commitFile(
    candidate,
    logFile,
    appendLogEntry(current, entry),
    `hillclimb: log entry for ${ctx.target.name} iteration ${iteration} (${verdict})\n`,
    { identity: HARNESS_IDENTITY, date: await ctx.git.commitDate(candidate) },
  );
}
