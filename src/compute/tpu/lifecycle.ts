/**
 * The TPU lifecycle as plain functions (the `tpu-vm` backend, the `hillclimb tpu` verbs and the `tpu`
 * action all call these), one job per file: allocate with zone fallback and run the setup command
 * (allocate.ts), release (release.ts), describe (status.ts), and sweep expired resources
 * (janitor.ts); what they share is in context.ts.
 *
 * Every allocation carries labels `hillclimb=1`, `hillclimb-run=<run id>` and
 * `hillclimb-expires=<epoch seconds>`; the janitor deletes labelled resources whose expiry has passed,
 * so a TPU leaked by a crash, a cancelled workflow or a lost post step still goes away.
 */
export { type AllocateOptions, allocateTpu, runSetup } from './allocate.js';
export {
  defaultRunId,
  describedState,
  LABEL_EXPIRES,
  LABEL_MARK,
  LABEL_RUN,
  type TpuContext,
  tpuLabels,
  tpuNames,
} from './context.js';
export { type JanitorAction, type JanitorReport, janitorSweep } from './janitor.js';
export { type ReleaseOutcome, type ReleaseReport, releaseRecorded, releaseTpu } from './release.js';
export { type TpuStatus, tpuStatus } from './status.js';
