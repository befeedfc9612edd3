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
  const heading =
    search.winner === null
      ? `#### Search: ${plural(k, 'candidate')}, none measured in full`
      : `#### Search: ${plural(k, 'candidate')}, candidate ${search.winner} measured in full`;
  const rule =
    `Every candidate that passed its gates was screened against the champion (${plural(search.screenRounds, 'paired round')}); ` +
    `only the best one at or above ${formatRatio(search.threshold)} was measured in full, on fresh rounds. ` +
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
