/**
 * The loop: its drivers (run, phases, commits, a person's PR), the step pipeline and its on-disk
 * state. Other modules import from this entry, never from its files.
 */
export { runDirOf, stateDirOf } from './context.js';
export type { TargetCheck, TargetCheckName, TargetCheckReport } from './drivers/check.js';
export { checkTarget } from './drivers/check.js';
export { commentMeasurement, measureCommits, profileCommitSummary, testCommit } from './drivers/commits.js';
export type { Phase, PhaseOptions, PhaseResult } from './drivers/phases.js';
export {
  fetchKeptProgramsOf,
  KEPT_HANDOVER_DIR,
  PHASES,
  resolveChampion,
  runPhase,
  trustedSlot,
} from './drivers/phases.js';
export { checkAgentApi } from './drivers/preflight.js';
export { prepareExternalChange, publishToPullRequest, recordBaseline } from './drivers/pull-request.js';
export type { LoopResult } from './drivers/run.js';
export { resolveConfigFile, runLoop } from './drivers/run.js';
export type { SearchPhase, SearchPhaseOptions, SearchPhaseResult } from './drivers/search-phases.js';
export { runSearchPhase } from './drivers/search-phases.js';
export { relayClients, runToolsRelay, type ToolsRelayOptions } from './drivers/tools-relay.js';
export { markRelayDone } from './relay/index.js';
export { Bundle, BundleFiles, iterationDirName } from './state/bundle.js';
export { readHistory } from './state/history.js';
export { newRunId } from './state/journal.js';
