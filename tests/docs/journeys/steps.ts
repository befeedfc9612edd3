/**
 * From a marked block to the commands a journey runs, and from a documented output to the check of
 * what a command printed. Pure: the runner (runner.ts) does the running.
 */
import type { FencedBlock } from './markers.js';

/** One command of a block: its text as the page shows it, and where. */
export interface DocCommand {
  where: string;
  text: string;
}

/** The text before an unquoted ` #` comment. */
export function withoutComment(line: string): string {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quote) {
      if (ch === quote) quote = null;
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (ch === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return line.slice(0, i).trimEnd();
  }
  return line.trimEnd();
}

/** A block's commands: continuation lines joined, comments and comment-only lines dropped. */
export function commandsOf(block: FencedBlock): DocCommand[] {
  const out: DocCommand[] = [];
  for (let i = 0; i < block.lines.length; i++) {
    const first = i;
    let text = withoutComment(block.lines[i]!.trim());
    while (text.endsWith('\\') && i + 1 < block.lines.length)
      text = `${text.slice(0, -1).trimEnd()} ${withoutComment(block.lines[++i]!.trim())}`;
    if (text) out.push({ where: `${block.page}:${block.line + 1 + first}`, text });
  }
  return out;
}

/** `node bin/hillclimb.js` is the README's way to run `hillclimb` inside a checkout: the same command. */
export function asTyped(text: string): string {
  return text.replace(/(^|&&\s*|;\s*)node bin\/hillclimb\.js\b/g, '$1hillclimb');
}

/**
 * The command as the journey runs it: each `<placeholder>` gets the journey's value. A placeholder the
 * journey does not document fails, naming it: nothing else of the page's text is changed.
 */
export function resolveCommand(text: string, values: Record<string, string>, where: string): string {
  return asTyped(text).replace(/<([^<>]+)>/g, (whole, name: string) => {
    const value = values[name];
    if (value === undefined)
      throw new Error(`${where}: the journey gives no value for ${whole} in \`${text}\``);
    return value;
  });
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * A documented output line as a pattern over one printed line: `<placeholders>` stand for any text,
 * everything else is literal.
 */
export function linePattern(docLine: string): RegExp {
  const parts = docLine
    .trim()
    .split(/<[^<>]*>/)
    .map(escapeRegExp);
  return new RegExp(parts.join('.*?'));
}

/** The documented lines (all, or the 1-based `only`) that no line of `printed` matches. */
export function unmatchedLines(docLines: string[], only: number[] | null, printed: string): string[] {
  const wanted = only ? only.map((n) => docLines[n - 1]!) : docLines.filter((l) => l.trim() !== '');
  const lines = printed.split('\n');
  return wanted.filter((doc) => !lines.some((l) => linePattern(doc).test(l)));
}
