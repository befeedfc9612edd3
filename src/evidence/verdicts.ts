/**
 * The verdicts of hillclimb. Every iteration ends with exactly one; the loop, reports, history and PR
 * comments all use these names and descriptions. The statistics' A/B rule (stats/compare-arms.ts)
 * produces the first five; the loop adds `error`, `no-op` and, for the candidates of an iteration that
 * searched among several (loop.candidates > 1), `screened-out`.
 */
import { STATS_VERDICTS } from '../stats/index.js';

export const VERDICTS = [...STATS_VERDICTS, 'error', 'no-op', 'screened-out'] as const;

export type Verdict = (typeof VERDICTS)[number];

/** One line per verdict, for reports, PR comments and `--help`. */
export const VERDICT_DESCRIPTIONS: Readonly<Record<Verdict, string>> = {
  improved:
    'the whole confidence interval of the improvement is above the noise floor; the candidate becomes the champion',
  'no-change':
    '~ no significant change: the confidence interval reaches inside the noise floor; the champion stays',
  regressed:
    'the whole confidence interval is below 1 − δ_reg: the candidate is measurably worse; the champion stays',
  invalid:
    'the candidate or its evidence cannot support a verdict (failed correctness, protected path touched, bad or too few measurements)',
  'needs-human': 'an implausibly large speedup (above the configured ceiling); never accepted automatically',
  error: 'an infrastructure step failed (backend, network, command); says nothing about the candidate',
  'no-op': 'the agent made no commit; nothing to measure',
  'screened-out':
    "one of several candidates of an iteration: it passed its gates, but its short screening measurement was below the screen's bar or behind another candidate's, so it got no full comparison; the champion stays",
};

/** Short labels for tables (benchstat prints "~" for no significant change). */
export const VERDICT_SYMBOLS: Readonly<Record<Verdict, string>> = {
  improved: '✓',
  'no-change': '~',
  regressed: '✗',
  invalid: '!',
  'needs-human': '?',
  error: 'E',
  'no-op': '-',
  'screened-out': '·',
};

export function isVerdict(value: unknown): value is Verdict {
  return typeof value === 'string' && (VERDICTS as readonly string[]).includes(value);
}

/** Only `improved` replaces the champion. */
export function promotesChampion(verdict: Verdict): boolean {
  return verdict === 'improved';
}
