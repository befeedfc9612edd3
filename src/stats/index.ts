/**
 * The statistics the loop calls: A/B verdicts, sequential stopping, noise calibration.
 * docs/statistics.md documents every type and the rule.
 */
export { bootstrapRatioOfMedians, type CiMethod, type Interval, MIN_RESAMPLES } from './bootstrap.js';
export {
  type ArmSummary,
  type CompareOptions,
  type ComparePolicy,
  type Comparison,
  compareArms,
  DEFAULT_POLICY,
  type Direction,
  type FalseAcceptSequence,
  falseAcceptText,
  INTERVAL_LABEL,
  type IntervalMethod,
  inputProblems,
  type MdeSource,
  type ResolvedPolicy,
  resolvePolicy,
  STATS_VERDICTS,
  type StatsVerdict,
} from './compare-arms.js';
export { median } from './describe.js';
export {
  acceptBarFor,
  acceptMargin,
  BOOTSTRAP_WIDTH_FACTOR,
  calibrateNoise,
  DEFAULT_FALSE_ACCEPT_RATE,
  type MdeOptions,
  MEDIAN_SE_FACTOR,
  minimumDetectableEffect,
  type NoiseCalibration,
  pairedNoiseCv,
  robustNoiseCv,
} from './noise.js';
export { type PairedLogRatio, pairedLogRatio } from './paired.js';
export { createRng, type Rng } from './random.js';
export {
  DEFAULT_SEQUENTIAL_POLICY,
  decideNext,
  SEQUENTIAL_STEP,
  type SequentialAction,
  type SequentialDecision,
  type SequentialPolicy,
} from './sequential.js';
