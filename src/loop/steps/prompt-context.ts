/** Context tables the harness computes for the prompt. */
import type { HistoryRow } from '../../evidence/index.js';
import type { TraceSummary } from '../../trace/index.js';

const PROMPT_HOTSPOT_ROWS = 12;

/** The champion's top ops per step, as a markdown table, with the step detector named. */
export function hotspotTable(summary: TraceSummary, rows = PROMPT_HOTSPOT_ROWS): string {
  const s = summary.steps;
  const step = s.timeMs ? `${s.timeMs.median.toFixed(3)} ms median step` : 'step time unknown';
  const lines = [
    `Platform ${summary.platform}; ${s.count} step(s) found by ${s.detector} (${s.detail}); ${step}; op time ${s.opMs.toFixed(3)} ms/step.`,
    '',
    '| op | category | ms/step | share of ops | launches/step | note |',
    '|---|---|---|---|---|---|',
  ];
  for (const op of summary.ops.slice(0, rows)) {
    const note = op.customCall
      ? 'custom call (Pallas), no cost model'
      : op.noCostModel
        ? 'no cost model'
        : '';
    lines.push(
      `| \`${op.name}\` | ${op.category} | ${op.timeMs.toFixed(3)} | ${op.shareOfOps.toFixed(1)}% | ${op.occurrences} | ${note} |`,
    );
  }
  if (summary.ops.length > rows) lines.push(`| … ${summary.ops.length - rows} more ops | | | | | |`);
  return lines.join('\n');
}

const LEDGER_ROWS = 25;

/**
 * The ledger: every earlier iteration of the target that said something about its change (not
 * `error`), newest last, from the history rows on the data branch — so an idea measured in another run
 * or on a branch that was never merged is still "already tried", with the harness's outcome. The
 * hypotheses are earlier agents' prose: shown as one cell, never as instructions.
 */
export function ledgerTable(rows: readonly HistoryRow[], max = LEDGER_ROWS): string {
  const tried = rows.filter((r) => r.verdict !== 'error');
  if (tried.length === 0) return '';
  const shown = tried.slice(-max);
  const lines = [
    `Already tried (the harness's ledger: ${tried.length} earlier iteration(s) of this target${tried.length > shown.length ? `, the last ${shown.length} shown` : ''}; a repeat of the same change is refused unmeasured, unless it ended no-change on an earlier champion):`,
    '',
    '| run / iteration | verdict | improvement ratio [CI] | hypothesis or subject | why |',
    '|---|---|---|---|---|',
  ];
  for (const r of shown) {
    const ratio =
      r.ratio === null
        ? 'not measured'
        : `${r.ratio.toFixed(3)}${r.ciLow !== null && r.ciHigh !== null ? ` [${r.ciLow.toFixed(3)}, ${r.ciHigh.toFixed(3)}]` : ''}`;
    lines.push(
      `| ${cell(r.runId)} / ${r.iteration}${r.slot ? `-c${r.slot}` : ''} | ${r.verdict} | ${ratio} | ${cell(r.hypothesis ?? r.subject ?? '')} | ${cell(r.reason, 160)} |`,
    );
  }
  return lines.join('\n');
}

/**
 * What the prompt remembers (its `{recent_log}`): the ledger, then the newest log entries.
 * `loop.log_entries_in_prompt` counts log entries, the agents' own prose about earlier iterations; the
 * ledger is the harness's record of what was tried and what the novelty check will refuse unmeasured,
 * so it stays at 0 too (hiding it would only let the agent spend iterations on refused repeats). At 0
 * the prompt says the entries are left out, not that there are none.
 */
export function promptMemory(ledger: string, entries: readonly string[], logEntriesInPrompt: number): string {
  const log =
    logEntriesInPrompt === 0
      ? '(log entries are left out: loop.log_entries_in_prompt is 0)'
      : entries.length === 0
        ? '(no log entries yet)'
        : entries.join('\n\n');
  return ledger ? `${ledger}\n\n${log}` : log;
}

function cell(text: string, max = 200): string {
  const line = text.replace(/\s+/g, ' ').replaceAll('|', '/').replaceAll('`', "'").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
