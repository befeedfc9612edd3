/**
 * Size limits of what the forge writes, and the one function that enforces them. GitHub rejects a PR
 * body or an issue comment over 65,536 characters with 422 "body is too long (maximum is 65536
 * characters)"; hillclimb caps below that, cutting on a line boundary and pointing to where the full
 * text lives, and tells the caller so it can warn. The local forge applies the same caps, so the demo
 * shows what GitHub would.
 */

/** GitHub's limit for PR bodies and issue/PR comments. */
export const GITHUB_BODY_MAX_CHARS = 65_536;
/** GitHub's limit for PR titles. */
export const GITHUB_TITLE_MAX_CHARS = 256;

/**
 * The most hillclimb writes as a PR body or comment. The margin below GitHub's limit absorbs
 * differences in how characters are counted (JavaScript counts UTF-16 units, at least as many as
 * GitHub's characters) and leaves room for the hidden marker and stamp.
 */
export const BODY_CAP_CHARS = 64_000;
export const TITLE_CAP_CHARS = GITHUB_TITLE_MAX_CHARS;

export interface CapResult {
  text: string;
  truncated: boolean;
  /** Length before capping. */
  originalChars: number;
}

/** The note appended to a truncated text; it says where the full text is. */
export function truncationNote(originalChars: number): string {
  return (
    `\n\n---\n> **Truncated by hillclimb:** the full text has ${originalChars.toLocaleString('en-US')} ` +
    `characters, over GitHub's ${GITHUB_BODY_MAX_CHARS.toLocaleString('en-US')}-character limit. ` +
    'The job summary and the evidence bundle hold all of it.'
  );
}

/**
 * Cap `text` at `maxChars` (note included). The cut falls on the last line break that fits, an open
 * code fence is closed so the note renders as prose, and a surrogate pair is never split.
 */
export function capBody(text: string, maxChars: number = BODY_CAP_CHARS): CapResult {
  if (text.length <= maxChars) return { text, truncated: false, originalChars: text.length };
  const note = truncationNote(text.length);
  const fenceCloser = '\n```';
  const budget = maxChars - note.length - fenceCloser.length;
  if (budget <= 0) throw new RangeError(`maxChars ${maxChars} leaves no room for the truncation note`);
  let cut = text.lastIndexOf('\n', budget);
  if (cut <= 0) cut = budget;
  if (isHighSurrogate(text.charCodeAt(cut - 1))) cut -= 1;
  let kept = text.slice(0, cut);
  if (hasOpenFence(kept)) kept += fenceCloser;
  return { text: kept + note, truncated: true, originalChars: text.length };
}

/** Cap a title at GitHub's limit with an ellipsis. */
export function capTitle(title: string, maxChars: number = TITLE_CAP_CHARS): CapResult {
  const oneLine = title.replace(/\s*\n\s*/g, ' ').trim();
  if (oneLine.length <= maxChars) {
    return { text: oneLine, truncated: false, originalChars: title.length };
  }
  let cut = maxChars - 1;
  if (isHighSurrogate(oneLine.charCodeAt(cut - 1))) cut -= 1;
  return { text: `${oneLine.slice(0, cut)}…`, truncated: true, originalChars: title.length };
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** True when the text ends inside a fenced code block (an odd number of ``` or ~~~ fence lines). */
function hasOpenFence(text: string): boolean {
  let open = false;
  for (const line of text.split('\n')) {
    if (/^\s{0,3}(```|~~~)/.test(line)) open = !open;
  }
  return open;
}
