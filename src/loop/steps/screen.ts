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
import { armPrograms, pairedSession } from './measure.js';
import type { Platform } from './programs.js';
import { ProgramFiles } from './programs.js';
import type { StepEnv, StepResult } from './step.js';

/**
 * Screen one candidate; resolves to a verdict when the session ends it, else undefined with
 * `ev.screen` holding both arms' values per round (`estimate`, `survived` and `reason` are the
 * ranking's, filled in by the caller once every candidate is screened).
 */
export async function screenCandidate(env: StepEnv, platform: Platform): Promise<StepResult | undefined> {
  const { ctx, ev } = env;
  const rounds = ctx.config.search.screen_rounds;
  // Screens may run at once (a backend with several machines): armPrograms queues its own git work and
  // makes the champion's programs once.
  const programs = await armPrograms(env, platform);
  if ('verdict' in programs) return programs.verdict;
  const name = `screen-${iterationDirName(ev)}`;
  ctx.progress(`screen: ${rounds} paired round${rounds === 1 ? '' : 's'} against the champion`);
  const startedAt = new Date().toISOString();
  const checked = await pairedSession(env, platform, programs, { name, rounds, what: 'screened' });
  if ('verdict' in checked) return checked.verdict;
  const { run } = checked;
  const s = run.session;
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
