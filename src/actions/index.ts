/**
 * The front end for GitHub actions (actions/<name>/src/main.ts): inputs, outputs, summaries, phases.
 * Other modules import from this entry, never from its files.
 */

export type { ActionsRun } from './github-context.js';
export { actionsRun } from './github-context.js';
export {
  choice,
  configOverrides,
  flag,
  list,
  optionalText,
  positiveInteger,
  requiredText,
} from './inputs.js';
export {
  iterationSummary,
  phaseOptions,
  searchPhaseOptions,
  setAttestationOutput,
  setIterationOutputs,
  setSearchOutputs,
} from './phase.js';
export { runAction, setOutputs, writeSummary } from './run.js';
export type { TpuInputs, TpuStepReport } from './tpu.js';
export {
  allocationInput,
  allocationReport,
  janitorReport,
  releaseReport,
  tpuContext,
  tpuInputs,
} from './tpu.js';
export { compareTraces, iterationProfile, traceDiffMarkdown, writeAnalysis } from './trace.js';
