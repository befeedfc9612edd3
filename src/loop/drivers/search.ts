/**
 * An iteration that proposes several candidates (loop.candidates = k > 1; docs/search.md). Each
 * candidate is a record of its own — bundle `i003-c2`, branch `…/i003-c2`, its own agent run, sandbox,
 * clone and worktree — and goes through guard and gates as a single candidate would. Every survivor is
 * then screened against the champion in a short verifier session (steps/screen.ts); the best survivor
 * above the screen's bar alone gets the full comparison (measure, profile, decide) on fresh rounds, so
 * its verdict and the effect its PR reports owe nothing to the screen that picked it
 * (src/search/selection.ts). Every candidate is recorded (history row, log entry, stored bundle); only
 * the winner opens a PR, whose comment lists them all.
 */
import { join } from 'node:path';
import type {
  IterationEvidence,
  ScreenEvidence,
  SearchCandidateRow,
  SearchEvidence,
  StepName,
} from '../../evidence/index.js';
import { type ScreenPolicy, type ScreenResult, screenCandidates } from '../../search/index.js';
import type { Direction } from '../../stats/index.js';
import { errorMessage } from '../../util/index.js';
import type { LoopContext } from '../context.js';
import { Bundle, iterationDirName } from '../state/bundle.js';
import type { Journal } from '../state/journal.js';
import { Interrupted } from '../steps/failures.js';
import { type NewIteration, newEvidence, runIterationSteps, withInfraRetries } from '../steps/iteration.js';
import {
  appendScreen,
  firstScreen,
  type SharedRounds,
  screenCandidate,
  screenTogether,
} from '../steps/screen.js';

/** The steps every candidate goes through after its agent and before the screen. */
const AFTER_PROPOSE: readonly StepName[] = ['guard', 'cpu-gate', 'accelerator-gate'];

/**
 * `work` for every item, at most `limit` at once. Every one runs to its end before a failure is thrown
 * (none is left running behind a loop that has moved on); then the failure of the first item in order.
 */
export async function allSettledInTurn<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<unknown>,
): Promise<void> {
  const failures = new Map<number, unknown>();
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      await work(items[i]!).catch((e: unknown) => failures.set(i, e));
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
  if (failures.size > 0) throw failures.get(Math.min(...failures.keys()));
}

/** The full comparison, which only the winner gets. */
const FULL_COMPARISON: readonly StepName[] = ['measure', 'profile', 'decide'];

/**
 * Whether the winner's full comparison ended before it said anything about the change's effect, so the
 * next-best survivor of the screen is measured in full instead: `invalid`, `error` or `no-op` before
 * the first look of the sequential rule (programs that fail verification or are not the ones the gate
 * verified, identical programs, infrastructure that failed before any comparison). Anything after a
 * look is an answer — `no-change`, `regressed`, a failure in a later session, a profile that failed
 * after the comparison — and ends the search: falling through then would give a candidate that was not
 * accepted at a look a second chance through another one, and raise the false accepts above one
 * comparison's. `needs-human` is an answer too: it gets the PR, and a person looks.
 */
export function fallsThrough(ev: Pick<IterationEvidence, 'verdict' | 'measurement'>): boolean {
  const beforeAnyLook = (ev.measurement?.looks.length ?? 0) === 0 && !ev.measurement?.comparison;
  return (ev.verdict === 'invalid' || ev.verdict === 'error' || ev.verdict === 'no-op') && beforeAnyLook;
}

/** The k candidates' bundles of iteration `i`, slot 1 first. */
export function candidateBundles(runDir: string, iteration: number, k: number): Bundle[] {
  return Array.from(
    { length: k },
    (_, s) => new Bundle(join(runDir, iterationDirName({ iteration, slot: { index: s + 1 } }))),
  );
}

/** A search iteration is finished when every candidate has been published (or tried to be). */
export function searchFinished(bundles: readonly Bundle[]): boolean {
  return bundles.every((b) => b.exists() && b.load().steps.publish !== undefined);
}

/**
 * The candidate that speaks for the iteration (its verdict decides the champion, the stop rule reads
 * it): the winner, else the best-ranked screened one, else the first that got furthest.
 */
