/**
 * Markdown for GitHub's job summary (`core.summary`, ~1 MiB per step): the run's table, the
 * trajectory once, then every iteration newest first with the comment's sections and its step
 * timeline. Capped in bytes; sections shrink in the comment's order (raw values, chart, tables),
 * and as a last resort the oldest iterations are left out.
 */
import { type HistoryRow, type IterationEvidence, STEPS } from '../evidence/index.js';
import { commentParts } from './comment.js';
import { championAfter, measuredChange, subjectOf, verdictLabel } from './facts.js';
import { fitParts, type Part, shrinkSteps, utf8Bytes } from './fit.js';
import { EM_DASH, formatDuration, iterationTag, shortSha } from './format.js';
import { cell, code, link, table } from './markdown.js';
import { DEFAULT_MAX_POINTS, trajectorySection } from './trajectory.js';

/** GitHub refuses a step summary over 1 MiB; stay a little below it. */
export const JOB_SUMMARY_MAX_BYTES = 1024 * 1024 - 16 * 1024;
/** Hotspot rows per iteration in the summary (it has room the comment does not). */
const SUMMARY_HOTSPOT_ROWS = 25;

export interface JobSummaryOptions {
  /** Default JOB_SUMMARY_MAX_BYTES. */
  maxBytes?: number;
  /** Rows of hotspot tables. Default 25. */
  hotspotRows?: number;
}

export interface RenderedJobSummary {
  markdown: string;
  truncated: boolean;
  reduced: string[];
}

/** The run's iterations as a markdown table. */
export function runSummaryTable(iterations: readonly IterationEvidence[]): string {
  const rows = iterations.map((ev) => [
    iterationTag(ev),
    cell(verdictLabel(ev)),
    cell(subjectOf(ev)),
    measuredChange(ev)?.delta ?? EM_DASH,
    code(shortSha(championAfter(ev))),
    ev.publish?.prUrl ? link(`#${ev.publish.prNumber ?? 'PR'}`, ev.publish.prUrl) : EM_DASH,
  ]);
  return table(['iter', 'verdict', 'subject', 'delta [CI]', 'champion after', 'PR'], rows);
}

/** When each step ran and how it ended. */
export function stepsSection(evidence: IterationEvidence): string | undefined {
  const rows = STEPS.flatMap((step) => {
    const r = evidence.steps[step];
    if (!r) return [];
    const took = Date.parse(r.finishedAt) - Date.parse(r.startedAt);
    return [
      [step, r.status, Number.isFinite(took) ? formatDuration(took) : EM_DASH, r.note ? cell(r.note) : ''],
    ];
  });
  const warnings = (evidence.publish?.warnings ?? []).map((w) => `> warning: ${cell(w)}`);
  if (rows.length === 0 && warnings.length === 0) return undefined;
  const steps =
    rows.length > 0
      ? [table(['step', 'status', 'took', 'note'], rows, ['left', 'left', 'right', 'left'])]
      : [];
  return ['#### Steps', ...steps, ...warnings].join('\n\n');
}

/** The job summary of a run (or of one iteration, given one). History rows feed the trajectory. */
export function renderJobSummary(
  iterations: readonly IterationEvidence[],
  history: readonly HistoryRow[],
  opts: JobSummaryOptions = {},
): RenderedJobSummary {
  const last = iterations[iterations.length - 1];
  const where = 'The evidence bundles have everything.';
  const parts: Part[] = [];
  if (last) {
    parts.push({
      key: 'run',
      variants: [
        `## hillclimb ${cell(last.target)}, run ${code(last.runId)}\n\n${runSummaryTable(iterations)}`,
      ],
    });
    const metric = last.measurement?.metric ?? iterations.find((e) => e.measurement)?.measurement?.metric;
    const chart = metric
      ? trajectorySection(history, { metricPath: metric.path, target: last.target }, DEFAULT_MAX_POINTS)
      : undefined;
    if (chart)
      parts.push({ key: 'chart', variants: [chart, `_The trajectory chart was left out to fit. ${where}_`] });
  }
  const rows = opts.hotspotRows ?? SUMMARY_HOTSPOT_ROWS;
  for (const ev of [...iterations].reverse()) {
    const tag = iterationTag(ev);
    for (const part of commentParts(ev, [], { hotspotRows: rows, where })) {
      if (part.key === 'chart' || part.variants.length === 0) continue;
      parts.push({ key: `${part.key}:${tag}`, variants: part.variants });
    }
    const steps = stepsSection(ev);
    if (steps) parts.push({ key: `steps:${tag}`, variants: [steps] });
  }
  // Raw values of the oldest iterations go first, then the chart, then tables, newest last.
  const tags = iterations.map((e) => iterationTag(e));
  const plan = [
    ...tags.flatMap((t) => shrinkSteps(parts, `raw:${t}`)),
    ...shrinkSteps(parts, 'chart'),
    ...tags.flatMap((t) => [
      ...shrinkSteps(parts, `hotspots:${t}`),
      ...shrinkSteps(parts, `customCalls:${t}`),
      ...shrinkSteps(parts, `checks:${t}`),
    ]),
  ];
  const fit = fitParts(parts, plan, opts.maxBytes ?? JOB_SUMMARY_MAX_BYTES, { sizeOf: utf8Bytes, where });
  return { markdown: fit.text, truncated: fit.truncated, reduced: fit.reduced };
}
