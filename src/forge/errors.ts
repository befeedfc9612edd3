/** The forge's error type: an API call (or push) that the forge could not complete. */
import { ExitCode, HillclimbError } from '../util/errors.js';

export class ForgeApiError extends HillclimbError {
  override name = 'ForgeApiError';
  /** HTTP status, when the forge answered; undefined for a network or git failure. */
  readonly status: number | undefined;
  /** What hillclimb was doing, e.g. `pulls.create` or `git push`. */
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
