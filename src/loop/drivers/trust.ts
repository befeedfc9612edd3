/**
 * The trust boundary between phases. In CI each phase runs in its own job and gets the iteration's
 * bundle from the previous one as an artifact. The agent's job runs code the harness does not control,
 * and any job of the run can write artifacts, so a phase takes a bundle made elsewhere as data:
 *
 * - Its files are copied into a fresh folder first, plain files only: a link (to /proc/self/environ,
 *   to a credentials file) or a special file never reaches a reader.
 * - It is believed only when it matches a verified attestation (attestation.ts) for the champion the
 *   trusted workflow passed in: then the results in it stand, because a job that ran no untrusted code
 *   outside the sandbox wrote them.
 * - Otherwise everything a phase produces (gates, measurement, profile, verdict) is dropped, so a
 *   planted "measurement" or "verdict" can never be resumed or published. A failed CPU gate is kept,
 *   and so is the reason an iteration without a candidate ended: they can only hurt the candidate.
 * - Either way the candidate is re-read from the git objects through a throwaway repository
 *   (Git.importBundle: exactly one head, a line of commits on the champion, regular files only), and the
 *   path guard and static scan run again on it.
 */
import { existsSync, renameSync, rmSync } from 'node:fs';
import { type IterationEvidence, STEPS, type StepName, unverifiedReasons } from '../../evidence/index.js';
import { copyPlainTree, ExitCode, HillclimbError, writeFileAtomic } from '../../util/index.js';
import { CandidateRefused } from '../../workspace/index.js';
import type { LoopContext } from '../context.js';
import { type Attestation, bundleDigest } from '../state/attestation.js';
import { type Bundle, BundleFiles } from '../state/bundle.js';
import { guardStep } from '../steps/guard.js';
import { candidateRef, iterationBranch } from '../steps/naming.js';
import type { TakeoverPhase } from './phases.js';

/** Steps whose results each phase recomputes (and so must not inherit from an untrusted bundle). */
const PRODUCED_BY: Readonly<Record<TakeoverPhase, readonly StepName[]>> = {
  'cpu-gate': ['cpu-gate', 'accelerator-gate', 'measure', 'profile', 'decide', 'record', 'publish'],
  'accelerator-gate': ['accelerator-gate', 'measure', 'profile', 'decide', 'record', 'publish'],
  measure: ['measure', 'profile', 'decide', 'record', 'publish'],
  select: ['accelerator-gate', 'measure', 'profile', 'decide', 'record', 'publish'],
  publish: ['record', 'publish'],
};

/** Verdicts an iteration without a candidate may keep from an untrusted bundle: none of them promotes. */
const HARMLESS_WITHOUT_CANDIDATE = new Set(['no-op', 'invalid', 'error']);

/**
 * Copy the bundle's plain files into a fresh folder that replaces it; returns what was left behind
 * ("path: why"). Run before anything in the bundle is read.
 */
export function quarantineBundle(bundle: Bundle): string[] {
  const fresh = `${bundle.dir}.quarantine-${process.pid}`;
  const old = `${bundle.dir}.untrusted-${process.pid}`;
  rmSync(fresh, { recursive: true, force: true });
  const copied = copyPlainTree(bundle.dir, fresh);
  renameSync(bundle.dir, old);
  renameSync(fresh, bundle.dir);
  rmSync(old, { recursive: true, force: true });
  return copied.refused;
}

export interface AcceptOptions {
  /** The iteration the trusted workflow runs (the bundle's own number is only a claim). */
  iteration: number;
  /** What quarantining left out of the bundle (openPhase did it before anything was read). */
  refused: readonly string[];
  /** The champion's branch, from the shared history, when the champion came from an iteration. */
  trustedBranch?: string;
  /** The champion the trusted workflow passed in; required for a bundle made elsewhere. */
  trustedBase: string | undefined;
  /**
   * Statements that may vouch for the bundle: the one handed over by the job that made it, and this
   * machine's own (an earlier phase in the same job). Believed when any one matches.
   */
  attestations: ReadonlyArray<Attestation | undefined>;
  /**
   * For a person's change (pr-evidence): the commit the trusted workflow pinned (the PR's merge commit).
   * The bundle must be attested and made from it; anything else is refused.
   */
  pinnedSource?: string;
  /**
   * The candidate of a search iteration the trusted workflow says this bundle is (its matrix slot):
   * it names the branch and paths, whatever the bundle claims.
   */
  slot?: { index: number; of: number };
}

/**
 * Take a bundle made elsewhere into `phase`: believed when attested, re-derived otherwise. Returns the
 * evidence as the phase may use it (also saved).
 */
