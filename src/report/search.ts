/**
 * The search table of an iteration that proposed several candidates (loop.candidates > 1): every
 * candidate, how far it got, its screening estimate and its verdict. It sits in the winner's PR comment
 * and in every candidate's log entry; losers have no PR of their own (docs/search.md).
 */
import type { IterationEvidence, SearchCandidateRow } from '../evidence/index.js';
import { formatRatio, plural } from './format.js';
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
  const rule =
    `Every candidate that passed its gates was screened against the champion (${plural(search.screenRounds, 'paired round')}); ` +
    `only the best one at or above ${formatRatio(search.threshold)} was measured in full, on fresh rounds ` +
    "(the next best too when one ended invalid, no-op or error before the comparison's first look, having said nothing about its effect). " +
    'The verdict and every number of the full comparison come from those rounds alone: the best of several ' +
    'noisy screens overstates its own effect, so a screening round is never evidence.';
  return [
    heading,
    rule,
    table(['candidate', 'change', 'reached', 'screen', 'verdict', 'why'], rows, [
      'left',
      'left',
      'left',
      'right',
    ]),
  ].join('\n\n');
}

function candidateCells(row: SearchCandidateRow, evidence: IterationEvidence): string[] {
  const self = row.slot === evidence.slot?.index;
  // This record's own verdict is the latest word on it (the winner's is decided after the table).
  const verdict = self ? (evidence.verdict ?? row.verdict) : row.verdict;
  const reason = self ? (evidence.verdictReasons[0] ?? row.reason) : row.reason;
  const name = self ? `**${row.slot}** (this)` : String(row.slot);
  return [
    name,
    row.subject === null ? '—' : cell(row.subject),
    STAGE_LABELS[row.stage] ?? row.stage,
    row.estimate === null ? '—' : formatRatio(row.estimate),
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
