/**
 * The loop's trajectory as mermaid `xychart-beta` charts, from history rows: a line for the champion
 * after each measured iteration and a bar for the candidate measured in it. When the runs measured both
 * levels (levels.ts), two charts: the model's MFU and the kernel's fwd+bwd time, with the candidates
 * that became champion and the rejected ones as bars of two colours (mermaid's xychart has no scatter
 * points; a bar drawn to the axis floor is no bar). Otherwise one chart of the verdict metric. Iterations
 * without a measurement (invalid, error, no-op) cannot be plotted, since the chart has no gaps, and are
 * listed below it instead.
 *
 * The baseline chart plots main over time from the baseline series (one history-format row per nightly
 * measurement of main against its parent).
 */
import type { ArmPair, HistoryLevels, HistoryRow, Verdict } from '../evidence/index.js';
import { formatFixed, formatSignificant, formatValue, MINUS, plural } from './format.js';
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

/**
 * The trajectory section: both levels' charts when the rows have them, else a one-line summary, the
 * verdict metric's chart and a legend; undefined without rows.
 */
export function trajectorySection(
  rows: readonly HistoryRow[],
  filter: { metricPath: string; target?: string },
  maxPoints: number = DEFAULT_MAX_POINTS,
): string | undefined {
  const levels = levelsTrajectorySection(rows, filter, maxPoints);
  if (levels !== undefined) return levels;
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

// --- both levels ------------------------------------------------------------------------------------

/** Bar colours: candidates that became champion, rejected candidates; then the champion line. */
export const LEVEL_CHART_PALETTE = '#1a7f37, #cf222e, #0969da';

/** A level the charts follow: where its values are in a history row, and how to show them. */
export interface LevelSeries {
  key: 'modelMfu' | 'kernelMs';
  label: string;
  /** The unit on the axis (MFU is shown in percent). */
  unit: string;
  direction: 'higher' | 'lower';
  /** Display scale: MFU fractions become percents. */
  scale: number;
  pair: (levels: HistoryLevels) => ArmPair;
}

/** The model's MFU and the kernel's time, the two numbers the seed loop tracked by hand. */
export function levelSeries(peak: HistoryLevels['peak']): LevelSeries[] {
  const vs = peak === 'measured' ? ' vs measured matmul peak' : '';
  return [
    {
      key: 'modelMfu',
      label: `model MFU${vs}`,
      unit: '%',
      direction: 'higher',
      scale: 100,
      pair: (l) => l.modelMfu,
    },
    {
      key: 'kernelMs',
      label: 'kernel fwd+bwd time',
      unit: 'ms',
      direction: 'lower',
      scale: 1,
      pair: (l) => l.kernelMs,
    },
  ];
}

/** Rows of a target (and metric) with both levels, as the trajectory of one level series. */
export function levelTrajectory(
  rows: readonly HistoryRow[],
  series: LevelSeries,
  filter: { metricPath: string; target?: string },
  maxPoints: number = DEFAULT_MAX_POINTS,
): Trajectory | undefined {
  const relevant = rows.filter(
    (r) => r.metric.path === filter.metricPath && (filter.target === undefined || r.target === filter.target),
  );
  if (relevant.length === 0) return undefined;
  // The same rows, with the level's medians in the places the trajectory reads.
  const asRows = relevant.map((r) => {
    const pair = r.levels ? series.pair(r.levels) : { a: null, b: null };
    const scaled = (x: number | null) => (x === null ? null : x * series.scale);
    return { ...r, a: scaled(pair.a), b: scaled(pair.b) };
  });
  const t = trajectory(asRows, filter, maxPoints);
  if (!t) return undefined;
  return {
    ...t,
    metric: { path: series.key, direction: series.direction, label: series.label, unit: series.unit },
  };
}

/** The mermaid source of a level chart: kept and rejected candidates as bars, the champion as a line. */
export function levelChart(t: Trajectory): string {
  const unit = t.metric.unit ? ` (${t.metric.unit})` : '';
  const better = t.metric.direction === 'lower' ? 'lower is better' : 'higher is better';
  const values = t.points.flatMap((p) => [p.champion, p.candidate]);
  const { lo, hi } = axisRange(values);
  const labels = t.points.map((p) => `"${mermaidText(p.label)}"`).join(', ');
  const floor = mermaidNumber(lo);
  const kept = t.points.map((p) => (p.verdict === 'improved' ? mermaidNumber(p.candidate) : floor));
  const rejected = t.points.map((p) => (p.verdict === 'improved' ? floor : mermaidNumber(p.candidate)));
  return [
    '---',
    'config:',
    '  themeVariables:',
    '    xyChart:',
    `      plotColorPalette: "${LEVEL_CHART_PALETTE}"`,
    '---',
    'xychart-beta',
    `  title "${mermaidText(`${t.metric.label}${unit}, ${better}`)}"`,
    `  x-axis "iteration" [${labels}]`,
    `  y-axis "${mermaidText(t.metric.label + unit)}" ${floor} --> ${mermaidNumber(hi)}`,
    `  bar [${kept.join(', ')}]`,
    `  bar [${rejected.join(', ')}]`,
    `  line [${t.points.map((p) => mermaidNumber(p.champion)).join(', ')}]`,
  ].join('\n');
}

function levelSummary(t: Trajectory): string {
  const first = t.points[0]!;
  const last = t.points[t.points.length - 1]!;
  // MFU in percent reads as everywhere else (2 decimals); times with 4 significant digits.
  const value = (x: number) =>
    t.metric.unit === '%' ? `${formatFixed(x, 2)}%` : formatValue(x, t.metric.unit);
  const measured = t.points.length + t.omitted;
  return `Champion ${t.metric.label}: ${value(first.championBefore)} → ${value(last.champion)} over ${plural(measured, 'measured iteration')}.`;
}

/**
 * The trajectory of both levels: the model's MFU and the kernel's time. Undefined when no row has both
 * levels (the caller then shows the verdict metric's chart).
 */
export function levelsTrajectorySection(
  rows: readonly HistoryRow[],
  filter: { metricPath: string; target?: string },
  maxPoints: number = DEFAULT_MAX_POINTS,
): string | undefined {
  const withLevels = rows.filter(
    (r) => r.levels && (filter.target === undefined || r.target === filter.target),
  );
  if (withLevels.length === 0) return undefined;
  const peak = withLevels.at(-1)!.levels!.peak;
  const lines = ['#### Trajectory'];
  let unmeasured: Trajectory['unmeasured'] = [];
  let charts = 0;
  for (const series of levelSeries(peak)) {
    const t = levelTrajectory(rows, series, filter, maxPoints);
    if (!t || t.points.length === 0) continue;
    charts += 1;
    lines.push(levelSummary(t));
    lines.push(fenced('mermaid', levelChart(t)));
    if (t.omitted > 0)
      lines.push(
        `Showing the last ${t.points.length} of ${t.points.length + t.omitted} measured iterations.`,
      );
    unmeasured = t.unmeasured;
  }
  if (charts === 0) return undefined;
  lines.push(
    'Green bars: candidates that became champion; red bars: candidates rejected (no-change, regressed, needs-human); line: the champion after each iteration.',
  );
  if (unmeasured.length > 0) {
    lines.push(
      `Not plotted (no measurement): ${unmeasured.map((u) => `${u.label} ${u.verdict}`).join(', ')}.`,
    );
  }
  return lines.join('\n\n');
}

// --- the baseline series: main over time ---------------------------------------------------------------

/** `11-22`: the UTC month and day of a row (the x axis of the baseline chart). */
function dayLabel(iso: string): string {
  return iso.slice(5, 10);
}

/**
 * main over time from the baseline series: one point per nightly measurement, main's head (the
 * measured side) as a line per level. Undefined without rows.
 */
export function baselineSection(
  rows: readonly HistoryRow[],
  maxPoints: number = DEFAULT_MAX_POINTS,
): string | undefined {
  const measured = rows.filter((r) => r.b !== null).slice(-maxPoints);
  if (measured.length === 0) return undefined;
  const seen = new Map<string, number>();
  const labels = measured.map((r) => {
    const day = dayLabel(r.at);
    const n = (seen.get(day) ?? 0) + 1;
    seen.set(day, n);
    return n === 1 ? day : `${day} #${n}`;
  });
  const lines = [
    '#### main over time',
    `${plural(measured.length, 'nightly measurement')} of main, oldest first.`,
  ];
  const peak = measured.findLast((r) => r.levels)?.levels?.peak ?? null;
  const series: Array<{
    label: string;
    unit: string;
    direction: 'higher' | 'lower';
    values: Array<number | null>;
  }> = measured.some((r) => r.levels)
    ? levelSeries(peak).map((s) => ({
        label: s.label,
        unit: s.unit,
        direction: s.direction,
        values: measured.map((r) => {
          const b = r.levels ? s.pair(r.levels).b : null;
          return b === null ? null : b * s.scale;
        }),
      }))
    : [
        {
          label: measured[0]!.metric.label,
          unit: measured[0]!.metric.unit,
          direction: measured[0]!.metric.direction,
          values: measured.map((r) => r.b),
        },
      ];
  for (const s of series) {
    const points = s.values.flatMap((v, i) => (v === null ? [] : [{ label: labels[i]!, value: v }]));
    if (points.length === 0) continue;
    const { lo, hi } = axisRange(points.map((p) => p.value));
    const unit = s.unit ? ` (${s.unit})` : '';
    const better = s.direction === 'lower' ? 'lower is better' : 'higher is better';
    lines.push(
      fenced(
        'mermaid',
        [
          'xychart-beta',
          `  title "${mermaidText(`main: ${s.label}${unit}, ${better}`)}"`,
          `  x-axis "night (UTC)" [${points.map((p) => `"${mermaidText(p.label)}"`).join(', ')}]`,
          `  y-axis "${mermaidText(s.label + unit)}" ${mermaidNumber(lo)} --> ${mermaidNumber(hi)}`,
          `  line [${points.map((p) => mermaidNumber(p.value)).join(', ')}]`,
        ].join('\n'),
      ),
    );
  }
  return lines.join('\n\n');
}
