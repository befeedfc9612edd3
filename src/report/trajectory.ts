/**
 * The loop's trajectory as mermaid `xychart-beta` charts, from history rows: a line for the champion
 * after each measured iteration and a bar for the candidate measured in it. When the runs measured both
 * levels (levels.ts), two charts: the model's MFU and the kernel's fwd+bwd time, with the candidates
 * that became champion and the rejected ones as bars of two colours (mermaid's xychart has no scatter
 * points; a bar drawn to the axis floor is no bar). Otherwise one chart of the verdict metric. Iterations
 * without a measurement (invalid, error, no-op) cannot be plotted, since the chart has no gaps, and are
 * listed below it instead. A champion line follows one lineage of champions: rows of a run that started
 * from another base begin a new chart, never a line joined across the two.
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

/** Which rows a chart is about: a target's, measured by one metric. */
export interface TrajectoryFilter {
  metricPath: string;
  target?: string;
}

function isMeasured(r: Pick<HistoryRow, 'a' | 'b'>): boolean {
  return r.a !== null && r.b !== null;
}

/**
 * The rows of a chart: the target's rows measured by the metric, and its rows with no measurement at all
 * (their metric path is empty: an invalid, no-op or error iteration measured nothing), which are listed
 * as not plotted.
 */
function chartRows(rows: readonly HistoryRow[], filter: TrajectoryFilter): HistoryRow[] {
  return rows.filter(
    (r) =>
      (filter.target === undefined || r.target === filter.target) &&
      (r.metric.path === filter.metricPath || !isMeasured(r)),
  );
}

/**
 * The rows cut into champion lines: a row continues a line when it starts from a champion the line's
 * previous iteration left (or is another candidate of that iteration, from the same champion). A run
 * started from another base begins a new line, so no chart joins two unrelated champions.
 */
export function championLines<R extends HistoryRow>(rows: readonly R[]): R[][] {
  const lines: R[][] = [];
  let iteration: { key: string; bases: Set<string>; afters: Set<string> } | undefined;
  for (const r of rows) {
    const key = `${r.runId}#${r.iteration}`;
    const sibling = iteration?.key === key && iteration.bases.has(r.baseCommit);
    if (!sibling) {
      if (!iteration?.afters.has(r.baseCommit)) lines.push([]);
      iteration = { key, bases: new Set(), afters: new Set() };
    }
    iteration!.bases.add(r.baseCommit);
    iteration!.afters.add(r.championAfter);
    lines.at(-1)!.push(r);
  }
  return lines;
}

/** Axis labels: `i3`, or `r2.i3` when the rows span several runs. */
function labeller(rows: readonly HistoryRow[]): (r: HistoryRow) => string {
  const runs = [...new Set(rows.map((r) => r.runId))];
  return (r) => (runs.length > 1 ? `r${runs.indexOf(r.runId) + 1}.i${r.iteration}` : `i${r.iteration}`);
}

/** The points of one champion line, oldest first as given. */
function lineTrajectory(
  rows: readonly HistoryRow[],
  label: (r: HistoryRow) => string,
  maxPoints: number,
): Trajectory | undefined {
  const metric = (rows.find(isMeasured) ?? rows[0])?.metric;
  if (!metric) return undefined;
  const points: TrajectoryPoint[] = [];
  const unmeasured: Trajectory['unmeasured'] = [];
  for (const r of rows) {
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
    metric,
    improved: rows.filter((r) => r.verdict === 'improved').length,
  };
}

/**
 * The points of the chart: rows of `metric.path` (and `target` when given), oldest first as given, on
 * one champion line (the rows should be one: see championLines). The champion after an iteration is the
 * candidate when it improved, else the champion measured in it.
 */
