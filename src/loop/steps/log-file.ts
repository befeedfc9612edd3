/** Reading the hill-climb log for the prompt: its last entries, as written by the harness. */
import { ITERATION_HEADING } from '../../report/index.js';

/** The last `n` entries (each from its heading, ITERATION_HEADING, to the next), oldest first. */
export function recentLogEntries(text: string, n: number): string[] {
  if (n <= 0) return [];
  const starts: number[] = [];
  const re = new RegExp(ITERATION_HEADING.source, 'gm');
  for (let m = re.exec(text); m !== null; m = re.exec(text)) starts.push(m.index);
  const entries = starts.map((s, i) => text.slice(s, starts[i + 1] ?? text.length).trim());
  return entries.slice(-n);
}