export function leadBundle(bundles: readonly Bundle[]): Bundle {
  const loaded = bundles.filter((b) => b.exists()).map((b) => ({ b, ev: b.load() }));
  const winner = loaded.find(({ ev }) => ev.search?.role === 'winner');
  if (winner) return winner.b;
  const screened = loaded
    .filter(({ ev }) => ev.screen?.estimate != null)
    .sort((x, y) => (y.ev.screen!.estimate ?? 0) - (x.ev.screen!.estimate ?? 0));
  return screened[0]?.b ?? loaded.find(({ ev }) => ev.candidate)?.b ?? bundles[0]!;
}

/**
 * Run (or resume) iteration `it.iteration` as a search over `loop.candidates` candidates; returns the
 * candidates' bundles. `progress` prefixes each line with the candidate's name.
 */
export async function runSearchIteration(
  ctx: LoopContext,
  journal: Journal,
  it: NewIteration,
  progressOut: (line: string) => void,
): Promise<Bundle[]> {
  const k = ctx.config.loop.candidates;
  const bundles = candidateBundles(ctx.runDir, it.iteration, k);
  const say = (b: Bundle) => (line: string) =>
    progressOut(`[${b.dir.split('/').pop()} ${ctx.target.name}] ${line}`);
  bundles.forEach((b, s) => {
    if (!b.exists()) b.save({ ...newEvidence(ctx, it), slot: { index: s + 1, of: k } });
  });

  // The prompts one after another (the first may profile the champion; the others reuse it), then the
  // agents side by side, search.parallel_proposals at a time (they mostly wait on their model API; each
  // works in its own clone and sandbox), then guards and gates in slot order: the gates use the cores,
  // and the guard's in-search novelty check looks at the lower slots.
  for (const b of bundles)
    await runIterationSteps({ ...ctx, progress: say(b) }, b, journal, { only: ['prepare'] });
  await allSettledInTurn(bundles, ctx.config.search.parallel_proposals, (b) =>
    runIterationSteps({ ...ctx, progress: say(b) }, b, journal, { only: ['propose'] }),
  );
  for (const b of bundles) {
    ctx.progress = say(b);
    await runIterationSteps(ctx, b, journal, { only: AFTER_PROPOSE });
  }

  // Every record carries the outcome once the selection is complete; an interrupted one is redone
  // from the screens already measured.
  if (!bundles.every((b) => b.load().search)) {
    ctx.progress = (line) => progressOut(`[${iterationDirName(it.iteration)} ${ctx.target.name}] ${line}`);
    await screenAndSelect(ctx, bundles, journal, say);
  }

  await measureInFull(ctx, bundles, journal, say);
  await recordCandidates(ctx, bundles, journal, say);
  return bundles;
}

/**
 * Record and publish every candidate: losers first, the winner last (the iteration's last history row
 * is the one that decided it), so every loser's entry already names the winner's verdict. `only`
 * limits the steps (the workflow's publish job runs record and publish only).
 */
export async function recordCandidates(
  ctx: LoopContext,
  bundles: readonly Bundle[],
  journal: Journal | undefined,
  say: (b: Bundle) => (line: string) => void,
  only?: readonly StepName[],
): Promise<void> {
  const roles = new Map(bundles.map((b) => [b, b.load().search?.role]));
  const ordered = [...bundles].sort(
    (x, y) => Number(roles.get(x) === 'winner') - Number(roles.get(y) === 'winner'),
  );
  for (const b of ordered) {
    ctx.progress = say(b);
    // A dry run's losers would never be measured: they print only what recording them would do.
    const loser = roles.get(b) === 'loser';
    const steps = ctx.dryRun && loser ? (['record', 'publish'] as const) : only;
    await runIterationSteps(ctx, b, journal, steps ? { only: steps } : {});
  }
}

/**
 * Screen every candidate that passed its gates, rank them (src/search), and write the outcome into
 * every candidate's record: the winner goes on to the full comparison, the others are `screened-out`.
 */
