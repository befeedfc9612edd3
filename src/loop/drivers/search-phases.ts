/**
 * A search iteration (loop.candidates = k > 1) split into the workflow's jobs (docs/search.md):
 *
 *   propose, cpu-gate   one job per candidate (the workflow's matrix), each given its slot: runPhase
 *                       with `slot`, bundle `i003-c2`, attested through a job output of its own
 *                       (`attestation-c2`: a matrix's legs share one set of job outputs)
 *   select              one job over every candidate's bundle: the accelerator gates, the screen, and
 *                       the full comparison of the best survivor (with the fallback), as
 *                       runSearchIteration does after the gates on one machine
 *   publish             one job: every candidate recorded, losers first; only the winner opens a PR
 *
 * Each bundle is taken over on its own (trust.ts): believed only under the attestation for its slot,
 * its slot set from the workflow's side. A candidate whose bundle never reached the job (its propose or
 * gate job failed before handing it on) is recorded as `error`, so nothing is lost.
 */
import { existsSync } from 'node:fs';
import { ExitCode, HillclimbError } from '../../util/index.js';
import { runDirOf } from '../context.js';
import {
  type Attestation,
  attestBundle,
  bundleDigest,
  localAttestationFile,
  parseAttestation,
  readLocalAttestation,
  writeLocalAttestation,
} from '../state/attestation.js';
import { type Bundle, iterationDirName } from '../state/bundle.js';
import { newEvidence, runIterationSteps } from '../steps/iteration.js';
import {
  championFromHistory,
  openPhaseContext,
  type PhaseOptions,
  type PhaseResult,
  phaseSetup,
  pushHistory,
  ranUnsandboxedIn,
} from './phases.js';
import {
  candidateBundles,
  leadBundle,
  measureInFull,
  recordCandidates,
  recordSearch,
  screenAndSelect,
} from './search.js';
import { acceptBundle, quarantineBundle } from './trust.js';

export type SearchPhase = 'select' | 'publish';

export interface SearchPhaseOptions extends Omit<PhaseOptions, 'slot' | 'attestation'> {
  /**
   * The attestations of the jobs that made the candidates' bundles: a JSON object with one key per
   * slot, `attestation-c<slot>` (the cpu-gate matrix's outputs, or the select job's `attestations`).
   * Other keys are ignored; an empty value vouches for nothing.
   */
  attestations?: string;
}

export interface SearchPhaseResult {
  phase: SearchPhase;
  /** Every candidate's result, slot 1 first. */
  candidates: PhaseResult[];
  /** The candidate that speaks for the iteration: the winner, else the best-screened one. */
  lead: PhaseResult;
}

/** Run the select or publish phase of a search iteration over all k candidates' bundles. */
export async function runSearchPhase(
  phase: SearchPhase,
  opts: SearchPhaseOptions,
): Promise<SearchPhaseResult> {
  const setup = await phaseSetup(phase, opts);
  const { config, stateDir } = setup;
  const k = config.loop.candidates;
  if (k < 2) {
    throw new HillclimbError(`the ${phase} phase of a search needs loop.candidates > 1, and it is ${k}`, {
      hint: "pass the setup job's overrides (they carry loop.candidates) to every job",
      exitCode: ExitCode.badInput,
    });
  }
  const vouched = attestationsBySlot(opts.attestations);
  const runDir = runDirOf(stateDir, opts.runId);
  const bundles = candidateBundles(runDir, opts.iteration, k);
  const slots = bundles.map((_, s) => ({ index: s + 1, of: k }));
  // Each candidate's own statement of this machine (an earlier phase in the same job), by slot.
  const trustFiles = slots.map((slot) =>
    localAttestationFile(stateDir, opts.runId, { iteration: opts.iteration, slot }),
  );
  const refused = bundles.map((b) => (existsSync(b.dir) ? quarantineBundle(b) : []));
  refused.forEach((r, s) => {
    for (const why of r) opts.logger.warn(`bundle ${bundles[s]!.dir}: left out ${why}`);
  });
  const first = bundles.find((b) => b.exists())?.load();
  if (!first) {
    throw new HillclimbError(
      `no candidate's bundle reached the ${phase} job (${runDir}: no ${iterationDirName(opts.iteration)}-c<slot> folder)`,
      {
        hint: 'every propose or gate job failed before handing its bundle on: see the workflow run, and re-run the failed jobs',
        exitCode: ExitCode.infra,
      },
    );
  }
  // The select job vouched for its bundles: they must be the ones here (a lost artifact is re-run, not
  // published as k unattested candidates).
  const fromSelect = [...vouched.entries()].filter(([, a]) => a.phase === 'select');
  if (phase === 'publish' && fromSelect.length > 0) {
    const arrived = fromSelect.some(([slot, a]) => {
      const b = bundles[slot - 1];
      return b?.exists() === true && refused[slot - 1]!.length === 0 && bundleDigest(b.dir) === a.digest;
    });
    if (!arrived) {
      throw new HillclimbError(
        'the select job vouched for its bundles, and none of them reached the publish job (artifact …-search)',
        {
          hint: 're-run the publish job (or the measure job, if its upload failed)',
          exitCode: ExitCode.infra,
        },
      );
    }
  }
  const { ctx, openBackends, close } = await openPhaseContext(phase, opts, { ...setup, existing: first });
  const say = (b: Bundle) => (line: string) =>
    (opts.progress ?? opts.logger.info)(`[${b.dir.split('/').pop()} ${ctx.target.name}] ${line}`);
  try {
    const fromHistory = championFromHistory(stateDir, ctx.target.name);
    const trustedBase = opts.base ?? fromHistory?.commit;
    if (trustedBase === undefined) {
      throw new HillclimbError(
        `the ${phase} phase takes bundles made by other jobs, and no champion was given`,
        {
          hint: 'pass the champion the workflow resolved (input base)',
          exitCode: ExitCode.badInput,
        },
      );
    }
    const champion = await ctx.git.revParse(trustedBase);
    const trustedBranch = fromHistory?.commit === champion ? fromHistory.branch : undefined;
    for (const [s, b] of bundles.entries()) {
      const slot = slots[s]!;
      if (!b.exists()) {
        say(b)('its bundle did not reach this job: recorded as an error');
        b.save({
          ...newEvidence(ctx, {
            iteration: opts.iteration,
            base: { commit: champion, ...(trustedBranch ? { branch: trustedBranch } : {}) },
          }),
          slot,
          verdict: 'error',
          verdictReasons: [
            `candidate ${slot.index}'s bundle did not reach the ${phase} job: its propose or CPU-gate job failed before handing it on (see the workflow run)`,
          ],
          stoppedAt: 'propose',
        });
        continue;
      }
      await acceptBundle(ctx, b, phase, {
        iteration: opts.iteration,
        refused: refused[s]!,
        trustedBase,
        trustedBranch,
        attestations: [vouched.get(slot.index), readLocalAttestation(trustFiles[s]!)],
        slot,
      });
    }

    await openBackends();
    if (phase === 'select') {
      for (const b of bundles) requireBelievedCpuPass(b, ctx.dryRun);
      for (const b of bundles) {
        ctx.progress = say(b);
        await runIterationSteps(ctx, b, undefined, { only: ['accelerator-gate'] });
      }
      ctx.progress = say(bundles[0]!);
      await screenAndSelect(ctx, bundles, undefined, say);
      await measureInFull(ctx, bundles, undefined, say);
    } else {
      settleUnselected(ctx, bundles);
      await recordCandidates(ctx, bundles, undefined, say, ['record', 'publish']);
      if (!ctx.dryRun) await pushHistory(ctx.store, stateDir, ctx.target.name);
    }

    // k candidates' code ran in this one job: one run unsandboxed here could have touched every bundle.
    const unsandboxedHere = bundles.some((b) => ranUnsandboxedIn(ctx.job, b.load()));
    const candidates = bundles.map((b, s): PhaseResult => {
      const evidence = b.load();
      const attestation = attestBundle(b, evidence, phase, !unsandboxedHere);
      writeLocalAttestation(trustFiles[s]!, attestation);
      return { phase, evidence, bundleDir: b.dir, stateDir, attestation };
    });
    const lead = candidates[bundles.indexOf(leadBundle(bundles))]!;
    return { phase, candidates, lead };
  } finally {
    await close();
  }
}

