/**
 * Trace readers (Chrome JSON, XSpace, HLO protos, profile folders) and their analysis. Other modules
 * import from this entry, never from its files.
 */

export type { ProfileAgreement } from './agreement.js';
export { profileAgreement } from './agreement.js';
export { diffSummaries } from './diff.js';
export { summarizeTracePath } from './from-path.js';
export { isMarked } from './steps.js';
export type {
  DeviceSpread,
  DiffNumbers,
  DiffRow,
  OpRow,
  OpSpread,
  TraceDiff,
  TraceSummary,
} from './types.js';
export { TRACE_SUMMARY_SCHEMA } from './types.js';
