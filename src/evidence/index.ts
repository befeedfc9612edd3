/**
 * The evidence record of an iteration, its history row, verdicts, and the JUnit and metrics readers.
 * Other modules import from this entry, never from its files.
 */

export type { ArmPair, HistoryLevels, HistoryRow, KeptPrograms } from './history-row.js';
export { HISTORY_SCHEMA } from './history-row.js';
export { recordIsolation, unverifiedReasons } from './isolation.js';
export { failureSummary, readJUnitXml } from './junit.js';
export type { KernelShare, LevelChange, LevelKey, LevelsEvidence, PeakInfo } from './levels.js';
export {
  amdahlLimit,
  amdahlSpeedup,
  atPooledPeak,
  kernelShare,
  LEVEL_METRICS,
  peakInfo,
  pooledPeak,
  runLevels,
  summarizeLevels,
} from './levels.js';
export {
  BUSY_LOAD_PER_CORE,
  BUSY_STEAL_SHARE,
  busiest,
  isBusy,
  type MachineSample,
  machineLoadBetween,
  parseProcStat,
} from './machine-load.js';
export type { MetricsFile } from './metrics.js';
export {
  comparabilityProblems,
  metricValue,
  readMetricsFile,
  timedWallMs,
  wallMetricPath,
} from './metrics.js';
export type {
  AgentEvidence,
  AgentToolsEvidence,
  ExportEvidence,
  FailedAttempt,
  GateEvidence,
  GateVerification,
  GuardEvidence,
  Isolation,
  IterationEvidence,
  MachineLoad,
  MeasuredRun,
  MeasurementEvidence,
  ProfileEvidence,
  PublishEvidence,
  ScreenEvidence,
  ScreenSession,
  SearchCandidateRow,
  SearchEvidence,
  SessionRecord,
  StepName,
  ToolCallEvidence,
  WitnessEvidence,
} from './record.js';
export { EVIDENCE_SCHEMA, STEPS } from './record.js';
export type { GateProgram, Session, SessionArm, SessionMode } from './session.js';
export { parseSession, readSession, SESSION_SCHEMA } from './session.js';
export type { Verdict } from './verdicts.js';
export { VERDICT_DESCRIPTIONS, VERDICT_SYMBOLS } from './verdicts.js';
