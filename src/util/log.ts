/**
 * Logging for the engine. Every phase runs in a named group; every skip logs its reason.
 * The terminal logger writes to stderr (stdout is kept for machine-readable output such as --json);
 * the Actions logger speaks the runner's workflow-command protocol for groups and annotations.
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

export function terminalLogger(opts: TerminalLoggerOptions = {}): Logger {
  const write = opts.write ?? ((line: string) => process.stderr.write(`${line}\n`));
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
  return s.replaceAll('%', '%25').replaceAll('\r', '%0D').replaceAll('\n', '%0A');
}

/** Logger for GitHub Actions runners: `::group::`, `::warning::`, `::error::`, `::debug::`. */
export function actionsLogger(write: (line: string) => void = (l) => process.stdout.write(`${l}\n`)): Logger {
  return {
    info: (m) => write(m),
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
