/**
 * The line of a failed process's log that says why it failed, for a verdict or an error message. The
 * export, the verifier and the agent each wrote a log that opens with the harness's own lines (the
 * command, `# cwd: …`); what the process said comes after them.
 */
import { readFileSync } from 'node:fs';

export interface TellingLineOptions {
  /** The harness's header ends at the first line that matches; what comes after it is searched. */
  headerEnd?: RegExp;
  /** Lines that are the harness's, wherever they are (`$ <command>`, `# note`). */
  skip: RegExp;
  /** Search only the last this many lines. */
  within?: number;
  /** Patterns in order of preference: the last line matching the first pattern that has one wins. */
  telling: readonly RegExp[];
  /** Without a telling line, the last line (else undefined). */
  orLast?: boolean;
}

/**
 * The most telling line of a log (trimmed, whole: the caller cuts it to length), or undefined when the
 * log cannot be read or has no such line.
 */
export function tellingLogLine(logFile: string, o: TellingLineOptions): string | undefined {
  let text: string;
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return undefined;
  }
  const header = o.headerEnd === undefined ? null : text.match(o.headerEnd);
  const said = header?.index === undefined ? text : text.slice(header.index + header[0].length);
  let lines = said
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !o.skip.test(l));
  if (o.within !== undefined) lines = lines.slice(-o.within);
  for (const pattern of o.telling) {
    const line = lines.findLast((l) => pattern.test(l));
    if (line !== undefined) return line;
  }
  return o.orLast ? lines.at(-1) : undefined;
}
