/**
 * Search over k candidates per iteration (issue 25): screen, select, judge the winner on fresh rounds.
 * docs/search.md documents the rule and the simulation behind its defaults.
 */
export {
  biasedJudgeReusingScreen,
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