export function trajectory(
  rows: readonly HistoryRow[],
  filter: TrajectoryFilter,
  maxPoints: number = DEFAULT_MAX_POINTS,
): Trajectory | undefined {
  const relevant = chartRows(rows, filter);
  return lineTrajectory(relevant, labeller(relevant), maxPoints);
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
 * The trajectory section: per champion line (championLines), both levels' charts when its rows have
 * them, else a one-line summary, the verdict metric's chart and a legend; undefined without rows. The
 * newest `maxPoints` measured points are shown, older lines left out first.
 */
export function trajectorySection(
  rows: readonly HistoryRow[],
  filter: TrajectoryFilter,
  maxPoints: number = DEFAULT_MAX_POINTS,
  heading = '#### Trajectory',
): string | undefined {
  const relevant = chartRows(rows, filter);
  if (relevant.length === 0) return undefined;
  const label = labeller(relevant);
  const peak = relevant.findLast((r) => r.levels)?.levels?.peak;
  const lines = championLines(relevant);
  const parts: string[] = [];
  let budget = maxPoints;
  let leftOut = 0;
  for (const line of [...lines].reverse()) {
    if (budget === 0) {
      leftOut += 1;
      continue;
    }
    const body =
      (peak !== undefined ? levelsLineSection(line, levelSeries(peak), label, budget) : undefined) ??
      metricLineSection(line, label, budget);
    budget = Math.max(0, budget - line.filter(isMeasured).length);
    const from = `From champion \`${line[0]!.baseCommit.slice(0, 10)}\` (${label(line[0]!)} on):`;
    parts.unshift(lines.length > 1 ? `${from}\n\n${body}` : body);
  }
  if (leftOut > 0) {
    parts.unshift(
      `${plural(leftOut, 'earlier champion line')} left out (charts show the newest ${maxPoints} measured iterations).`,
    );
  }
  return [heading, ...parts].join('\n\n');
}

/**
 * Every target's trajectory, for `hillclimb history --chart`: a section per target and per metric its
 * rows were measured by (a target with nothing measured yet says so), oldest target first.
 */
export function historyCharts(
  rows: readonly HistoryRow[],
  maxPoints: number = DEFAULT_MAX_POINTS,
): string | undefined {
  const targets = [...new Set(rows.map((r) => r.target))];
  const sections: string[] = [];
  for (const target of targets) {
    const own = rows.filter((r) => r.target === target);
    const metrics = [...new Map(own.filter(isMeasured).map((r) => [r.metric.path, r.metric])).values()];
    for (const metric of metrics.length > 0 ? metrics : [undefined]) {
      const named = [
        ...(targets.length > 1 ? [target] : []),
        ...(metrics.length > 1 && metric ? [metric.label] : []),
      ];
      const heading = `#### Trajectory${named.length > 0 ? `: ${named.join(', ')}` : ''}`;
      const section = trajectorySection(own, { metricPath: metric?.path ?? '', target }, maxPoints, heading);
      if (section !== undefined) sections.push(section);
    }
  }
  return sections.length > 0 ? sections.join('\n\n') : undefined;
}

/** One champion line as the verdict metric's chart: summary, chart, legend, what was not plotted. */
function metricLineSection(
  rows: readonly HistoryRow[],
  label: (r: HistoryRow) => string,
  maxPoints: number,
): string {
  const t = lineTrajectory(rows, label, maxPoints)!;
  const lines: string[] = [];
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
  lines.push(...notPlotted(t.unmeasured));
  return lines.join('\n\n');
}

function notPlotted(unmeasured: Trajectory['unmeasured']): string[] {
  return unmeasured.length > 0
    ? [`Not plotted (no measurement): ${unmeasured.map((u) => `${u.label} ${u.verdict}`).join(', ')}.`]
    : [];
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

/** One champion line's rows as the trajectory of one level series. */
function levelTrajectory(
  rows: readonly HistoryRow[],
  series: LevelSeries,
  label: (r: HistoryRow) => string,
  maxPoints: number,
): Trajectory | undefined {
  // The same rows, with the level's medians in the places the trajectory reads.
  const asRows = rows.map((r) => {
    const pair = r.levels ? series.pair(r.levels) : { a: null, b: null };
    const scaled = (x: number | null) => (x === null ? null : x * series.scale);
    return { ...r, a: scaled(pair.a), b: scaled(pair.b) };
  });
  const t = lineTrajectory(asRows, label, maxPoints);
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
 * One champion line as both levels' charts: the model's MFU and the kernel's time. Undefined when none
 * of its rows has a level measured (the caller then shows the verdict metric's chart).
 */
function levelsLineSection(
  rows: readonly HistoryRow[],
  series: readonly LevelSeries[],
  label: (r: HistoryRow) => string,
  maxPoints: number,
): string | undefined {
  const lines: string[] = [];
  let unmeasured: Trajectory['unmeasured'] = [];
  for (const s of series) {
    const t = levelTrajectory(rows, s, label, maxPoints);
    if (!t || t.points.length === 0) continue;
    lines.push(levelSummary(t));
    lines.push(fenced('mermaid', levelChart(t)));
    if (t.omitted > 0)
      lines.push(
        `Showing the last ${t.points.length} of ${t.points.length + t.omitted} measured iterations.`,
      );
    unmeasured = t.unmeasured;
  }
  if (lines.length === 0) return undefined;
  lines.push(
    'Green bars: candidates that became champion; red bars: candidates rejected (no-change, regressed, needs-human); line: the champion after each iteration.',
  );
  lines.push(...notPlotted(unmeasured));
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
