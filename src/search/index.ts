/**
 * Search over k candidates per iteration (issue 25): screen, select, judge the winner on fresh rounds.
 * docs/search.md documents the rule and the simulation behind its defaults.
 */
// biasedJudgeReusingScreen (selection.ts) stays out of the public entry: it is the benchmark's contrast.
export {
  DEFAULT_SEARCH_POLICY,
  judgeWinner,
  type PairedRounds,
  replaySequential,
  roundRatios,
  type ScreenArm,
  type ScreenedCandidate,
  type ScreenMeasurement,
  type ScreenPolicy,
  type ScreenResult,
  type SearchPolicy,
  type Selection,
  screenCandidates,
  selectWinner,
  type WinnerJudgement,
} from './selection.js';