export async function acceptBundle(
  ctx: LoopContext,
  bundle: Bundle,
  phase: TakeoverPhase,
  opts: AcceptOptions,
): Promise<IterationEvidence> {
  const refused = [...opts.refused];
  const ev = bundle.load();
  // Who and where the iteration is come from the trusted side, whatever the bundle says: they name
  // the branch it is pushed to, its store keys and its PR's base.
  ev.runId = ctx.runId;
  ev.iteration = opts.iteration;
  ev.target = ctx.target.name;
  ev.runStartedAt = ctx.runStartedAt;
  ev.totalIterations = ctx.totalIterations;
  // Which candidate it is comes from the workflow too: a slot would rename its branch and paths.
  if (opts.slot) ev.slot = opts.slot;
  else delete ev.slot;
  // A search's outcome (screen, role, table) is believed only from the job that selected, attested,
  // at publish: a planted one could mark a candidate a loser that opens no PR, or a screen pose as
  // measured rounds.
  const selected = { screen: ev.screen, search: ev.search };
  delete ev.screen;
  delete ev.search;
  // A dry run is this job's input, never the bundle's word: the flag follows the job.
  if (ctx.dryRun) ev.dryRun = true;
  else delete ev.dryRun;
  if (opts.trustedBase === undefined) {
    throw new HillclimbError(
      `${bundle.dir} was made by another job, and no champion was given to check it against`,
      {
        hint: 'pass the champion the workflow resolved (input base / --base)',
        exitCode: ExitCode.badInput,
      },
    );
  }
  const expected = await ctx.git.revParse(opts.trustedBase);
  if (ev.base.commit !== expected) {
    throw new HillclimbError(
      `${bundle.path(BundleFiles.evidence)}: the bundle's champion ${ev.base.commit.slice(0, 12)} is not the expected ${expected.slice(0, 12)}`,
      {
        hint: 'the bundle was changed after the propose phase; rerun the iteration',
        exitCode: ExitCode.badInput,
      },
    );
  }
  if (opts.trustedBranch) ev.base.branch = opts.trustedBranch;
  else delete ev.base.branch;
  const attested = opts.attestations.some((a) => attestedBy(a, bundle, expected, refused));
  // Only the job that selected writes a search's outcome: a gate job's attestation vouches for none.
  const selectedHere = opts.attestations.some(
    (a) => a?.phase === 'select' && attestedBy(a, bundle, expected, refused),
  );
  if (selectedHere && opts.slot && phase === 'publish') {
    if (selected.screen) ev.screen = selected.screen;
    if (selected.search) ev.search = selected.search;
  }
  if (opts.pinnedSource !== undefined && !(attested && ev.candidate?.from === opts.pinnedSource)) {
    throw new HillclimbError(
      `${bundle.dir}: not an attested bundle of the pinned commit ${opts.pinnedSource.slice(0, 12)}`,
      {
        hint: 'pass the attestation of the job that made it; rerun /hillclimb measure',
        exitCode: ExitCode.badInput,
      },
    );
  }
  const reported = attested ? undefined : dropUntrustedResults(ev, phase);

  const file = bundle.path(BundleFiles.gitBundle);
  if (!existsSync(file)) {
    if (attested && ev.candidate !== undefined) {
      throw new HillclimbError(`${file} is missing but the attested evidence names a candidate`, {
        exitCode: ExitCode.badInput,
      });
    }
    delete ev.candidate;
    if (!attested) settleWithoutCandidate(ev, reported);
    bundle.save(ev);
    return ev;
  }

  // The candidate, from the git objects, through a throwaway repository.
  try {
    const imported = await ctx.git.importBundle(file, {
      ref: candidateRef(ctx.runId, ev),
      champion: expected,
      ...(attested && ev.candidate ? { expectedHead: ev.candidate.commit } : {}),
    });
    ev.candidate = {
      // A person's change (the commit it was made from) is a harness fact only in an attested bundle.
      ...(attested && ev.candidate?.from ? { from: ev.candidate.from } : {}),
      branch: iterationBranch(ctx, ev),
      commit: imported.head,
      commits: imported.commits,
      subject: await ctx.git.subject(imported.head),
      changedPaths: await ctx.git.changedPaths(expected, imported.head),
      patchFile: BundleFiles.patch,
    };
  } catch (e) {
    if (!(e instanceof CandidateRefused)) throw e;
    delete ev.candidate;
    setVerdict(ev, 'invalid', [`the candidate's commits were refused: ${e.message}`], 'propose');
    bundle.save(ev);
    return ev;
  }
  // Written again from the verified commits: the bundle's own copy is only a claim.
  bundle.save(ev);
  writeFileAtomic(bundle.path(BundleFiles.patch), await ctx.git.formatPatch(expected, ev.candidate.commit));

  // The guard again, on the verified commits — unless a trusted job decided this change is not guarded
  // (a person's PR measured for its tests only).
  const guardSkippedByTrust = attested && ev.steps.guard?.status === 'skipped';
  const startedAt = new Date().toISOString();
  const guard = guardSkippedByTrust
    ? ({ status: 'done', note: undefined } as const)
    : await guardStep.run({ ctx, bundle, ev, save: () => bundle.save(ev) });
  if (!guardSkippedByTrust) {
    const note = guard.status === 'verdict' ? `${guard.verdict}: ${guard.reasons[0] ?? ''}` : guard.note;
    ev.steps = withStep(ev.steps, 'guard', {
      status: 'done',
      startedAt,
      finishedAt: new Date().toISOString(),
      ...(note
        ? { note: `re-checked on the imported commits: ${note}` }
        : { note: 're-checked on the imported commits' }),
    });
  }
  if (guard.status === 'verdict') {
    setVerdict(ev, guard.verdict, guard.reasons, 'guard');
  } else if (!attested && ev.gates.cpu?.status === 'failed' && phase !== 'cpu-gate') {
    setVerdict(
      ev,
      'invalid',
      [`CPU correctness failed: ${ev.gates.cpu.reason ?? 'see the JUnit report'}`],
      'cpu-gate',
    );
  } else if (!attested && phase === 'publish') {
    setVerdict(
      ev,
      'error',
      [
        'no attested result reached the publishing job: the gates and measurement are not believed (docs/security.md)',
      ],
      ev.stoppedAt,
    );
  }
  // Attested, but nothing after that job finished (a measuring job that failed before it could attest):
  // say so, rather than publish a "pending" that nothing will ever complete. (A dry run has no verdict.)
  if (phase === 'publish' && attested && ev.verdict === undefined && !ctx.dryRun) {
    setVerdict(
      ev,
      'error',
      ['the iteration stopped before a verdict: a later job did not finish (see the workflow run)'],
      undefined,
    );
  }
  // A measured improvement is a champion only when nothing untrusted ran unsandboxed where it was measured.
  const unverified = unverifiedReasons(ev);
  if (ev.verdict === 'improved' && unverified.length > 0) {
    setVerdict(
      ev,
      'needs-human',
      [`measured as improved, but the numbers are unverified: ${unverified.join('; ')}`],
      ev.stoppedAt,
    );
  }
  bundle.save(ev);
  return ev;
}

