/**
 * What the tools relay's two ends leave each other (docs/compute.md, "The agent's tools"): the propose
 * job's harness asks for one verifier session of programs it exported, a credentialed job on the
 * measuring machine answers. Folders in a RelayStore, named
 *
 *   hillclimb-tools-<run>-<client>-<seq>-request   request.json, programs/<arm>/<manifest and programs>
 *   hillclimb-tools-<run>-<client>-<seq>-answer    answer.json, session.json?, trace/?, verify.log?
 *   hillclimb-tools-<run>-<client>-done            the client's agent has ended: no more requests
 *   hillclimb-tools-<run>-serving / -closed          the serving job holds the machine / has stopped
 *
 * `client` is one propose job (a search's candidate: c<slot>; else `main`). Either end reads the other's
 * folder as untrusted bytes: plain files, within limits, JSON of a known shape.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RelayStore } from '../../compute/index.js';
import { readPlainFile } from '../../util/index.js';

export const RELAY_VERSION = 1;

/** A client name: `main`, or `c<slot>`. */
export const CLIENT = /^(main|c[1-9][0-9]?)$/;

/** The prefix of every name of `runId`'s relay. */
export function relayPrefix(runId: string): string {
  return `hillclimb-tools-${runId}-`;
}

export function requestName(runId: string, client: string, seq: number): string {
  return `${relayPrefix(runId)}${client}-${String(seq).padStart(4, '0')}-request`;
}

export function answerName(runId: string, client: string, seq: number): string {
  return `${relayPrefix(runId)}${client}-${String(seq).padStart(4, '0')}-answer`;
}

export function doneName(runId: string, client: string): string {
  return `${relayPrefix(runId)}${client}-done`;
}

/** Published by the serving job once it holds the machine: the clients' requests will be answered. */
export function servingName(runId: string): string {
  return `${relayPrefix(runId)}serving`;
}

/** Published by the serving job when it stops, however it stops: no request will be answered now. */
export function closedName(runId: string): string {
  return `${relayPrefix(runId)}closed`;
}

/** A published name, read back: whose, which, and what it is. */
export function parseName(
  runId: string,
  name: string,
):
  | { client: string; seq: number; kind: 'request' | 'answer' }
  | { client: string; kind: 'done' }
  | undefined {
  const prefix = relayPrefix(runId);
  if (!name.startsWith(prefix)) return undefined;
  const m = /^(main|c[1-9][0-9]?)-(?:([0-9]{4})-(request|answer)|(done))$/.exec(name.slice(prefix.length));
  if (!m) return undefined;
  if (m[4]) return { client: m[1]!, kind: 'done' };
  return { client: m[1]!, seq: Number(m[2]), kind: m[3] as 'request' | 'answer' };
}

/** The request's own file: the verifier command, word for word as the harness built it. */
export interface RelayRequest {
  version: number;
  command: string[];
}

/** The answer's own file: how the session went, as a backend's JobResult says it. */
export interface RelayAnswer {
  version: number;
  exitCode: number | null;
  killedBy?: 'timeout' | 'idle-timeout' | 'abort';
  infraError?: string;
  durationMs: number;
  /** Set when the server refused the request without running it (budget spent, a malformed request). */
  refused?: string;
}

/** Limits on what the server takes from a request: programs of a real kernel fit far within them. */
export const REQUEST_LIMITS = { maxTotalBytes: 1024 ** 3, maxFileBytes: 512 * 1024 ** 2, maxFiles: 2_000 };
/** Limits on what a client takes from an answer (a profile's trace is the largest part). */
export const ANSWER_LIMITS = { maxTotalBytes: 2 * 1024 ** 3, maxFileBytes: 1024 ** 3, maxFiles: 20_000 };
/** The most of a request's or answer's own JSON file read. */
const JSON_BYTES = 64 * 1024;
/** Failed listings of the store in a row either end waits out (the artifact service hiccups) before it gives up. */
const LIST_FAILURES = 10;
/** The most of the verifier's log an answer carries (its tail). */
export const LOG_TAIL_BYTES = 256 * 1024;

