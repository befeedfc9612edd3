/** The store's error type: a backend call that the store could not complete. */
import { ExitCode, HillclimbError } from '../util/errors.js';

export class StoreApiError extends HillclimbError {
  override name = 'StoreApiError';
  /** HTTP status, when the backend answered. */
  readonly status: number | undefined;
  /** What the store was doing, e.g. `commit` or `listFiles`. */
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
