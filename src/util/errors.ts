/**
 * Typed errors. Every error a user can cause (bad config, bad input file, a failing command) is a
 * HillclimbError: the CLI prints its message and hint, never a stack, and exits with its exit code.
 */

/** Exit codes shared by the CLI and the actions. */
export const ExitCode = {
  ok: 0,
  /** Something required is missing or a check failed (doctor, lint, a failing gate). */
  failure: 1,
  /** The user's input is unusable: bad config, corrupt trace, unknown name. */
  badInput: 2,
  /** An infrastructure step failed (a command, the network, a backend). */
  infra: 3,
} as const;

export class HillclimbError extends Error {
  override name = 'HillclimbError';
  /** One line telling the user what to do next. */
  readonly hint: string | undefined;
  readonly exitCode: number;

  constructor(message: string, opts: { hint?: string; exitCode?: number; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.hint = opts.hint;
    this.exitCode = opts.exitCode ?? ExitCode.failure;
  }
}

/** `hillclimb.yml` (or another config file) is invalid. Names the file, the key path and the line. */
export class ConfigError extends HillclimbError {
  override name = 'ConfigError';
  readonly file: string;
  readonly keyPath: string;
  readonly line: number | undefined;

  constructor(file: string, keyPath: string, problem: string, opts: { line?: number; hint?: string } = {}) {
    const where = opts.line === undefined ? file : `${file}:${opts.line}`;
    super(`${where}: ${keyPath === '' ? '' : `${keyPath}: `}${problem}`, {
      hint: opts.hint,
      exitCode: ExitCode.badInput,
    });
    this.file = file;
    this.keyPath = keyPath;
    this.line = opts.line;
  }
}

/** An input file (trace, metrics JSON, JUnit XML, patch) cannot be read. Names the file and the problem. */
export class InputError extends HillclimbError {
  override name = 'InputError';
  readonly file: string;

  constructor(file: string, problem: string, opts: { hint?: string; cause?: unknown } = {}) {
    super(`${file}: ${problem}`, { hint: opts.hint, exitCode: ExitCode.badInput, cause: opts.cause });
    this.file = file;
  }
}

/** A call to an outside service (a forge, a store) that could not be completed. Infrastructure. */
export class ApiError extends HillclimbError {
  override name = 'ApiError';
  /** HTTP status, when the service answered; undefined for a network or git failure. */
  readonly status: number | undefined;
  /** What hillclimb was doing, e.g. `pulls.create`, `git push`, `commit`. */
  readonly operation: string;

  constructor(
    operation: string,
    message: string,
    opts: { status?: number; hint?: string; cause?: unknown } = {},
  ) {
    super(`${operation}: ${message}`, { hint: opts.hint, exitCode: ExitCode.infra, cause: opts.cause });
    this.operation = operation;
    this.status = opts.status;
  }
}

/** A name chosen by config (backend, forge, store, agent) is not one of the registered ones. */
export class UnknownNameError extends HillclimbError {
  override name = 'UnknownNameError';

  constructor(kind: string, given: string, known: readonly string[]) {
    super(`unknown ${kind} "${given}"; known: ${[...known].sort().join(', ')}`, {
      exitCode: ExitCode.badInput,
    });
  }
}

export function isHillclimbError(err: unknown): err is HillclimbError {
  return err instanceof HillclimbError;
}

/** The message of anything thrown, for places that must not lose an error while reporting it. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