function readJson(file: string): unknown {
  return JSON.parse(readPlainFile(file, JSON_BYTES).toString('utf8'));
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** `file` (request.json, answer.json) as a record of this protocol's version, or why it is not one. */
function readVersioned(file: string, what: string): Record<string, unknown> | string {
  let raw: unknown;
  try {
    raw = readJson(file);
  } catch (e) {
    return `${what} is unreadable: ${(e as Error).message.slice(0, 200)}`;
  }
  return isRecord(raw) && raw.version === RELAY_VERSION ? raw : `${what} is not version ${RELAY_VERSION}`;
}

/** request.json, or why it is not one. */
export function readRequest(file: string): RelayRequest | string {
  const raw = readVersioned(file, 'request.json');
  if (typeof raw === 'string') return raw;
  if (!Array.isArray(raw.command) || !raw.command.every((w) => typeof w === 'string')) {
    return 'request.json has no command (a list of words)';
  }
  return { version: RELAY_VERSION, command: raw.command as string[] };
}

const KILLED = ['timeout', 'idle-timeout', 'abort'] as const;

/** answer.json, or why it is not one. */
export function readAnswer(file: string): RelayAnswer | string {
  const raw = readVersioned(file, 'answer.json');
  if (typeof raw === 'string') return raw;
  const { exitCode, killedBy, infraError, durationMs, refused } = raw;
  if (!(exitCode === null || Number.isInteger(exitCode)))
    return 'answer.json: exitCode is not a whole number';
  if (!(typeof durationMs === 'number' && durationMs >= 0 && Number.isFinite(durationMs))) {
    return 'answer.json: durationMs is not a duration';
  }
  if (killedBy !== undefined && !KILLED.includes(killedBy as (typeof KILLED)[number])) {
    return 'answer.json: killedBy is not timeout, idle-timeout or abort';
  }
  for (const [k, v] of [
    ['infraError', infraError],
    ['refused', refused],
  ] as const) {
    if (v !== undefined && typeof v !== 'string') return `answer.json: ${k} is not text`;
  }
  return {
    version: RELAY_VERSION,
    exitCode: exitCode as number | null,
    durationMs,
    ...(killedBy !== undefined ? { killedBy: killedBy as RelayAnswer['killedBy'] } : {}),
    ...(typeof infraError === 'string' ? { infraError: infraError.slice(0, 2000) } : {}),
    ...(typeof refused === 'string' ? { refused: refused.slice(0, 2000) } : {}),
  };
}

/** Publish a marker under `name`: a folder of one small JSON file (done, serving, closed). */
export async function publishMarker(store: RelayStore, name: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'hillclimb-relay-marker-'));
  try {
    writeFileSync(join(dir, 'marker.json'), `${JSON.stringify({ version: RELAY_VERSION })}\n`);
    await store.put(name, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface ListPatientlyOptions {
  /** Wait between a failed listing and the next try. */
  sleep: (ms: number) => Promise<void>;
  pollMs: number;
  /** Checked before each try: true ends the listing, with undefined. */
  stopped?: () => boolean;
  /** Told of each failed listing (the count so far in a row) that is waited out. */
  onFailure?: (failures: number, e: unknown) => void;
}

/**
 * `store.list(prefix)`, a failed listing waited out and tried again, up to LIST_FAILURES in a row (the
 * artifact service answers most of the time): every end of the relay lists through this, so a hiccup
 * of the store ends none of them. Undefined when `stopped` says so before a try.
 * @throws the last listing's error after LIST_FAILURES + 1 failures in a row.
 */
export async function listPatiently(
  store: RelayStore,
  prefix: string,
  o: ListPatientlyOptions,
): Promise<string[] | undefined> {
  for (let failures = 0; ; ) {
    if (o.stopped?.()) return undefined;
    try {
      return await store.list(prefix);
    } catch (e) {
      if (++failures > LIST_FAILURES) throw e;
      o.onFailure?.(failures, e);
      await o.sleep(o.pollMs);
    }
  }
}
