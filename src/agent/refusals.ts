/**
 * What a harness endpoint the agent talks to (the key proxy, the tools endpoint) refused: a count and a
 * capped sample, bounded whatever the agent sends, for one warning at the end of its run.
 */

/** Refused requests: how many, and the first few (`METHOD path` or why), each capped. */
export interface Refusals {
  count: number;
  sample: string[];
}

/** Refused requests kept as examples, and the length of each. */
export const REFUSAL_SAMPLE = 20;
const REFUSAL_CHARS = 160;

/** A fresh, empty record. */
export function noRefusals(): Refusals {
  return { count: 0, sample: [] };
}

/**
 * Count one refusal; keep its reason while the sample has room, on one line: a reason quotes what the
 * agent sent (a method's or a tool's name), and the warning must not print lines of the agent's making.
 */
export function recordRefusal(r: Refusals, why: string): void {
  r.count++;
  if (r.sample.length < REFUSAL_SAMPLE) r.sample.push(why.replace(/\s+/g, ' ').slice(0, REFUSAL_CHARS));
}

/** `3 request(s): GET /v1/files, …`: one bounded line for a warning. */
export function refusalText(r: Refusals): string {
  const more = r.count > r.sample.length ? `, … (${r.count} in all)` : '';
  return `${r.count} request(s): ${r.sample.join(', ')}${more}`;
}