export async function screenAndSelect(
  ctx: LoopContext,
  bundles: readonly Bundle[],
  journal: Journal | undefined,
  say: (b: Bundle) => (line: string) => void,
): Promise<void> {
  const info = ctx.backend.info();
  const threshold = 1 + (ctx.config.search.screen_bar ?? ctx.config.measure.practical_delta);
  // Candidates still in the race: no verdict from a gate; one screened out before an interruption
  // is ranked again with the others (its screen is kept, its verdict was the ranking's).
  const survivors = bundles.filter((b) => {
    const ev = b.load();
    if (ev.verdict === 'screened-out' && ev.screen) {
      clearVerdict(ev);
      b.save(ev);
    }
    return ev.verdict === undefined;
  });
  if (ctx.dryRun) {
    // A dry run times nothing: the first survivor stands in for the winner, so its remaining steps
    // print their commands too.
    ctx.progress('dry run: the screen would time each candidate that passed its gates against the champion');
    recordSearch(ctx, bundles, survivors[0] ? survivors[0].load().slot!.index : null, threshold);
    return;
  }
  // Screened before an interruption: kept. The rest run `parallelJobs` at a time (a backend with several
  // machines gives each screen its own), else one after another (one machine: they would share cores).
  const todo = survivors.filter((b) => !b.load().screen);
  const screenOne = async (b: Bundle) => {
    const ev = b.load();
    const line = say(b);
    const env = { ctx: { ...ctx, progress: line }, bundle: b, ev, save: () => b.save(ev) };
    const ended = await screenOnce(env.ctx, env, info.platform, journal);
    if (ended) {
      ev.verdict = ended.verdict;
      ev.verdictReasons = ended.reasons;
      ev.stoppedAt = 'measure';
      b.save(ev);
      line(`screen → ${ended.verdict}: ${ended.reasons[0] ?? ''}`);
    }
  };
  const parallel = Math.max(1, info.parallelJobs ?? 1);
  // One machine: the champion and every candidate in one session (one overhead, not one per candidate);
  // a candidate it cannot screen fairly goes on to a session of its own below.
  const alone =
    parallel === 1 && ctx.config.search.shared_screen && todo.length >= 2
      ? await screenShared(ctx, todo, info.platform, say)
      : todo;
  for (let i = 0; i < alone.length; i += parallel) {
    await Promise.all(alone.slice(i, i + parallel).map(screenOne));
  }

  // On one machine with shared screens the ranking is a race: while it asks for more rounds, the
  // champion and the contenders get another shared session (src/search/race.ts).
  const races = parallel === 1 && ctx.config.search.shared_screen;
  const policy: ScreenPolicy = {
    rounds: ctx.config.search.screen_rounds,
    maxRounds: races ? ctx.config.search.screen_max_rounds : ctx.config.search.screen_rounds,
    bar: threshold - 1,
  };
  let screened: Array<{ b: Bundle; ev: IterationEvidence }>;
  let result: ScreenResult;
  let cutShort: string | undefined;
  // The candidates ranked: screened, and not ended by a later session of the race (a verdict recorded).
  const ranked = () =>
    survivors.map((b) => ({ b, ev: b.load() })).filter(({ ev }) => ev.screen && ev.verdict === undefined);
  for (;;) {
    screened = ranked();
    const ended = screened.map(({ ev }) => ev.screen!.raceCutShort).find((c) => c !== undefined);
    if (ended) {
      policy.maxRounds = ended.rounds;
      cutShort = ended.reason;
    }
    const cut = cutPartialSession(screened);
    if (cut.length > 0) {
      for (const { b, ev } of cut) b.save(ev);
      const slots = cut.map(({ ev }) => ev.slot!.index).join(', ');
      ctx.progress(
        `screen: the race's last session was recorded for candidate(s) ${slots} only before the run stopped: cut, and run again for every contender`,
      );
    }
    result = rankScreens(screened, ctx.target.bench.metric.direction, policy);
    if (!result.next) break;
    const contenders = screened.filter(({ ev }) => result.next!.ids.includes(String(ev.slot!.index)));
    // Numbered after the sessions already in the records, so that a resumed race writes new files.
    const number = 1 + Math.max(...contenders.map(({ ev }) => ev.screen!.sessions?.length ?? 1));
    const stopped = await raceSession(ctx, contenders, result.next.rounds, info.platform, say, number);
    const invalid = contenders.filter(({ ev }) => ev.verdict !== undefined);
    if (stopped === null && invalid.length > 0) {
      // A contender found invalid leaves the race, and so does the race: ranked again without it, a
      // candidate it had dropped would come back short of sessions. It ends on the rounds every
      // candidate still ranked has, and says why (kept in the records for a resumed search).
      const rest = ranked();
      const rounds = Math.min(...rest.map(({ ev }) => ev.screen!.rounds));
      const reason = `candidate ${invalid.map(({ ev }) => ev.slot!.index).join(', ')} ended ${invalid[0]!.ev.verdict} in session ${number}`;
      for (const { b, ev } of rest) {
        ev.screen = { ...ev.screen!, raceCutShort: { rounds, reason } };
        b.save(ev);
      }
      ctx.progress(`screen: the race ends after ${rounds} rounds: ${reason}`);
      continue;
    }
    if (stopped !== null) {
      // The race ends on the rounds every contender has: the leader is chosen on its estimate.
      const have = Math.min(...contenders.map(({ ev }) => ev.screen!.rounds));
      ctx.progress(`screen: the race ends after ${have} rounds: ${stopped}`);
      policy.maxRounds = have;
      cutShort = stopped;
    }
  }
  const winner = result.winner === null ? null : Number(result.winner);
  const winnerEstimate = result.ranked[0]?.estimate ?? null;
  for (const { b, ev } of screened) {
    const ranked = result.ranked.find((r) => r.id === String(ev.slot!.index))!;
    const { droppedBy: _was, ...screen } = ev.screen!;
    const by = ranked.droppedBy;
    ev.screen = {
      ...screen,
      estimate: ranked.estimate,
      interval: ranked.interval,
      ...(by ? { droppedBy: by.kind === 'behind' ? { kind: by.kind, leader: Number(by.leader) } : by } : {}),
      survived: ranked.survived,
      reason: ranked.reason,
    };
    if (ev.slot!.index !== winner) {
      ev.verdict = 'screened-out';
      ev.verdictReasons = [
        ranked.survived && winner !== null
          ? `${ranked.reason}, behind candidate ${winner}'s ${winnerEstimate?.toFixed(4)}`
          : ranked.reason,
      ];
      ev.stoppedAt = 'measure';
    }
    b.save(ev);
  }

  const race =
    result.ending === null
      ? undefined
      : {
          ending: result.ending,
          confidence: result.confidence,
          maxRounds: policy.maxRounds ?? policy.rounds,
          ...(cutShort ? { cutShort } : {}),
        };
  recordSearch(ctx, bundles, winner, threshold, undefined, race);
  ctx.progress(
    winner === null
      ? `search: no candidate of ${bundles.length} survived its gates and the screen`
      : `search: candidate ${winner} of ${bundles.length} goes on to the full comparison (fresh rounds)`,
  );
}

