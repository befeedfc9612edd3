/**
 * Logging for the engine. Every phase runs in a named group; every skip logs its reason.
 * The terminal logger writes to stderr (stdout is kept for machine-readable output such as --json);
 * the Actions logger speaks the runner's workflow-command protocol for groups and annotations.
 *
 * Messages often carry words the candidate or the agent chose (test names, failure messages, reasons):
 * they are data. The Actions logger never lets one start a workflow command (`::set-output`,
 * `::stop-commands::`, `##[…]`), and neither logger passes a control character through (a terminal
 * escape could rewrite what the reader sees).
 */

export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  debug(message: string): void;
  /** Run `fn` inside a named, collapsible log group; the group is closed even if `fn` throws. */
  group<T>(name: string, fn: () => Promise<T>): Promise<T>;
}

export interface TerminalLoggerOptions {
  /** Print debug lines. Default: when HILLCLIMB_DEBUG is set. */
  verbose?: boolean;
  /** Where lines go. Default: process.stderr. */
  write?: (line: string) => void;
}

/**
 * C0 and C1 control characters but tab and newline (terminal escapes), and the invisible characters
 * that change how the text around them reads (bidirectional overrides and isolates, as in "Trojan
 * Source"; zero-width and other format characters): shown as `\u{…}`, never acted on.
 */
const HIDDEN_RANGES = [
  '\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f', // C0 and C1 controls but tab and newline
  '\\u00ad\\u034f\\u061c\\u180e\\u200b-\\u200f\\u2060-\\u2064\\ufeff', // zero-width and format
  '\\u202a-\\u202e\\u2066-\\u206f', // bidirectional overrides and isolates
  '\\u115f\\u1160\\u2800\\u3164\\uffa0', // letters that print as blank
  '\\ufe00-\\ufe0e\\u{e0100}-\\u{e01ef}', // variation selectors but the emoji one (U+FE0F)
  '\\u{e0000}-\\u{e007f}', // Unicode tags
];
// Built from a string: the class holds combining marks on purpose, which a literal would lint as a mistake.
const CONTROL = new RegExp(`[${HIDDEN_RANGES.join('')}]`, 'gu');

/**
 * `text` with its control and invisible characters (but tab and newline) made visible and harmless:
 * also blank-looking letters (Hangul fillers, the blank Braille pattern), variation selectors but the
 * emoji one, and Unicode tags (the usual carriers of text hidden from a reader, or for a model).
 */
export function withoutControls(text: string): string {
  return text.replace(CONTROL, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

/**
 * `text` as plain data on a runner's log: no line can be a workflow command. The runner reads a line
 * as a command when it starts with `::` after leading whitespace, and the old `##[…]` form anywhere in
 * it; a zero-width space breaks both without changing what the reader sees.
 */
export function asRunnerData(text: string): string {
  return withoutControls(text)
    .split('\n')
    .map((line) => line.replace(/^(\s*):(?=:)/, '$1:\u200b').replaceAll('##[', '#\u200b#['))
    .join('\n');
}

export function terminalLogger(opts: TerminalLoggerOptions = {}): Logger {
  const raw = opts.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const write = (line: string) => raw(withoutControls(line));
  const verbose = opts.verbose ?? Boolean(process.env.HILLCLIMB_DEBUG);
  let depth = 0;
  const pad = (): string => '  '.repeat(depth);
  return {
    info: (m) => write(`${pad()}${m}`),
    warn: (m) => write(`${pad()}warning: ${m}`),
    error: (m) => write(`${pad()}error: ${m}`),
    debug: (m) => {
      if (verbose) write(`${pad()}debug: ${m}`);
    },
    async group(name, fn) {
      write(`${pad()}▸ ${name}`);
      depth += 1;
      try {
        return await fn();
      } finally {
        depth -= 1;
      }
    },
  };
}

/** Escape data for a workflow command (the runner's `%`, CR and LF rules). */
function escapeData(s: string): string {
  return asRunnerData(s.replaceAll('%', '%25').replaceAll('\r', '%0D').replaceAll('\n', '%0A'));
}

/** Logger for GitHub Actions runners: `::group::`, `::warning::`, `::error::`, `::debug::`. */
export function actionsLogger(write: (line: string) => void = (l) => process.stdout.write(`${l}\n`)): Logger {
  return {
    info: (m) => write(asRunnerData(m)),
    warn: (m) => write(`::warning::${escapeData(m)}`),
    error: (m) => write(`::error::${escapeData(m)}`),
    debug: (m) => write(`::debug::${escapeData(m)}`),
    async group(name, fn) {
      write(`::group::${escapeData(name)}`);
      try {
        return await fn();
      } finally {
        write('::endgroup::');
      }
    },
  };
}

/** A logger that keeps lines in memory; for tests and for capturing a phase's log into evidence. */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const logger = terminalLogger({ verbose: true, write: (l) => lines.push(l) });
  return Object.assign(logger, { lines });
}

/** Pick the logger for the current environment. */
export function defaultLogger(): Logger {
  return process.env.GITHUB_ACTIONS === 'true' ? actionsLogger() : terminalLogger();
}
