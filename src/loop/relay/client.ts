/**
 * The propose job's end of the tools relay: a Backend for the agent's tools that runs every job here
 * (the requests step, and the exports — candidate code, in this job's sandbox — for the measuring
 * machine's platform: a TPU's Mosaic lowering needs no TPU) except the verifier's sessions, which it sends to the
 * credentialed job serving the relay (./serve.ts) and waits for. What comes back is advisory, like
 * every tool answer: it is read as the serving job's words and becomes no evidence.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Backend,
  type BackendInfo,
  type JobResult,
  type JobSpec,
  type RelayStore,
  VERIFIER_CACHE_KEY,
} from '../../compute/index.js';
import { errorMessage } from '../../util/index.js';
import { realSleep } from '../context.js';
import { VERIFIER_PROGRAMS_DIR } from '../steps/programs.js';
import {
  ANSWER_LIMITS,
  answerName,
  closedName,
  doneName,
  listPatiently,
  parseName,
  publishMarker,
  RELAY_VERSION,
  type RelayRequest,
  readAnswer,
  relayPrefix,
  requestName,
  servingName,
} from './protocol.js';

export interface RelayClientOptions {
  /** Runs everything but the verifier's sessions: this job's CPU backend. */
  local: Backend;
  store: RelayStore;
  runId: string;
  /** This propose job's name in the relay: `main`, or `c<slot>`. */
  client: string;
  /** The measuring machine the serving job times on, as its own config describes it. */
  serving: BackendInfo;
  /** How often to look for the answer. Default 5 s. */
  pollMs?: number;
  /**
   * How long an answer may take beyond the session's own timeout: the wait behind other calls and the
   * two transfers. Default 10 min.
   */
  graceMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * A verifier session: harness code over exported programs. The requests step is harness code too, but
 * reads no programs and depends on no machine: it runs here.
 */
function isVerifierSession(job: JobSpec): boolean {
  return job.cacheKey === VERIFIER_CACHE_KEY && (job.include ?? []).includes(VERIFIER_PROGRAMS_DIR);
}

/** The tools' backend in a propose job whose verifier sessions a credentialed job serves. */
export function relayBackend(o: RelayClientOptions): Backend {
  const pollMs = o.pollMs ?? 5_000;
  const graceMs = o.graceMs ?? 10 * 60_000;
  const sleep = o.sleep ?? realSleep;
  let first: Promise<number> | undefined;
  let next = 0;

  /** The next sequence number: after any this client used before (a retried job of the same run). */
  const seq = async (): Promise<number> => {
    first ??= o.store.list(relayPrefix(o.runId)).then((names) => {
      const used = names
        .map((n) => parseName(o.runId, n))
        .filter((p) => p !== undefined && p.client === o.client && 'seq' in p)
        .map((p) => (p as { seq: number }).seq);
      return Math.max(0, ...used) + 1;
    });
    // One listing, however many calls ask at once: each gets a number of its own.
    const n = next++;
    return (await first) + n;
  };

  const failed = (job: JobSpec, started: number, why: string): JobResult => ({
    exitCode: null,
    infraError: `the tools relay: ${why}`,
    durationMs: Date.now() - started,
    logFile: job.logFile,
  });

  const relay = async (job: JobSpec): Promise<JobResult> => {
    const started = Date.now();
    const n = await seq();
    const scratch = mkdtempSync(join(tmpdir(), 'hillclimb-relay-client-'));
    try {
      const request: RelayRequest = { version: RELAY_VERSION, command: [...job.command] };
      writeFileSync(join(scratch, 'request.json'), `${JSON.stringify(request)}\n`);
      cpSync(join(job.workdir, VERIFIER_PROGRAMS_DIR), join(scratch, 'programs'), { recursive: true });
      await o.store.put(requestName(o.runId, o.client, n), join(scratch));
      const answer = answerName(o.runId, o.client, n);
      const deadline = started + job.timeoutMs + graceMs;
      for (;;) {
        const names = await listPatiently(o.store, relayPrefix(o.runId), {
          sleep,
          pollMs,
          stopped: () => job.signal?.aborted === true,
        });
        if (names === undefined) return { ...failed(job, started, 'cancelled'), killedBy: 'abort' };
        if (names.includes(answer)) break;
        if (names.includes(closedName(o.runId))) {
          return failed(
            job,
            started,
            'the serving job has stopped (its deadline, a failure, or the run ended)',
          );
        }
        // The serving job says so once it holds the machine: none within the grace, none is coming.
        if (!names.includes(servingName(o.runId)) && Date.now() - started > graceMs) {
          return failed(
            job,
            started,
            `no job serves the tools relay of this run (nothing in ${o.store.where} within ${Math.round(graceMs / 60_000)} min)`,
          );
        }
        if (Date.now() > deadline) {
          return failed(
            job,
            started,
            `no answer from ${o.store.where} in ${Math.round((deadline - started) / 60_000)} min`,
          );
        }
        await sleep(pollMs);
      }
      const got = join(scratch, 'answer');
      await o.store.get(answer, got, ANSWER_LIMITS);
      const a = readAnswer(join(got, 'answer.json'));
      if (typeof a === 'string') return failed(job, started, a);
      const log = join(got, 'verify.log');
      mkdirSync(join(job.logFile, '..'), { recursive: true });
      if (existsSync(log)) cpSync(log, job.logFile);
      else writeFileSync(job.logFile, `${a.refused ?? a.infraError ?? 'the relay sent no log'}\n`);
      if (a.refused) return failed(job, started, `refused: ${a.refused}`);
      const session = join(got, 'session.json');
      if (job.outputs.metrics && existsSync(session)) cpSync(session, job.outputs.metrics);
      const trace = join(got, 'trace');
      if (job.outputs.trace && existsSync(trace)) cpSync(trace, job.outputs.trace, { recursive: true });
      return {
        exitCode: a.exitCode,
        ...(a.killedBy ? { killedBy: a.killedBy } : {}),
        ...(a.infraError ? { infraError: a.infraError } : {}),
        durationMs: a.durationMs,
        logFile: job.logFile,
        handle: `relay ${answer}`,
      };
    } catch (e) {
      return failed(job, started, errorMessage(e));
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  };

  return {
    name: `relay(${o.serving.backend})`,
    open: () => o.local.open(),
    close: () => o.local.close(),
    info: () => ({
      ...o.serving,
      description: `${o.serving.description}, through the tools relay`,
    }),
    run: (job) => (isVerifierSession(job) ? relay(job) : o.local.run(job)),
  };
}

/** Tell the serving job that `client` sends nothing more (its agent has ended): it stops once all have. */
export async function markRelayDone(
  store: RelayStore,
  runId: string,
  client: string,
  retryMs = 5_000,
): Promise<void> {
  const name = doneName(runId, client);
  // Said once: the propose phase says it, and the workflow's always-step again for a job that failed first.
  // Unsaid after a hiccup of the store, the serving job would hold the machine until its deadline.
  const listed = await listPatiently(store, name, {
    sleep: realSleep,
    pollMs: retryMs,
  });
  if (listed?.includes(name)) return;
  await publishMarker(store, name);
}