/**
 * A candidate goes on to its accelerator gate and the screen only with a CPU gate pass the select job
 * believes (attested by its gate job). Without one — the gate job failed, or the bundle changed after
 * it — it could not be promoted anyway, and a screen it won would spend the search's one full
 * comparison on it: it ends in `error` here.
 */
function requireBelievedCpuPass(b: Bundle, dryRun: boolean): void {
  const ev = b.load();
  if (ev.verdict !== undefined || dryRun || ev.gates.cpu?.status === 'passed') return;
  ev.verdict = 'error';
  ev.verdictReasons = [
    "its CPU gate's pass did not reach the select job under an attestation (the gate job failed, or the bundle was changed after it)",
  ];
  ev.stoppedAt = 'cpu-gate';
  b.save(ev);
}

/**
 * The attestations of a search's candidates by slot, from a JSON object keyed `attestation-c<slot>`
 * (values: an attestation's JSON, or empty). Anything else in it is ignored.
 */
export function attestationsBySlot(text: string | undefined): Map<number, Attestation> {
  const bySlot = new Map<number, Attestation>();
  if (text === undefined || text.trim() === '') return bySlot;
  let outputs: unknown;
  try {
    outputs = JSON.parse(text);
  } catch {
    outputs = undefined;
  }
  if (typeof outputs !== 'object' || outputs === null || Array.isArray(outputs)) {
    throw new HillclimbError('attestations: not a JSON object of job outputs', {
      hint: 'pass toJSON(needs.<job>.outputs) of the job that made the bundles, unchanged',
      exitCode: ExitCode.badInput,
    });
  }
  for (const [key, value] of Object.entries(outputs as Record<string, unknown>)) {
    const m = /^attestation-c([1-9][0-9]?)$/.exec(key);
    if (!m || typeof value !== 'string' || value === '') continue;
    bySlot.set(Number(m[1]), parseAttestation(value, `attestations: ${key}`));
  }
  return bySlot;
}

/**
 * At publish, a candidate without an attested search record (the select job never ran, or its bundle
 * was changed after) is a loser: it opens no PR. With no record at all, the table is built from what
 * every candidate's bundle says, and no candidate won.
 */
function settleUnselected(ctx: Parameters<typeof recordSearch>[0], bundles: readonly Bundle[]): void {
  const decided = bundles.map((b) => b.load().search).find((s) => s !== undefined);
  if (!decided) {
    const threshold = 1 + (ctx.config.search.screen_bar ?? ctx.config.measure.practical_delta);
    recordSearch(ctx, bundles, null, threshold);
    return;
  }
  // The winner's own record must be believed too; without it no candidate won (nothing is promoted),
  // and the table is written again from what each bundle now says, so that it does not say otherwise.
  if (!bundles.some((b) => b.load().search?.role === 'winner')) {
    recordSearch(ctx, bundles, null, decided.threshold, decided.measured ?? []);
    return;
  }
  for (const b of bundles) {
    const ev = b.load();
    if (ev.search) continue;
    ev.search = { ...decided, role: 'loser' };
    b.save(ev);
  }
}
