/** Context tables the harness computes for the prompt. */
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
