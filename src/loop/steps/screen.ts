/**
 * screen: one candidate of an iteration that proposed several (loop.candidates > 1), timed against the
 * champion in one short verifier session of `search.screen_rounds` paired rounds (on one machine, the
 * candidates share sessions, and the race gives the contenders more: src/search/race.ts) — the same verifier,
 * programs and checks as the full comparison (./measure.ts), only fewer rounds. The rounds go to
 * `ev.screen`, never to `ev.measurement`: they rank the candidates (src/search/selection.ts), and the
 * winner's full comparison starts from fresh rounds, so no screening round is ever its evidence (the
 * best of k noisy screens is biased upward; docs/search.md).
 *
 * A candidate whose programs fail verification here is `invalid`; byte-identical programs are `no-op`;
 * a champion that fails is an infrastructure failure, as in measure.
 */
import { cpSync, existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { metricValue, type ScreenEvidence, type ScreenSession } from '../../evidence/index.js';
import { errorMessage } from '../../util/index.js';
import { iterationDirName } from '../state/bundle.js';
import { Interrupted } from './failures.js';
import { type ArmPrograms, armPrograms, candidateVerdict, pairedSession } from './measure.js';
import {
  iterationDraw,
  type Platform,
  ProgramFiles,
  runVerifier,
  timedCalls,
  type VerifierRun,
} from './programs.js';
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
  const session = {
    sessionFile: ProgramFiles.session(name),
    logFile: ProgramFiles.verifyLog(name),
    rounds,
    startedAt,
    durationMs: run.durationMs,
  };
  ev.screen = firstScreen(session, values('A'), values('B'));
  env.save();
  return undefined;
}

/** A candidate's screen from its first session, not ranked yet. */
export function firstScreen(session: ScreenSession, a: number[], b: number[]): ScreenEvidence {
  const { sessionFile, logFile, startedAt, durationMs } = session;
  return {
    rounds: a.length,
    a,
    b,
    estimate: null,
    survived: false,
    reason: 'not ranked yet',
    sessionFile,
    logFile,
    startedAt,
    durationMs,
    sessions: [session],
  };
}

/** A candidate's screen with the rounds of one more session of the race appended. */
export function appendScreen(
  screen: ScreenEvidence,
  session: ScreenSession,
  a: readonly number[],
  b: readonly number[],
): ScreenEvidence {
  const first: ScreenSession = {
    sessionFile: screen.sessionFile,
    logFile: screen.logFile,
    rounds: screen.rounds,
    startedAt: screen.startedAt,
    durationMs: screen.durationMs,
  };
  return {
    ...screen,
    rounds: screen.rounds + a.length,
    a: [...screen.a, ...a],
    b: [...screen.b, ...b],
    durationMs: screen.durationMs + session.durationMs,
    sessions: [...(screen.sessions ?? [first]), session],
  };
}

/** One candidate's rounds of a shared screening session: champion (a) and candidate (b). */
export interface SharedRounds {
  session: ScreenSession;
  a: number[];
  b: number[];
  /** The slots timed in the session (ScreenEvidence.sharedWith). */
  sharedWith: number[];
}

/** What one candidate's part of a shared screening session came to. */
export type SharedScreen = { ended: StepResult } | { screened: SharedRounds } | { alone: string };

/**
 * Screen several candidates in one verifier session (search.shared_screen): the champion and every
 * candidate timed call by call, round by round, so the session's overhead — a process, loading and
 * verifying every arm's programs — is paid once instead of once per candidate (`npm run bench:search`:
 * at the overhead the sessions really cost, 1.52× a lineage's gain per accelerator-hour at k = 3
 * against 1.12× with a session per candidate). Each candidate is held to the checks of its own session
 * (pairedSession): its verification, its programs against the ones its gate verified, byte-identical
 * programs `no-op`. Whatever the shared session cannot pin on one candidate (the session failing as a
 * whole, a champion that fails) sends every candidate it concerns to a session of its own: `alone`.
 * The rounds come back per candidate (`screened`); the caller writes them into the records: a first
 * session's as the screen, a later session's of the race appended (src/loop/drivers/search.ts).
 */
