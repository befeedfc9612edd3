/** What every CLI command gets: where output goes, the logger, and the project root. */
import type { Command } from 'commander';
import { findProjectRoot } from '../project/index.js';
import { isHillclimbError, type Logger, terminalLogger } from '../util/index.js';

export interface CliIO {
  /** Machine-readable or primary output (tables, JSON). */
  stdout: (text: string) => void;
  /** Progress, warnings and errors. */
  stderr: (text: string) => void;
}

export interface CliContext extends CliIO {
  logger: Logger;
  /** The project root: --root, else the nearest folder with hillclimb.yml, else the current folder. */
  root: string;
}

export const processIO: CliIO = {
  stdout: (t) => process.stdout.write(t.endsWith('\n') ? t : `${t}\n`),
  stderr: (t) => process.stderr.write(t.endsWith('\n') ? t : `${t}\n`),
};

export function contextFor(program: Command, io: CliIO): CliContext {
  const opts = program.opts<{ root?: string }>();
  return {
    ...io,
    logger: terminalLogger({ write: (l) => io.stderr(l) }),
    root: findProjectRoot(opts.root),
  };
}

/** Print a user error as message + hint (no stack) and return its exit code; a bug keeps its stack. */
export function reportError(err: unknown, io: CliIO): number {
  if (isHillclimbError(err)) {
    io.stderr(`error: ${err.message}`);
    if (err.hint) io.stderr(`hint: ${err.hint}`);
    return err.exitCode;
  }
  const stack = err instanceof Error ? (err.stack ?? err.message) : String(err);
  io.stderr(`internal error (a bug in hillclimb, please report it):\n${stack}`);
  return 70;
}
