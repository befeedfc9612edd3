/**
 * screen: one candidate of an iteration that proposed several (loop.candidates > 1), timed against the
 * champion in one short verifier session of `search.screen_rounds` paired rounds — the same verifier,
 * programs and checks as the full comparison (./measure.ts), only fewer rounds. The rounds go to
 * `ev.screen`, never to `ev.measurement`: they rank the candidates (src/search/selection.ts), and the
 * winner's full comparison starts from fresh rounds, so no screening round is ever its evidence (the
 * best of k noisy screens is biased upward; docs/search.md).
 *
 * A candidate whose programs fail verification here is `invalid`; byte-identical programs are `no-op`;
 * a champion that fails is an infrastructure failure, as in measure.
 */
import { metricValue } from '../../evidence/index.js';
import { iterationDirName } from '../state/bundle.js';
import { InfraFailure } from './failures.js';
import { armPrograms } from './measure.js';
import {
  iterationDraw,
  oneAtATime,
  type Platform,
  ProgramFiles,
  runVerifier,
  VerifierFailed,
} from './programs.js';
import type { StepEnv, StepResult } from './step.js';

/**
 * Screen one candidate; resolves to a verdict when the session ends it, else undefined with
 * `ev.screen` holding both arms' values per round (`estimate`, `survived` and `reason` are the
 * ranking's, filled in by the caller once every candidate is screened).
 */
export async function screenCandidate(env: StepEnv, platform: Platform): Promise<StepResult | undefined> {
  const { ctx, ev, bundle } = env;
  const rounds = ctx.config.search.screen_rounds;
  const programs = await oneAtATime(() => armPrograms(env, platform));
  if ('verdict' in programs) return programs.verdict;
  const invalid = (reason: string): StepResult => ({
    status: 'verdict',
    verdict: 'invalid',
    reasons: [reason],
  });
  const name = `screen-${iterationDirName(ev)}`;
  ctx.progress(`screen: ${rounds} round(s) against the champion`);
  let run: Awaited<ReturnType<typeof runVerifier>>;
  const startedAt = new Date().toISOString();
  try {
    run = await runVerifier(ctx, ev, {
      mode: 'measure',
      platform,
      draw: iterationDraw(ev),
      arms: ['A', 'B'],
      rounds,
      repeats: ctx.target.bench.repeats,
      warmup: ctx.target.bench.warmup,
      backend: ctx.backend,
      harness: ev.base.commit,
      programs: { A: programs.A, B: programs.B },
      sessionFile: bundle.path(ProgramFiles.session(name)),
      logFile: bundle.path(ProgramFiles.verifyLog(name)),
      name,
      step: 'measure',
    });
  } catch (e) {
    if (e instanceof VerifierFailed) return invalid(`screen: ${e.message}`);
    throw e;
  }
  const s = run.session;
  const a = s.arms.A;
  const b = s.arms.B;
  if (!a || !b) throw new InfraFailure(`${ProgramFiles.session(name)}: the session lacks an arm`);
  if (b.failure) return invalid(`the candidate's programs failed verification: ${b.failure}`);
  if (a.failure) {
    throw new InfraFailure(`the champion's programs failed verification: ${a.failure}`, {
      hint: `see the session log in the bundle (${ProgramFiles.verifyLog(name)})`,
    });
  }
  if (s.identical) {
    return {
      status: 'verdict',
      verdict: 'no-op',
      reasons: ["the candidate's programs are identical to the champion's (same sha256)"],
    };
  }
  const forged = Object.entries(b.programs).filter(
    ([key, hash]) => programs.verifiedByGate?.[key] !== undefined && programs.verifiedByGate[key] !== hash,
  );
  if (forged.length > 0) {
    return invalid(
      `the programs screened are not the ones the gate verified: ${forged.map(([k]) => k).join(', ')}`,
    );
  }
  if (s.rounds.length !== rounds) {
    throw new InfraFailure(`${ProgramFiles.session(name)}: ${s.rounds.length} rounds, asked for ${rounds}`);
  }
  // A value that is missing or not a number is NaN: the ranking drops that candidate as unusable.
  const path = ctx.target.bench.metric.path;
  const values = (arm: 'A' | 'B') =>
    s.rounds.map((round) => {
      try {
        return metricValue(round.metrics[arm]!, path, ProgramFiles.session(name));
      } catch {
        return Number.NaN;
      }
    });
  ev.screen = {
    rounds,
    a: values('A'),
    b: values('B'),
    estimate: null,
    survived: false,
    reason: 'not ranked yet',
    sessionFile: ProgramFiles.session(name),
    logFile: ProgramFiles.verifyLog(name),
    startedAt,
    durationMs: run.durationMs,
  };
  env.save();
  return undefined;
}
