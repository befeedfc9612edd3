/**
 * The process funnel: every process starts here (argument arrays, timeouts, redaction, the sandbox).
 * Other modules import from this entry, never from its files.
 */

export type { ExecOptions, ExecResult } from './exec.js';
export { displayCommand, ExecError, run } from './exec.js';
export { findOnPath } from './find-on-path.js';
export { openProcessLedger, type Swept, sweepProcessLedger } from './ledger.js';
export {
  nodeReadPaths,
  programReadPaths,
  SANDBOX_HINT,
  SANDBOX_SETUP_FAILED,
  sandboxAvailability,
  sandboxCommand,
  sandboxWasReady,
} from './sandbox.js';
