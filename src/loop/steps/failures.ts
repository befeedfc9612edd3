/**
 * How a step fails. Two kinds matter to the loop:
 * - an infrastructure failure (a backend, the network, a model API) says nothing about the candidate:
 *   the step is retried with backoff, and if it keeps failing the iteration ends in `error`;
 * - an interruption (SIGINT/SIGTERM) stops the run where it is; `--resume` continues the same step.
 * A real failure (tests fail, the bench crashes on the candidate) is never retried: the step records
 * a verdict instead of throwing.
 */
import { ExitCode, HillclimbError } from '../../util/index.js';

export class InfraFailure extends HillclimbError {
  override name = 'InfraFailure';

  constructor(message: string, opts: { hint?: string; cause?: unknown } = {}) {
    super(message, { ...opts, exitCode: ExitCode.infra });
  }
}

/**
 * The champion fails on its own, where no candidate is involved, in a way no retry can fix: its target
 * module raises an error a program makes (an import error, a typo, a wrong shape) rather than one the
 * machine makes. The run stops with that error; a person fixes the module and resumes.
 */
export class ChampionFailure extends HillclimbError {
  override name = 'ChampionFailure';

  constructor(message: string, opts: { hint?: string } = {}) {
    super(message, { ...opts, exitCode: ExitCode.badInput });
  }
}

/**
 * Python exceptions that come from the program, not the machine: raised again on every try. A machine's
 * trouble (OSError and its kind, MemoryError, XLA's runtime errors, a timeout, a signal) is not here and
 * stays retried.
 */
const PROGRAM_ERROR_NAMES =
  '(?:[\\w.]+\\.)?(?:ModuleNotFoundError|ImportError|SyntaxError|IndentationError|NameError|AttributeError|TypeError|KeyError|IndexError|ValueError|AssertionError|JSONDecodeError|ZeroDivisionError|NotImplementedError|UnboundLocalError)\\b';
const PROGRAM_ERRORS = new RegExp(`^${PROGRAM_ERROR_NAMES}`, 'm');

/** Whether a failed Python program's log ends in an exception of the program's own making. */
export function isProgramError(log: string): boolean {
  const at = log.lastIndexOf('Traceback (most recent call last):');
  return at !== -1 && PROGRAM_ERRORS.test(log.slice(at));
}

/**
 * The export's own one-line refusals (`export: failed: <key>: …`, printed without a traceback) that
 * no retry can fix: a program error while building a program (a kernel package not on sys.path, a
 * typo), a kernel module never imported or imported from outside the tree, global state changed.
 */
const EXPORT_MISTAKES = new RegExp(
  `^export: failed: .*(?:could not be exported: ${PROGRAM_ERROR_NAMES}|the export never imported it|outside the tree under test|changed global state)`,
  'm',
);

/** Whether a failed export's log shows a refusal of the export's own that fails the same on every try. */
export function isExportMistake(log: string): boolean {
  return EXPORT_MISTAKES.test(log);
}

export class Interrupted extends HillclimbError {
  override name = 'Interrupted';

  constructor(message = 'interrupted') {
    super(message, { exitCode: 130, hint: 'continue where it stopped with: hillclimb loop --resume' });
  }
}

/** Exponential backoff: base · 2^(attempt−1), attempt counting from 1. */
export function backoffMs(baseSeconds: number, attempt: number): number {
  return Math.round(baseSeconds * 1000 * 2 ** (attempt - 1));
}

/**
 * A short signature of how an iteration failed, for the stuck-loop guard: the same signature several
 * iterations in a row means the loop is not learning and a human should look.
 */
export function failureSignature(verdict: string, reasons: readonly string[], stoppedAt?: string): string {
  const first = (reasons[0] ?? '').replace(/[0-9a-f]{7,40}/g, '<sha>').replace(/\d+(\.\d+)?/g, '<n>');
  return `${verdict}|${stoppedAt ?? ''}|${first}`;
}