/**
 * The winner's full comparison (measure, profile, decide on fresh rounds). When it ends before saying
 * anything about the change's effect (fallsThrough), the next-best survivor of the screen takes its
 * place and is measured in full, until one gives an answer or none is left. Every step is resumable: a
 * promotion is written into every record (the new winner's first) before its comparison starts.
 */
export async function measureInFull(
  ctx: LoopContext,
  bundles: readonly Bundle[],
  journal: Journal | undefined,
  say: (b: Bundle) => (line: string) => void,
): Promise<void> {
  for (;;) {
    const winner = bundles.find((b) => b.load().search?.role === 'winner');
    if (!winner) return;
    const ev = winner.load();
    const search = ev.search!;
    const measured = search.measured ?? [ev.slot!.index];
    if (ev.verdict === 'screened-out') {
      // Promoted before an interruption: the verdict of its screen was still to be cleared.
      clearVerdict(ev);
      winner.save(ev);
    }
    ctx.progress = say(winner);
    const decided = await runIterationSteps(ctx, winner, journal, { only: FULL_COMPARISON });
    const next = fallsThrough(decided) ? nextSurvivor(bundles, measured) : undefined;
    if (!next) {
      // The table in every record now carries the winner's verdict.
      recordSearch(ctx, bundles, search.winner, search.threshold, measured);
      return;
    }
    const slot = next.load().slot!.index;
    ctx.progress(
      `search: candidate ${ev.slot!.index} ended ${decided.verdict} before its full comparison's first look, ` +
        `which says nothing about its effect; candidate ${slot}, next in the screen, is measured in full (fresh rounds)`,
    );
    recordSearch(ctx, bundles, slot, search.threshold, [...measured, slot]);
    const promoted = next.load();
    clearVerdict(promoted);
    next.save(promoted);
  }
}

