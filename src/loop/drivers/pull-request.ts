/**
 * Evidence for a change nobody's agent made — a person's pull request — so the same phases (gates,
 * measure, profile) can run on it, and its result can go into that PR's sticky comment.
 *
 * `prepareExternalChange` writes the iteration's bundle for `base..head`: the change as one commit with
 * head's tree on base (a PR's merge commit has two parents; every candidate has one), made by the
 * harness with a fixed date so any job gets the same SHA, as a git bundle and a patch, with prepare and
 * propose recorded as skipped; with `guard`, the path guard then runs as for an agent's change, so a PR
 * that touches the protected harness is `invalid` before anything measures it. It attests the bundle
 * (no untrusted code has run yet), so the gate phase in the same job keeps it as made.
 * `publishToPullRequest` takes the bundle of the measuring job — attested, of the pinned commit, else
 * refused — stores it and writes the sticky comment on the given PR; nothing goes into the loop's
 * history, which follows champions only. `recordBaseline` keeps a measurement of main in a series of
 * its own (baseline.yml), under the same rules.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, selectTarget } from '../../config/index.js';
import { EVIDENCE_SCHEMA, type HistoryRow, type IterationEvidence } from '../../evidence/index.js';
import { packageVersion } from '../../project/index.js';
import { renderComment } from '../../report/index.js';
import {
  appendLineDurable,
  ExitCode,
  HillclimbError,
  readJsonLines,
  writeFileAtomic,
} from '../../util/index.js';
import { Git } from '../../workspace/index.js';
import { configHash, defaultHost, runDirOf, stateDirOf } from '../context.js';
import {
  attestBundle,
  localAttestationFile,
  parseAttestation,
  writeLocalAttestation,
} from '../state/attestation.js';
import { Bundle, BundleFiles, iterationDirName } from '../state/bundle.js';
import { historyRow } from '../state/history.js';
import { candidateRef } from '../steps/naming.js';
import { STICKY_KEY, storeBundle } from '../steps/publish.js';
import {
  fullSha,
  type OpenPhase,
  openPhase,
  type PhaseOptions,
  type PhaseResult,
  runPhase,
} from './phases.js';
import { acceptBundle } from './trust.js';

export interface ExternalChange {
  /** What the change is compared against (the PR's base commit). */
  base: string;
  /** The change (the PR's head, or its merge commit). */
  head: string;
  /** Where it comes from, for the evidence, e.g. "pull request #12". */
  source: string;
  /** Run the path guard before anything else, as for an agent's change. */
  guard: boolean;
}

/**
 * The tree of the change on `base`: the head's own tree when it contains base, else what the head
 * changed since its merge base with `base`, merged into base — the change GitHub's pull-request diff
 * shows (three dots). Commits base gained after the branch point are not the change's: taking the
 * head's tree as it is would count them, undone, as its own (and their protected files with them).
 */
async function changedTree(git: Git, base: string, source: string, change: ExternalChange): Promise<string> {
  if (await git.isAncestor(base, source)) return source;
  const merged = await git.mergeTree(base, source);
  if ('tree' in merged) return merged.tree;
  throw new HillclimbError(
    `${change.source}: ${change.head} and ${change.base} both changed ${merged.conflicts.join(', ')} since ${change.head} branched off, in ways that conflict`,
    {
      exitCode: ExitCode.badInput,
      hint: `rebase ${change.head} onto ${change.base} (or merge ${change.base} into it), resolve the conflict, and run again`,
    },
  );
}