export async function screenTogether(
  envs: readonly StepEnv[],
  platform: Platform,
  session: SharedSessionPlan = {},
): Promise<Map<StepEnv, SharedScreen>> {
  const out = new Map<StepEnv, SharedScreen>();
  const live: Array<{ env: StepEnv; arm: string; programs: ArmPrograms }> = [];
  for (const env of envs) {
    try {
      const programs = await armPrograms(env, platform);
      if ('verdict' in programs) out.set(env, { ended: programs.verdict });
      else live.push({ env, arm: `C${env.ev.slot!.index}`, programs });
    } catch (e) {
      // A session of its own retries what failed here, and names it.
      if (e instanceof Interrupted) throw e;
      out.set(env, { alone: `its programs: ${errorMessage(e)}` });
    }
  }
  if (live.length < 2) {
    for (const { env } of live) out.set(env, { alone: 'one candidate left to screen' });
    return out;
  }
  const lead = live[0]!.env;
  const { ctx } = lead;
  const rounds = session.rounds ?? ctx.config.search.screen_rounds;
  const n = session.number ?? 1;
  const name = `screen-${iterationDirName(lead.ev)}-shared${n === 1 ? '' : `-${n}`}`;
  const sessionFile = ProgramFiles.session(name);
  const logFile = ProgramFiles.verifyLog(name);
  ctx.progress(
    `screen: ${rounds} round${rounds === 1 ? '' : 's'} of the champion and ${live.length} candidates in one verifier session` +
      (n === 1 ? '' : ` (session ${n} of the race)`),
  );
  const startedAt = new Date().toISOString();
  let run: VerifierRun;
  try {
    run = await runVerifier(ctx, lead.ev, {
      mode: 'measure',
      platform,
      draw: iterationDraw(lead.ev),
      arms: ['A', ...live.map((l) => l.arm)],
      rounds,
      ...timedCalls(ctx),
      backend: ctx.backend,
      harness: lead.ev.base.commit,
      programs: Object.fromEntries([['A', live[0]!.programs.A], ...live.map((l) => [l.arm, l.programs.B])]),
      sessionFile: lead.bundle.path(sessionFile),
      logFile: lead.bundle.path(logFile),
      name,
      step: 'measure',
    });
  } catch (e) {
    if (e instanceof Interrupted) throw e;
    for (const { env } of live)
      out.set(env, { alone: `the shared screening session failed: ${errorMessage(e)}` });
    return out;
  }
  const s = run.session;
  const champion = s.arms.A;
  if (!champion || champion.failure) {
    for (const { env } of live)
      out.set(env, { alone: "the champion's programs failed in the shared session" });
    return out;
  }
  const path = ctx.target.bench.metric.path;
  const values = (arm: string) =>
    s.rounds.map((round) => {
      try {
        return metricValue(round.metrics[arm]!, path, sessionFile);
      } catch {
        return Number.NaN;
      }
    });
  const timed = live.filter(
    ({ arm }) => s.arms[arm] && !s.arms[arm]!.failure && !s.sameAsFirst.includes(arm),
  );
  const sharedWith = timed.map((l) => l.env.ev.slot!.index);
  for (const { env, arm, programs } of live) {
    const mine = s.arms[arm];
    if (!mine) {
      out.set(env, { alone: `the shared session lacks arm ${arm}` });
      continue;
    }
    // The evidence stays whole in every candidate's bundle: the session and its log, copied.
    if (env !== lead) {
      for (const f of [sessionFile, logFile]) {
        mkdirSync(dirname(env.bundle.path(f)), { recursive: true });
        if (existsSync(lead.bundle.path(f))) cpSync(lead.bundle.path(f), env.bundle.path(f));
      }
    }
    if (mine.failure) {
      // Every arm runs in one process here: another candidate's programs (their memory, a stray write)
      // can make this one fail. Only a session of its own may call it invalid.
      out.set(env, { alone: `its programs failed in the shared session: ${mine.failure.slice(0, 300)}` });
      continue;
    }
    const ended = candidateVerdict(mine, s.sameAsFirst.includes(arm), programs, 'screened');
    if (ended) {
      out.set(env, { ended });
      continue;
    }
    if (s.rounds.length !== rounds) {
      // Timing ended early (another arm's timed output differed from what it verified): time it alone.
      out.set(env, { alone: `the shared session timed ${s.rounds.length} of ${rounds} rounds` });
      continue;
    }
    out.set(env, {
      screened: {
        session: { sessionFile, logFile, rounds, startedAt, durationMs: run.durationMs },
        a: values('A'),
        b: values(arm),
        sharedWith,
      },
    });
  }
  return out;
}

/** Which shared session of the screen: the first (search.screen_rounds) or a later one of the race. */
export interface SharedSessionPlan {
  /** 1 for the first; the race's later sessions count on (they name the session file). */
  number?: number;
  /** Absent: search.screen_rounds. */
  rounds?: number;
}
