/**
 * The search table of an iteration that proposed several candidates (loop.candidates > 1): every
 * candidate, how far it got, its screening estimate and its verdict. It sits in the winner's PR comment
 * and in every candidate's log entry; losers have no PR of their own (docs/search.md).
 */
import type { IterationEvidence, SearchCandidateRow } from '../evidence/index.js';
import { formatRatio, formatRatioWithCi, plural } from './format.js';
import { cell, table } from './markdown.js';

const STAGE_LABELS: Record<string, string> = {
  prepare: 'prepare',
  propose: 'proposal',
  guard: 'guard',
  'cpu-gate': 'CPU gate',
  'accelerator-gate': 'accelerator gate',
  screen: 'screen',
  measure: 'full comparison',
};

/** The markdown section, or undefined for an iteration of one candidate. */
export function searchSection(evidence: IterationEvidence): string | undefined {
  const search = evidence.search;
  if (!search || !evidence.slot) return undefined;
  const rows = search.candidates.map((row) => candidateCells(row, evidence));
  const k = search.candidates.length;
  const heading = `#### Search: ${plural(k, 'candidate')}, ${measuredInFull(search)}`;
  const race = search.race;
  const dropRule = (when: string) =>
    `${when} a candidate was dropped when its interval against the champion lay wholly below ` +
    `${formatRatio(search.threshold)}, or the leader's interval over it lay wholly above 1`;
  const screened = !race
    ? `screened against the champion (${plural(search.screenRounds, 'paired round')})`
    : race.maxRounds > search.screenRounds
      ? `screened against the champion in sessions of ${plural(search.screenRounds, 'paired round')}, raced up to ` +
        `${plural(race.maxRounds, 'round')}: ${dropRule('after each session')} (${confidenceText(race.confidence)} per look); the rest got another session`
      : search.screenRounds >= 2
        ? `screened against the champion in one session of ${plural(search.screenRounds, 'paired round')}: ` +
          `${dropRule('after it')} (${confidenceText(race.confidence)} intervals)`
        : `screened against the champion in one session of 1 round (no interval: ranked on its estimate)`;
  const rule =
    `Every candidate that passed its gates was ${screened}; ` +
    `only the best one at or above ${formatRatio(search.threshold)} was measured in full, on fresh rounds ` +
    "(the next best too when one ended invalid, no-op or error before the comparison's first look, having said nothing about its effect). " +
    'The verdict and every number of the full comparison come from those rounds alone: the best of several ' +
    'noisy screens overstates its own effect, so a screening round is never evidence.';
  const outcome = raceOutcome(search);
  // The level in the column itself: a race's intervals are wider than the 95% a reader assumes.
  const screenColumn =
    race && race.maxRounds >= 2
      ? `screen [${confidenceText(race.confidence)} interval]`
      : 'screen [interval]';
  return [
    heading,
    rule,
    ...(outcome ? [outcome] : []),
    table(['candidate', 'change', 'reached', screenColumn, 'rounds', 'verdict', 'why'], rows, [
      'left',
      'left',
      'left',
      'right',
      'right',
    ]),
  ].join('\n\n');
}

/**
 * Whether the screen separated its pick from the runner-up or chose it on its estimate when the round
 * budget was spent (the runner-up is then the best candidate the race kept to the end).
 */
export function raceOutcome(search: NonNullable<IterationEvidence['search']>): string | undefined {
  const race = search.race;
  const picked = search.candidates.find((c) => c.slot === (search.measured?.[0] ?? search.winner));
  if (!race || !picked || picked.estimate === null) return undefined;
  const raced = race.maxRounds > search.screenRounds;
  const the = raced ? 'the race' : 'the screen';
  // The runner-up: the best other candidate no interval dropped, timed for as many rounds.
  const runnerUp = search.candidates
    .filter((c) => c !== picked && c.estimate !== null && c.rounds === picked.rounds && !c.dropped)
    .sort((x, y) => y.estimate! - x.estimate!)[0];
  const behind = runnerUp
    ? `, not separated from candidate ${runnerUp.slot} (${formatRatio(runnerUp.estimate!)})`
    : '';
  if (race.cutShort) {
    // Whatever the ranking made of the rounds it ended on, the race did not run its course.
    const separated =
      race.ending === 'separated' ? ', separated from every other candidate still in it' : behind;
    return `The race was cut short after ${plural(race.maxRounds, 'round')} (${race.cutShort}): candidate ${picked.slot} was chosen on those rounds${separated}, and the full comparison decides.`;
  }
  if (race.ending === 'alone') return `One candidate was screened: ${the} had no one to separate it from.`;
  if (race.ending === 'below-bar') {
    return `No candidate's estimate reached ${formatRatio(search.threshold)} at a look of ${the} (${plural(picked.rounds ?? 0, 'round')}): more rounds would not have made a winner likely.`;
  }
  if (race.ending === 'separated') {
    return `${raced ? 'The race' : 'The screen'} separated candidate ${picked.slot} from every other candidate: each was dropped by an interval.`;
  }
  const when = `${raced ? 'at the round budget' : 'after the one session'} (${plural(race.maxRounds, 'round')})`;
  return (
    `Candidate ${picked.slot} was chosen on its estimate ${when}${behind}: ` +
    'the screen could not tell them apart, and the full comparison decides.'
  );
}

const confidenceText = (c: number): string => `${(c * 100).toFixed(2).replace(/\.?0+$/, '')}%`;

/** A screening estimate with its interval where the screen had one; `none` when it has no estimate. */
export function screenEstimateText(
  estimate: number | null,
  interval: { lo: number; hi: number } | null | undefined,
  none: string,
): string {
  if (estimate === null) return none;
  return interval ? formatRatioWithCi(estimate, interval) : formatRatio(estimate);
}

function candidateCells(row: SearchCandidateRow, evidence: IterationEvidence): string[] {
  const self = row.slot === evidence.slot?.index;
  // This record's own verdict is the latest word on it (the winner's is decided after the table).
  const verdict = self ? (evidence.verdict ?? row.verdict) : row.verdict;
  const reason = self ? (evidence.verdictReasons[0] ?? row.reason) : row.reason;
  const name = self ? `**${row.slot}** (this)` : String(row.slot);
  const screen = screenEstimateText(row.estimate, row.interval, '—');
  return [
    name,
    row.subject === null ? '—' : cell(row.subject),
    STAGE_LABELS[row.stage] ?? row.stage,
    screen,
    row.rounds === undefined ? '—' : String(row.rounds),
    verdict ?? (row.stage === 'measure' ? 'being measured' : '—'),
    cell(reason),
  ];
}

/** Which candidates the full comparison measured, in order ("candidate 2 measured in full"). */
export function measuredInFull(search: NonNullable<IterationEvidence['search']>): string {
  const measured = search.measured ?? (search.winner === null ? [] : [search.winner]);
  if (measured.length === 0) return 'none measured in full';
  if (measured.length === 1) return `candidate ${measured[0]} measured in full`;
  return `candidates ${measured.slice(0, -1).join(', ')} and ${measured.at(-1)} measured in full, in that order`;
}