/** The best-screened survivor not yet measured in full (it lost the screen only to those measured). */
function nextSurvivor(bundles: readonly Bundle[], measured: readonly number[]): Bundle | undefined {
  return bundles
    .map((b) => ({ b, ev: b.load() }))
    .filter(
      ({ ev }) =>
        ev.verdict === 'screened-out' && ev.screen?.survived === true && !measured.includes(ev.slot!.index),
    )
    .sort(
      (x, y) =>
        behindLeader(x.ev) - behindLeader(y.ev) ||
        (y.ev.screen!.estimate ?? 0) - (x.ev.screen!.estimate ?? 0),
    )[0]?.b;
}

/** 1 for a candidate the race's leader was separated from (ranked after the ones it kept), else 0. */
const behindLeader = (ev: IterationEvidence): number => Number(ev.screen?.droppedBy?.kind === 'behind');

function clearVerdict(ev: IterationEvidence): void {
  delete ev.verdict;
  ev.verdictReasons = [];
  delete ev.stoppedAt;
}

/** Write the search's outcome into every candidate's record: its role, the winner, the table. */
export function recordSearch(
  ctx: LoopContext,
  bundles: readonly Bundle[],
  winner: number | null,
  threshold: number,
  measured: readonly number[] = winner === null ? [] : [winner],
  race: SearchEvidence['race'] = bundles.map((b) => b.load().search?.race).find((r) => r !== undefined),
): void {
  const records = bundles.map((b) => ({ b, ev: b.load() }));
  const rows = records.map(({ ev }) => searchRow(ev, measured));
  // The winner's record first: a run killed half-way through then still has the new winner, and a
  // resumed measureInFull finds the old one ended and promotes the same candidate again.
  const isWinner = (ev: IterationEvidence) => ev.slot!.index === winner;
  records.sort((x, y) => Number(isWinner(y.ev)) - Number(isWinner(x.ev)));
  for (const { b, ev } of records) {
    ev.search = {
      role: isWinner(ev) ? 'winner' : 'loser',
      winner,
      measured: [...measured],
      threshold,
      screenRounds: ctx.config.search.screen_rounds,
      ...(race ? { race } : {}),
      candidates: rows,
    };
    b.save(ev);
  }
}

/**
 * One screening session, with the retries of a step (an infrastructure failure is retried with backoff
 * and its attempts are saved, so a resumed run goes on counting); one that outlasts them ends the
 * candidate in `error`. Anything else — a bug, a champion that fails on its own — stops the run, as it
 * would in the full comparison.
 */
/**
 * Screen `todo` in one shared verifier session (steps/screen.ts screenTogether); record the verdicts it
 * reached, and return the candidates it could not screen, each for a session of its own.
 */