/** Whether `a` vouches for this bundle as it is now: verified, for this champion, digest matching. */
function attestedBy(
  a: Attestation | undefined,
  bundle: Bundle,
  champion: string,
  refused: string[],
): boolean {
  if (!a?.verified || a.champion !== champion || refused.length > 0) return false;
  try {
    return bundleDigest(bundle.dir) === a.digest;
  } catch {
    return false;
  }
}

type Reported = { verdict: NonNullable<IterationEvidence['verdict']>; reasons: string[] } | undefined;

/**
 * Forget what `phase` and later phases produce, keeping only what can hurt the candidate. Returns the
 * verdict the bundle claimed, for an iteration that turns out to have no candidate.
 */
function dropUntrustedResults(ev: IterationEvidence, phase: TakeoverPhase): Reported {
  const keptCpuFailure = ev.gates.cpu?.status === 'failed' ? ev.gates.cpu : undefined;
  for (const step of PRODUCED_BY[phase]) delete ev.steps[step];
  delete ev.steps.guard;
  ev.measurement = undefined;
  ev.profile = undefined;
  ev.isolation = undefined;
  ev.gates = keptCpuFailure && phase !== 'cpu-gate' ? { cpu: keptCpuFailure } : {};
  if (phase === 'cpu-gate') delete ev.steps['cpu-gate'];
  else if (!keptCpuFailure) {
    // The gate's pass is not believed: record that it was not seen, so no measurement here can promote.
    ev.steps['cpu-gate'] = {
      status: 'skipped',
      startedAt: ev.startedAt,
      finishedAt: ev.startedAt,
      note: 'its result came without a valid attestation',
    };
  } else ev.steps['cpu-gate'] ??= { status: 'done', startedAt: ev.startedAt, finishedAt: ev.startedAt };
  const reported = ev.verdict ? { verdict: ev.verdict, reasons: ev.verdictReasons } : undefined;
  ev.verdict = undefined;
  ev.verdictReasons = [];
  ev.stoppedAt = undefined;
  delete ev.candidate?.logCommit;
  return reported;
}

/** An untrusted bundle with no candidate: the reason it gave stands if it cannot promote anything. */
function settleWithoutCandidate(ev: IterationEvidence, reported: Reported): void {
  if (reported && HARMLESS_WITHOUT_CANDIDATE.has(reported.verdict)) {
    setVerdict(ev, reported.verdict, reported.reasons, 'propose');
  } else {
    setVerdict(ev, 'no-op', ['the agent made no commit'], 'propose');
  }
}

function setVerdict(
  ev: IterationEvidence,
  verdict: NonNullable<IterationEvidence['verdict']>,
  reasons: string[],
  at: StepName | undefined,
): void {
  ev.verdict = verdict;
  ev.verdictReasons = reasons;
  if (at) ev.stoppedAt = at;
}

/** The step records with `name` set, in pipeline order (evidence.json reads in the order steps ran). */
function withStep(
  steps: IterationEvidence['steps'],
  name: StepName,
  record: NonNullable<IterationEvidence['steps'][StepName]>,
): IterationEvidence['steps'] {
  const all = { ...steps, [name]: record };
  return Object.fromEntries(STEPS.filter((s) => all[s] !== undefined).map((s) => [s, all[s]]));
}
