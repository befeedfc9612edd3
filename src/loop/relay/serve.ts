/**
 * The credentialed end of the tools relay: a job that holds the measuring machine (TPU VM, Ray) while
 * the run's propose jobs work, and answers their agents' tools with verifier sessions there.
 *
 * It takes from a request only what a verifier session needs and nothing it would run: the command
 * must be the verifier's, word for word as this job's own config builds it (parseVerifyCommand), and
 * the job it runs is rebuilt from the parsed options on the harness's commit this job was given, with
 * the request's programs (plain files, within limits) as the arms. Programs are data, as between the
 * gate and measure jobs; no candidate code runs here. The budget is this job's own count — the
 * iteration's `agent.tools` calls (two sessions each: a tool may need the champion's too) and machine
 * seconds over all its propose jobs — whatever the clients say they spent.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RelayStore } from '../../compute/index.js';
import { errorMessage, type Logger, readPlainFile } from '../../util/index.js';
import { type LoopContext, realSleep } from '../context.js';
import { type Platform, parseVerifyCommand, verifierJob } from '../steps/programs.js';
import {
  answerName,
  closedName,
  LOG_TAIL_BYTES,
  listPatiently,
  parseName,
  publishMarker,
  RELAY_VERSION,
  REQUEST_LIMITS,
  type RelayAnswer,
  readRequest,
  relayPrefix,
  requestName,
  servingName,
} from './protocol.js';

export interface ServeOptions {
  /** An opened context whose backend is the measuring machine. */
  ctx: LoopContext;
  store: RelayStore;
  /** The harness's commit: the champion the propose jobs started from. */
  harness: string;
  iteration: number;
  /** The clients to serve (`main`, or c1 … ck): the serving ends once each has said it is done. */
  clients: readonly string[];
  /** Stop at this time (epoch ms) even if a client never said it was done. */
  deadline: number;
  pollMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

export interface ServeReport {
  served: number;
  refused: number;
  /** Machine seconds the served sessions took. */
  seconds: number;
  /** Why the serving ended. */
  ended: 'done' | 'deadline' | 'cancelled';
}

/** Answers one client may get beyond its sessions (refusals): more of its requests go unanswered. */
const EXTRA_ANSWERS = 8;

/** Serve the run's tools relay until every client is done, the deadline passes or the run is cancelled. */
export async function serveToolsRelay(o: ServeOptions): Promise<ServeReport> {
  const { ctx, store } = o;
  const pollMs = o.pollMs ?? 5_000;
  const sleep = o.sleep ?? realSleep;
  const cfg = ctx.config.agent.tools;
  // Each propose job's share, as its own journal counts it (a search's candidates split the budget):
  // one candidate's agent cannot spend its rivals' sessions.
  const k = Math.max(1, o.clients.length);
  const share = {
    sessions: 2 * Math.floor(cfg.max_calls / k),
    ms: Math.floor(cfg.max_seconds / k) * 1000,
  };
  const spent = new Map(o.clients.map((c) => [c, { sessions: 0, ms: 0, answers: 0 }]));
  const report: ServeReport = { served: 0, refused: 0, seconds: 0, ended: 'done' };
  const answered = new Set<string>();
  const platform = ctx.backend.info().platform as Platform;
  const sessionMs = ctx.target.bench.timeout_minutes * 60_000;
  let idle = 0;
  const end = (ended: ServeReport['ended']): ServeReport => ({
    ...report,
    seconds: [...spent.values()].reduce((t, c) => t + c.ms, 0) / 1000,
    ended,
  });

  // Best effort: a serving job run again (a re-run of the workflow's job) finds its own marker there.
  await publishMarker(store, servingName(ctx.runId)).catch((e: unknown) =>
    ctx.logger.warn(`tools relay: could not say it serves: ${errorMessage(e)}`),
  );
  try {
    for (;;) {
      const listed = await listPatiently(store, relayPrefix(ctx.runId), {
        sleep,
        pollMs,
        stopped: () => ctx.signal.aborted,
        onFailure: (failures, e) =>
          ctx.logger.warn(`tools relay: listing ${store.where} failed (${failures}): ${errorMessage(e)}`),
      });
      if (listed === undefined) return end('cancelled');
      const names = new Set(listed);
      const parsed = [...names].map((n) => parseName(ctx.runId, n));
      const done = new Set(parsed.flatMap((p) => (p?.kind === 'done' ? [p.client] : [])));
      // A propose job's tool calls run one at a time: its newest unanswered request is the one it
      // waits for, and older ones it gave up on. A client that is done waits for none.
      const newest = new Map<string, number>();
      for (const p of parsed) {
        if (p?.kind !== 'request' || !spent.has(p.client) || done.has(p.client)) continue;
        newest.set(p.client, Math.max(newest.get(p.client) ?? 0, p.seq));
      }
      const pending = [...newest]
        .filter(
          ([c, seq]) =>
            !names.has(answerName(ctx.runId, c, seq)) && !answered.has(answerName(ctx.runId, c, seq)),
        )
        .sort(([a], [b]) => a.localeCompare(b));
      for (const [client, seq] of pending) {
        if (ctx.signal.aborted) return end('cancelled');
        const mine = spent.get(client)!;
        answered.add(answerName(ctx.runId, client, seq));
        // A flood of requests gets a few refusals, then silence: each answer is an artifact of the run.
        if (mine.answers >= share.sessions + EXTRA_ANSWERS) continue;
        mine.answers++;
        const refuse =
          mine.sessions >= share.sessions
            ? `this propose job's ${share.sessions} tool sessions are spent (agent.tools.max_calls ${cfg.max_calls}${k > 1 ? ` split over ${k} candidates` : ''}, two sessions a call)`
            : mine.ms >= share.ms
              ? `this propose job's ${share.ms / 1000} machine second(s) are spent (agent.tools.max_seconds${k > 1 ? `, split over ${k} candidates` : ''})`
              : Date.now() + sessionMs > o.deadline
                ? 'the tools relay stops serving before a session could end (serve-minutes)'
                : undefined;
        const answer = await serveOne(o, client, seq, platform, refuse);
        if (answer.refused) report.refused++;
        else {
          report.served++;
          mine.sessions++;
          mine.ms += answer.durationMs;
        }
      }
      if (o.clients.every((c) => done.has(c)) && pending.length === 0) return end('done');
      if (Date.now() > o.deadline) return end('deadline');
      // While nothing comes the listing slows to a sixth of its pace (an agent thinks for minutes
      // between calls, and each listing is a call to the artifact service); a request brings it back.
      idle = pending.length === 0 ? idle + 1 : 0;
      if (idle > 0) await sleep(pollMs * Math.min(6, Math.ceil(idle / 12)));
    }
  } finally {
    await markRelayClosed(store, ctx.runId, ctx.logger);
  }
}

