/**
 * The loop's trajectory as a mermaid `xychart-beta`: a line for the champion after each measured
 * iteration and a bar for the candidate measured in it, from history rows. Iterations without a
 * measurement (invalid, error, no-op) cannot be plotted, since the chart has no gaps, and are listed
 * below it instead.
 */
import type { HistoryRow } from '../evidence/history.js';
import type { Verdict } from '../evidence/verdicts.js';
import { formatSignificant, formatValue, MINUS, plural } from './format.js';
import { fenced } from './markdown.js';

/** Points beyond this are cut from the start: a chart with hundreds of bars says nothing. */
export const DEFAULT_MAX_POINTS = 50;

export interface TrajectoryPoint {
  /** Axis label, e.g. `i3`, or `r2.i3` when the rows span several runs. */
  label: string;
  /** The champion's value measured in this iteration (before it). */
  championBefore: number;
  /** The champion's value after this iteration. */
  champion: number;
  /** The candidate's median in this iteration. */
  candidate: number;
  verdict: Verdict;
}

export interface Trajectory {
  points: TrajectoryPoint[];
  /** Labels and verdicts of rows that had no measurement. */
  unmeasured: Array<{ label: string; verdict: Verdict }>;
  /** Measured points left out at the start to respect maxPoints. */
  omitted: number;
  metric: HistoryRow['metric'];
  improved: number;
}

/**
 * The points of the chart: rows of `metric.path` (and `target` when given), oldest first as given.
 * The champion after an iteration is the candidate when it improved, else the champion measured in it.
 */
export function trajectory(
  rows: readonly HistoryRow[],
  filter: { metricPath: string; target?: string },
  maxPoints: number = DEFAULT_MAX_POINTS,
): Trajectory | undefined {
  const relevant = rows.filter(
    (r) => r.metric.path === filter.metricPath && (filter.target === undefined || r.target === filter.target),
  );
  const first = relevant[0];
  if (!first) return undefined;
  const runs = [...new Set(relevant.map((r) => r.runId))];
  const label = (r: HistoryRow) =>
    runs.length > 1 ? `r${runs.indexOf(r.runId) + 1}.i${r.iteration}` : `i${r.iteration}`;
  const points: TrajectoryPoint[] = [];
  const unmeasured: Trajectory['unmeasured'] = [];
  for (const r of relevant) {
    if (r.a === null || r.b === null) {
      unmeasured.push({ label: label(r), verdict: r.verdict });
      continue;
    }
    points.push({
      label: label(r),
      championBefore: r.a,
      champion: r.verdict === 'improved' ? r.b : r.a,
      candidate: r.b,
      verdict: r.verdict,
    });
  }
  const omitted = Math.max(0, points.length - maxPoints);
  return {
    points: points.slice(omitted),
    unmeasured,
    omitted,
    metric: first.metric,
    improved: relevant.filter((r) => r.verdict === 'improved').length,
  };
}

/** Text safe inside a mermaid quoted string. */
function mermaidText(text: string): string {
  return text
    .replace(/["`\\\r\n\t]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** A plain ASCII number (mermaid does not know U+2212 or exponents). */
function mermaidNumber(value: number): string {
  return formatSignificant(value).replace(MINUS, '-');
}

/** Axis bounds with a margin, never below zero for positive data. */
function axisRange(values: readonly number[]): { lo: number; hi: number } {
  const min = Math.min(...values);
  const max = Math.max(...values);
  const span = max - min;
  const pad = span > 0 ? span * 0.1 : Math.abs(max) * 0.05 || 1;
  const lo = min >= 0 ? Math.max(0, min - pad) : min - pad;
  return {
    lo: Number(formatSignificant(lo).replace(MINUS, '-')),
    hi: Number(formatSignificant(max + pad).replace(MINUS, '-')),
  };
}

/** The mermaid source (without the fence). */
export function trajectoryChart(t: Trajectory): string {
  const unit = t.metric.unit ? ` (${t.metric.unit})` : '';
  const better = t.metric.direction === 'lower' ? 'lower is better' : 'higher is better';
  const values = t.points.flatMap((p) => [p.champion, p.candidate]);
  const { lo, hi } = axisRange(values);
  const labels = t.points.map((p) => `"${mermaidText(p.label)}"`).join(', ');
  return [
    'xychart-beta',
    `  title "${mermaidText(`${t.metric.label}${unit}, ${better}`)}"`,
    `  x-axis "iteration" [${labels}]`,
    `  y-axis "${mermaidText(t.metric.label + unit)}" ${mermaidNumber(lo)} --> ${mermaidNumber(hi)}`,
    `  bar [${t.points.map((p) => mermaidNumber(p.candidate)).join(', ')}]`,
    `  line [${t.points.map((p) => mermaidNumber(p.champion)).join(', ')}]`,
  ].join('\n');
}

/** The trajectory section: a one-line summary, the chart and a legend; undefined without rows. */
export function trajectorySection(
  rows: readonly HistoryRow[],
  filter: { metricPath: string; target?: string },
  maxPoints: number = DEFAULT_MAX_POINTS,
): string | undefined {
  const t = trajectory(rows, filter, maxPoints);
  if (!t) return undefined;
  const lines = ['#### Trajectory'];
  const measured = t.points.length + t.omitted;
  const first = t.points[0];
  const last = t.points[t.points.length - 1];
  const unit = t.metric.unit;
  const total = measured + t.unmeasured.length;
  if (first && last) {
    const from = formatValue(first.championBefore, unit);
    lines.push(
      `Champion ${t.metric.label}: ${from} → ${formatValue(last.champion, unit)} over ${plural(total, 'iteration')} (${t.improved} improved).`,
    );
    lines.push(fenced('mermaid', trajectoryChart(t)));
    lines.push(
      `Bars: the candidate measured in each iteration; line: the champion after it (${t.metric.direction === 'lower' ? 'lower' : 'higher'} is better).`,
    );
  } else {
    lines.push(`No measured iterations yet (${plural(total, 'iteration')}).`);
  }
  if (t.omitted > 0) lines.push(`Showing the last ${t.points.length} of ${measured} measured iterations.`);
  if (t.unmeasured.length > 0) {
    lines.push(
      `Not plotted (no measurement): ${t.unmeasured.map((u) => `${u.label} ${u.verdict}`).join(', ')}.`,
    );
  }
  return lines.join('\n\n');
}