async function screenShared(
  ctx: LoopContext,
  todo: readonly Bundle[],
  platform: Parameters<typeof screenTogether>[1],
  say: (b: Bundle) => (line: string) => void,
): Promise<Bundle[]> {
  const envs = todo.map((b) => {
    const ev = b.load();
    return { b, env: { ctx: { ...ctx, progress: say(b) }, bundle: b, ev, save: () => b.save(ev) } };
  });
  let outcomes: Awaited<ReturnType<typeof screenTogether>>;
  try {
    outcomes = await screenTogether(
      envs.map((e) => e.env),
      platform,
    );
  } catch (e) {
    if (e instanceof Interrupted) throw e;
    ctx.progress(`screen: the shared session could not run (${errorMessage(e)}): one session per candidate`);
    return [...todo];
  }
  const alone: Bundle[] = [];
  for (const { b, env } of envs) {
    const outcome = outcomes.get(env);
    if (!outcome || 'alone' in outcome) {
      if (outcome) say(b)(`screen: a session of its own (${outcome.alone})`);
      alone.push(b);
      continue;
    }
    if ('screened' in outcome) {
      const { session, a, b: values, sharedWith } = outcome.screened;
      env.ev.screen = { ...firstScreen(session, a, values), sharedWith };
      b.save(env.ev);
    } else if (outcome.ended.status === 'verdict') {
      env.ev.verdict = outcome.ended.verdict;
      env.ev.verdictReasons = outcome.ended.reasons;
      env.ev.stoppedAt = 'measure';
      b.save(env.ev);
      say(b)(`screen → ${outcome.ended.verdict}: ${outcome.ended.reasons[0] ?? ''}`);
    } else {
      alone.push(b);
    }
  }
  return alone;
}

async function screenOnce(
  ctx: LoopContext,
  env: Parameters<typeof screenCandidate>[0],
  platform: Parameters<typeof screenCandidate>[1],
  journal: Journal | undefined,
): Promise<{ verdict: NonNullable<IterationEvidence['verdict']>; reasons: string[] } | undefined> {
  const outcome = await withInfraRetries(ctx, 'screen', () => screenCandidate(env, platform), env, journal);
  if (outcome.kind === 'infra') {
    const attempts = outcome.attempts > 1 ? ` (${outcome.attempts} attempts)` : '';
    return { verdict: 'error', reasons: [`screen: ${outcome.message}${attempts}`] };
  }
  if (outcome.kind === 'dry-run') return undefined;
  const r = outcome.result;
  return r?.status === 'verdict' ? { verdict: r.verdict, reasons: r.reasons } : undefined;
}

/**
 * A race session written into some of its contenders' records and not the others' (the run was killed
 * between the saves, raceSession): the rounds would no longer pair round for round. The session records
 * the slots it timed; if one of them still ranked lacks it, it is cut from the ones that have it (their
 * records are changed in place; the caller saves them), and the race runs it again. Returns the
 * candidates it was cut from. (Records without the slots, written before them, are left as they are.)
 */
function cutPartialSession(
  screened: ReadonlyArray<{ b: Bundle; ev: IterationEvidence }>,
): Array<{ b: Bundle; ev: IterationEvidence }> {
  const count = (ev: IterationEvidence) => ev.screen!.sessions?.length ?? 1;
  const last = Math.max(0, ...screened.map(({ ev }) => count(ev)));
  if (last < 2) return [];
  const have = screened.filter(({ ev }) => count(ev) === last);
  const timed = have[0]!.ev.screen!.sessions!.at(-1)!.sharedWith;
  if (!timed) return [];
  const lacking = screened.filter(({ ev }) => timed.includes(ev.slot!.index) && count(ev) < last);
  if (lacking.length === 0) return [];
  for (const { ev } of have) ev.screen = dropLastSession(ev.screen!);
  return have;
}

/** A screen without its last session's rounds (a screen of one session is returned as it is). */
function dropLastSession(screen: ScreenEvidence): ScreenEvidence {
  const sessions = screen.sessions ?? [];
  const dropped = sessions.at(-1);
  if (sessions.length < 2 || !dropped) return screen;
  const rounds = screen.rounds - dropped.rounds;
  return {
    ...screen,
    rounds,
    a: screen.a.slice(0, rounds),
    b: screen.b.slice(0, rounds),
    durationMs: screen.durationMs - dropped.durationMs,
    sessions: sessions.slice(0, -1),
  };
}

/** The ranking (and the race's next step) over every candidate's screen so far. */
function rankScreens(
  screened: ReadonlyArray<{ ev: IterationEvidence }>,
  direction: Direction,
  policy: ScreenPolicy,
): ScreenResult {
  return screenCandidates(
    {
      champion: [],
      candidates: screened.map(({ ev }) => ({
        id: String(ev.slot!.index),
        values: ev.screen!.b.map(numberOrNaN),
        champion: ev.screen!.a.map(numberOrNaN),
      })),
    },
    direction,
    policy,
  );
}