/**
 * Say the serving job has stopped, however it ended (also before it served: its machine would not
 * open): a propose job still waiting stops at once instead of at its deadline. Never throws.
 */
export async function markRelayClosed(store: RelayStore, runId: string, logger: Logger): Promise<void> {
  await publishMarker(store, closedName(runId)).catch((e: unknown) =>
    logger.warn(`tools relay: could not say it stopped: ${errorMessage(e)}`),
  );
}

/** Take one request, run its session (unless `refuse` says why not) and publish the answer. */
async function serveOne(
  o: ServeOptions,
  client: string,
  seq: number,
  platform: Platform,
  refuse: string | undefined,
): Promise<RelayAnswer> {
  const { ctx, store } = o;
  const name = requestName(ctx.runId, client, seq);
  const scratch = mkdtempSync(join(tmpdir(), 'hillclimb-relay-serve-'));
  const out = join(scratch, 'answer');
  mkdirSync(out);
  let answer: RelayAnswer;
  try {
    answer = refuse
      ? refused(refuse)
      : await session(o, name, join(scratch, 'request'), out, platform, 'relay');
  } catch (e) {
    answer = {
      version: RELAY_VERSION,
      exitCode: null,
      durationMs: 0,
      infraError: errorMessage(e).slice(0, 2000),
    };
  }
  writeFileSync(join(out, 'answer.json'), `${JSON.stringify(answer)}\n`);
  try {
    await store.put(answerName(ctx.runId, client, seq), out);
  } catch (e) {
    // The client gives up at its own deadline; the serving goes on with the next request.
    ctx.logger.warn(`tools relay: could not answer ${name}: ${errorMessage(e)}`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  ctx.logger.info(
    `tools relay: ${name}: ${answer.refused ? `refused (${answer.refused})` : answer.infraError ? `failed (${answer.infraError})` : `exit ${answer.exitCode} in ${(answer.durationMs / 1000).toFixed(1)} s`}`,
  );
  return answer;
}

function refused(why: string): RelayAnswer {
  return { version: RELAY_VERSION, exitCode: null, durationMs: 0, refused: why };
}

/** One request's verifier session, on the options parsed from its command and its programs. */
async function session(
  o: ServeOptions,
  name: string,
  into: string,
  out: string,
  platform: Platform,
  treeName: string,
): Promise<RelayAnswer> {
  const { ctx } = o;
  try {
    await o.store.get(name, into, REQUEST_LIMITS);
  } catch (e) {
    return refused(errorMessage(e).slice(0, 500));
  }
  const request = readRequest(join(into, 'request.json'));
  if (typeof request === 'string') return refused(request);
  const opts = parseVerifyCommand(ctx, request.command, platform);
  if (typeof opts === 'string') return refused(opts);
  const programs: Record<string, string> = {};
  for (const arm of opts.arms) {
    const dir = join(into, 'programs', arm);
    if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory() || readdirSync(dir).length === 0) {
      return refused(`no programs for arm ${arm}`);
    }
    programs[arm] = dir;
  }
  const sessionFile = join(out, 'session.json');
  const logFile = join(out, 'verify.full.log');
  const job = await verifierJob(
    ctx,
    { iteration: o.iteration },
    {
      ...opts,
      harness: o.harness,
      programs,
      sessionFile,
      logFile,
      ...(opts.trace ? { traceDir: join(out, 'trace') } : {}),
      name: treeName,
    },
  );
  const result = await ctx.backend.run(job);
  // The verifier's log, its tail: a crash's last lines are what the tools' answer quotes.
  try {
    const log = readPlainFile(logFile);
    writeFileSync(join(out, 'verify.log'), log.subarray(Math.max(0, log.length - LOG_TAIL_BYTES)));
  } catch {
    // no log: the answer says what happened
  }
  rmSync(logFile, { force: true });
  return {
    version: RELAY_VERSION,
    exitCode: result.exitCode,
    durationMs: result.durationMs,
    ...(result.killedBy ? { killedBy: result.killedBy } : {}),
    ...(result.infraError ? { infraError: result.infraError } : {}),
  };
}