/** The iteration's bundle for `base..head`, created once; then the guard, when asked. Idempotent. */
export async function prepareExternalChange(
  opts: PhaseOptions,
  change: ExternalChange,
): Promise<PhaseResult> {
  const config = loadConfig(opts.configFile, opts.overrides);
  const target = selectTarget(config, opts.target);
  const stateDir = stateDirOf(config);
  const bundle = new Bundle(join(runDirOf(stateDir, opts.runId), iterationDirName(opts.iteration)));
  const git = await Git.create(config.root, { logger: opts.logger });
  try {
    if (!bundle.exists()) {
      const base = await git.revParse(change.base);
      const source = await git.revParse(change.head);
      if ((await git.commitsBetween(base, source)).length === 0) {
        throw new HillclimbError(`${change.source}: no commits between ${change.base} and ${change.head}`, {
          exitCode: ExitCode.badInput,
        });
      }
      const tree = await changedTree(git, base, source, change);
      const how =
        tree === source ? `The tree of ${source}` : `What ${source} changed since it branched off, merged`;
      const head = await git.commitTreeOf(
        tree,
        base,
        `${change.source} at ${source.slice(0, 12)}\n\n${how} on ${base}, made by the hillclimb harness.\n`,
        await git.commitDate(source),
      );
      const ref = candidateRef(opts.runId, opts.iteration);
      await git.updateRef(ref, head);
      await git.createBundle(bundle.path(BundleFiles.gitBundle), ref, base);
      writeFileAtomic(bundle.path(BundleFiles.patch), await git.formatPatch(base, head));
      const now = new Date().toISOString();
      const skipped = (note: string) => ({
        status: 'skipped' as const,
        startedAt: now,
        finishedAt: now,
        note,
      });
      const evidence: IterationEvidence = {
        schema: EVIDENCE_SCHEMA,
        runId: opts.runId,
        runStartedAt: opts.runStartedAt ?? now,
        iteration: opts.iteration,
        totalIterations: opts.totalIterations ?? 1,
        target: target.name,
        startedAt: now,
        verdictReasons: [],
        base: { commit: base },
        candidate: {
          branch: candidateRef(opts.runId, opts.iteration).replace(/^refs\//, ''),
          commit: head,
          commits: [head],
          subject: await git.subject(head),
          changedPaths: await git.changedPaths(base, head),
          patchFile: BundleFiles.patch,
          from: source,
        },
        gates: {},
        provenance: {
          hillclimbVersion: packageVersion(),
          configHash: configHash(config),
          host: defaultHost(),
        },
        steps: {
          prepare: skipped(`${change.source}: no agent prompt`),
          propose: skipped(`${change.source}: proposed by a person`),
          ...(change.guard ? {} : { guard: skipped(`${change.source}: not guarded (tests only)`) }),
        },
      };
      bundle.save(evidence);
      // Made here from the pinned commits, before any of the change's code ran: this job vouches for it.
      writeLocalAttestation(
        localAttestationFile(stateDir, opts.runId, opts.iteration),
        attestBundle(bundle, evidence, 'propose', true),
      );
    }
  } finally {
    await git.close();
  }
  // prepare and propose are recorded as skipped, so this runs the guard only (once).
  if (change.guard) return runPhase('propose', opts);
  return { phase: 'propose', evidence: bundle.load(), bundleDir: bundle.dir, stateDir };
}

/**
 * The measuring job's bundle, taken as the publishing job may: attested by that job and made from the
 * pinned commit, else refused (trust.ts). Store keys come from this workflow's run id, not the bundle.
 */
async function acceptMeasured(opts: PhaseOptions): Promise<OpenPhase & { ev: IterationEvidence }> {
  const open = await openPhase('publish', opts);
  if (!open.existing) {
    await open.close();
    throw new HillclimbError(`no evidence bundle at ${open.bundle.dir}`, {
      hint: `download the measuring job's bundle artifact into ${open.bundle.dir}`,
      exitCode: ExitCode.badInput,
    });
  }
  try {
    const ev = await acceptBundle(open.ctx, open.bundle, 'publish', {
      iteration: opts.iteration,
      refused: open.refused,
      trustedBase: opts.base,
      attestations: [opts.attestation ? parseAttestation(opts.attestation, 'input attestation') : undefined],
      ...(opts.pinnedSource ? { pinnedSource: fullSha(opts.pinnedSource, 'pinned source') } : {}),
    });
    return { ...open, ev };
  } catch (e) {
    await open.close();
    throw e;
  }
}

/** Store the bundle and write (or update) hillclimb's sticky comment on pull request `prNumber`. */
export async function publishToPullRequest(opts: PhaseOptions, prNumber: number): Promise<PhaseResult> {
  const { ctx, bundle, ev, close } = await acceptMeasured(opts);
  try {
    const startedAt = new Date().toISOString();
    ev.finishedAt ??= startedAt;
    if (opts.dryRun) {
      writeFileAtomic(bundle.path(BundleFiles.comment), renderComment(ev, [], {}).body);
      ev.steps.publish = {
        status: 'skipped',
        startedAt,
        finishedAt: startedAt,
        note: `dry run: would write the sticky comment on PR #${prNumber} (text in ${bundle.path(BundleFiles.comment)})`,
      };
      bundle.save(ev);
      return { phase: 'publish', evidence: ev, bundleDir: bundle.dir, stateDir: ctx.stateDir };
    }
    const prefix = `runs/${opts.runId}/${iterationDirName(opts.iteration)}`;
    // Stored first: the comment links to the stored evidence and trace.
    const publish = await storeBundle(ctx.store, bundle, ev, prefix);
    const comment = renderComment(ev, [], {});
    writeFileAtomic(bundle.path(BundleFiles.comment), comment.body);
    const sticky = await ctx.forge.upsertStickyComment(prNumber, STICKY_KEY, comment.body, {
      runStartedAt: ev.runStartedAt,
      runId: opts.runId,
      iteration: opts.iteration,
      commit: ev.candidate?.from ?? ev.candidate?.commit ?? ev.base.commit,
    });
    publish.prNumber = prNumber;
    publish.commentId = sticky.commentId;
    publish.commentOperation = sticky.operation;
    ev.steps.publish = {
      status: 'done',
      startedAt,
      finishedAt: new Date().toISOString(),
      note: `comment on PR #${prNumber} ${sticky.operation}`,
    };
    bundle.save(ev);
    await ctx.store.put(`${prefix}/${BundleFiles.evidence}`, bundle.path(BundleFiles.evidence));
    return { phase: 'publish', evidence: ev, bundleDir: bundle.dir, stateDir: ctx.stateDir };
  } finally {
    await close();
  }
}

/** Where a target's baseline series lives in the store: history rows of main, apart from the loop's. */
export function baselineKey(target: string): string {
  return `baselines/${target}.jsonl`;
}

/**
 * Record a measured baseline (main's newest commit against its parent): the bundle goes to the store
 * under `baselines/<target>/<run>/`, and one history-format row is appended to the target's baseline
 * series (once per run). The series never moves the loop's champion. Writers of one series must be
 * serialized (baseline.yml's concurrency group): the store replaces the file whole.
 */
export async function recordBaseline(opts: PhaseOptions): Promise<PhaseResult> {
  const { ctx, bundle, ev, close } = await acceptMeasured(opts);
  try {
    const target = ctx.target;
    if (opts.dryRun) {
      opts.logger.info(`dry run: the baseline of ${target.name} is neither stored nor added to its series`);
      return { phase: 'publish', evidence: ev, bundleDir: bundle.dir, stateDir: ctx.stateDir };
    }
    const prefix = `baselines/${target.name}/${opts.runId}`;
    ev.finishedAt ??= new Date().toISOString();
    await storeBundle(ctx.store, bundle, ev, prefix);
    bundle.save(ev);
    const series = join(ctx.runDir, 'baseline.jsonl');
    const key = baselineKey(target.name);
    rmSync(series, { force: true });
    if ((await ctx.store.list('baselines/')).includes(key)) await ctx.store.get(key, series);
    const rows = readJsonLines<HistoryRow>(series).rows;
    if (!rows.some((r) => r.runId === opts.runId && r.iteration === opts.iteration)) {
      appendLineDurable(series, JSON.stringify(historyRow(ev, ev.candidate?.from ?? ev.base.commit)));
      await ctx.store.put(key, series);
    }
    return { phase: 'publish', evidence: ev, bundleDir: bundle.dir, stateDir: ctx.stateDir };
  } finally {
    await close();
  }
}