/**
 * One more shared session of the race: the champion and the contenders for `rounds` rounds, appended
 * to every contender's screen — to all of them or to none, so that they stay paired round for round.
 * Resolves to null, or to why the race cannot go on (the session failed, or could not time every
 * contender as before): it then ends on the rounds it has.
 */
async function raceSession(
  ctx: LoopContext,
  contenders: ReadonlyArray<{ b: Bundle; ev: IterationEvidence }>,
  rounds: number,
  platform: Parameters<typeof screenTogether>[1],
  say: (b: Bundle) => (line: string) => void,
  number: number,
): Promise<string | null> {
  const envs = contenders.map(({ b, ev }) => ({
    b,
    env: { ctx: { ...ctx, progress: say(b) }, bundle: b, ev, save: () => b.save(ev) },
  }));
  let outcomes: Awaited<ReturnType<typeof screenTogether>>;
  try {
    outcomes = await screenTogether(
      envs.map((e) => e.env),
      platform,
      { number, rounds },
    );
  } catch (e) {
    if (e instanceof Interrupted) throw e;
    return `session ${number} could not run (${errorMessage(e)})`;
  }
  const parts = envs.map(({ b, env }) => ({ b, env, outcome: outcomes.get(env) }));
  // A verdict the session pins on one candidate (its programs are not the ones its gate verified)
  // ends that candidate: recorded, it leaves the race, and the others' rounds stay paired without it.
  for (const { b, env, outcome } of parts) {
    if (!outcome || !('ended' in outcome) || outcome.ended.status !== 'verdict') continue;
    env.ev.verdict = outcome.ended.verdict;
    env.ev.verdictReasons = outcome.ended.reasons;
    env.ev.stoppedAt = 'measure';
    b.save(env.ev);
    env.ctx.progress(
      `screen session ${number} → ${outcome.ended.verdict}: ${outcome.ended.reasons[0] ?? ''}`,
    );
  }
  const rest = parts.filter(({ env }) => env.ev.verdict === undefined);
  for (const { env, outcome } of rest) {
    if (!outcome || !('screened' in outcome)) {
      const why = !outcome ? 'no outcome' : 'alone' in outcome ? outcome.alone : outcome.ended.status;
      return `session ${number} did not time candidate ${env.ev.slot!.index} (${why})`;
    }
  }
  for (const { b, env, outcome } of rest) {
    const { session, a, b: values, sharedWith } = (outcome as { screened: SharedRounds }).screened;
    env.ev.screen = appendScreen(env.ev.screen!, { ...session, sharedWith }, a, values);
    b.save(env.ev);
  }
  return null;
}

/** A screening value as saved (JSON has no NaN: an unusable value comes back as null). */
function numberOrNaN(v: number | null): number {
  return typeof v === 'number' ? v : Number.NaN;
}

/**
 * One candidate as the search table shows it. A candidate that reached the screen and was not measured
 * in full stopped at the screen, whether it lost the ranking or its screening session ended it (no-op,
 * invalid, error: recorded as stopped at `measure`, the step the screen stands in for).
 */
function searchRow(ev: IterationEvidence, measured: readonly number[]): SearchCandidateRow {
  const stage: SearchCandidateRow['stage'] = measured.includes(ev.slot!.index)
    ? 'measure'
    : ev.screen || ev.stoppedAt === 'measure'
      ? 'screen'
      : (ev.stoppedAt ?? 'prepare');
  return {
    slot: ev.slot!.index,
    subject: ev.candidate?.subject ?? null,
    stage,
    verdict: ev.verdict ?? null,
    estimate: ev.screen?.estimate ?? null,
    ...(ev.screen ? { interval: ev.screen.interval ?? null, rounds: ev.screen.rounds } : {}),
    ...(ev.screen?.droppedBy ? { dropped: ev.screen.droppedBy.kind } : {}),
    reason: ev.verdictReasons[0] ?? ev.screen?.reason ?? '',
  };
}
