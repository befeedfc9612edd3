/**
 * The sticky comment's hidden parts, as pure functions shared by every forge.
 *
 * A sticky comment ends with two HTML comments GitHub does not render:
 *
 *     <!-- hillclimb:sticky:<key> -->
 *     <!-- hillclimb:stamp {"runStartedAt":…,"runId":…,"iteration":…,"commit":…} -->
 *
 * The marker finds the comment again (one per PR and key); the stamp orders writes so an older run
 * never overwrites a newer result. `stickyMarker` is the only place the marker is built.
 */
import type { CommentStamp } from './forge.js';
import { BODY_CAP_CHARS, capBody } from './limits.js';

const MARKER_PREFIX = 'hillclimb:sticky:';
const STAMP_OPEN = '<!-- hillclimb:stamp ';
const COMMENT_CLOSE = ' -->';
/** Keys become part of an HTML comment, so they stay short and plain (no `--`, no `>`). */
const KEY_PATTERN = /^[A-Za-z0-9](?:[A-Za-z0-9._]|-(?!-)){0,63}$/;

/** The hidden marker for `key`, e.g. `<!-- hillclimb:sticky:mfu -->`. */
export function stickyMarker(key: string): string {
  if (!KEY_PATTERN.test(key)) {
    throw new TypeError(
      `sticky comment key ${JSON.stringify(key)} must be 1-64 letters, digits, ".", "_" or single "-"`,
    );
  }
  return `<!-- ${MARKER_PREFIX}${key}${COMMENT_CLOSE}`;
}

export function hasStickyMarker(body: string, key: string): boolean {
  return body.includes(stickyMarker(key));
}

/** The stamp as a hidden HTML comment. `<`, `>` and `--` are JSON-escaped so the comment cannot end early. */
export function encodeStamp(stamp: CommentStamp): string {
  const problem = stampProblem(stamp);
  if (problem) throw new TypeError(`invalid comment stamp: ${problem}`);
  const { runStartedAt, runId, iteration, commit } = stamp;
  const json = JSON.stringify({ runStartedAt, runId, iteration, commit })
    .replaceAll('<', '\\u003c')
    .replaceAll('>', '\\u003e')
    .replaceAll('--', '-\\u002d');
  return `${STAMP_OPEN}${json}${COMMENT_CLOSE}`;
}

/** The last stamp in a comment body, or undefined when there is none or it is malformed. */
export function decodeStamp(body: string): CommentStamp | undefined {
  const start = body.lastIndexOf(STAMP_OPEN);
  if (start < 0) return undefined;
  const end = body.indexOf(COMMENT_CLOSE, start + STAMP_OPEN.length);
  if (end < 0) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.slice(start + STAMP_OPEN.length, end));
  } catch {
    return undefined;
  }
  return stampProblem(parsed) === undefined ? (parsed as CommentStamp) : undefined;
}

function stampProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'not an object';
  const s = value as Record<string, unknown>;
  if (typeof s.runStartedAt !== 'string' || Number.isNaN(Date.parse(s.runStartedAt))) {
    return `runStartedAt must be an ISO 8601 time (got ${JSON.stringify(s.runStartedAt)})`;
  }
  if (typeof s.runId !== 'string' || s.runId === '') return 'runId must be a non-empty string';
  if (typeof s.iteration !== 'number' || !Number.isInteger(s.iteration) || s.iteration < 0) {
    return `iteration must be a non-negative integer (got ${JSON.stringify(s.iteration)})`;
  }
  if (typeof s.commit !== 'string') return 'commit must be a string';
  return undefined;
}

/**
 * Total order on stamps: a later run start is newer; within a run, a later iteration is newer; then
 * the run id decides (numerically when both are numbers, as GitHub run ids are, else by code
 * units) so two distinct runs never tie. Equal start, iteration and run id is a tie (0): the same
 * iteration publishing again, e.g. a retried step, which may refresh its own comment. The commit is
 * not part of the order.
 */
export function compareStamps(a: CommentStamp, b: CommentStamp): number {
  const byTime = Date.parse(a.runStartedAt) - Date.parse(b.runStartedAt);
  if (byTime !== 0) return Math.sign(byTime);
  if (a.iteration !== b.iteration) return Math.sign(a.iteration - b.iteration);
  if (a.runId === b.runId) return 0;
  if (/^\d+$/.test(a.runId) && /^\d+$/.test(b.runId)) return BigInt(a.runId) > BigInt(b.runId) ? 1 : -1;
  return a.runId > b.runId ? 1 : -1;
}

/** True when `a` is strictly newer than `b` (see compareStamps). */
export function isNewer(a: CommentStamp, b: CommentStamp): boolean {
  return compareStamps(a, b) > 0;
}

/** Whether a write stamped `incoming` may replace a comment stamped `existing` (absent: always). */
export function mayOverwrite(incoming: CommentStamp, existing: CommentStamp | undefined): boolean {
  return existing === undefined || compareStamps(incoming, existing) >= 0;
}

export interface StickyBody {
  body: string;
  truncated: boolean;
  originalChars: number;
}

/** The full comment: the visible text (capped so the whole stays under `maxChars`), marker, stamp. */
export function composeStickyBody(
  key: string,
  visible: string,
  stamp: CommentStamp,
  maxChars: number = BODY_CAP_CHARS,
): StickyBody {
  const footer = `\n\n${stickyMarker(key)}\n${encodeStamp(stamp)}`;
  const capped = capBody(visible.trimEnd(), maxChars - footer.length);
  return { body: capped.text + footer, truncated: capped.truncated, originalChars: capped.originalChars };
}

/** The visible text of a sticky comment, without marker and stamp (for display). */
export function stickyVisibleText(body: string): string {
  const at = body.indexOf(`<!-- ${MARKER_PREFIX}`);
  return (at < 0 ? body : body.slice(0, at)).trimEnd();
}
