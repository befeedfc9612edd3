/** The measurement sections: champion-vs-candidate delta table, the bars used, the raw per-run values. */
import { type IterationEvidence, isBusy, type MeasurementEvidence } from '../evidence/index.js';
import { DEFAULT_POLICY, falseAcceptText, INTERVAL_LABEL, type IntervalMethod } from '../stats/index.js';
import { mfuText, ranOnCpu } from './facts.js';
import {
  EM_DASH,
  formatCv,
  formatDuration,
  formatFixed,
  formatMetricChange,
  formatMfu,
  formatMfuDelta,
  formatPercent,
  formatRatio,
  formatRatioWithCi,
  formatValue,
  shortSha,
} from './format.js';
import { levelsOf, levelsTable, mfuLabel } from './levels.js';
import { cell, code, details, table } from './markdown.js';

/** `5`, or `5 (1 failed)` when some runs of the arm produced no value. */
function runsCell(m: MeasurementEvidence, arm: 'A' | 'B', n: number): string {
  const failed = m.runs.filter((r) => r.arm === arm && r.value === null).length;
  return failed > 0 ? `${n} (${failed} failed)` : String(n);
}

/** The champion-vs-candidate table with the interval and the bars it was judged against. */
export function deltaSection(evidence: IterationEvidence): string | undefined {
  const m = evidence.measurement;
  const c = m?.comparison;
  if (!m || !c) return undefined;
  const unit = m.metric.unit;
  const value = (x: number | null) => (x === null ? EM_DASH : formatValue(x, unit));
  const cv = (x: number | null) => (x === null ? EM_DASH : formatCv(x));
  const change = c.ratio !== null && c.ci !== null ? formatMetricChange(c.ratio, c.ci, c.direction) : EM_DASH;
  const rows: string[][] = [
    [
      'commit',
      code(shortSha(evidence.base.commit)),
      evidence.candidate ? code(shortSha(evidence.candidate.commit)) : EM_DASH,
      '',
    ],
    [cell(`${m.metric.label}, median`), value(c.a.median), value(c.b.median), change],
    ['CV', cv(c.a.cv), cv(c.b.cv), ''],
    ['runs', runsCell(m, 'A', c.a.n), runsCell(m, 'B', c.b.n), ''],
  ];
  const { a, b } = m.mfu;
  // With both levels, MFU is in their table (kernel and model, against their peak); without, the
  // configured MFU is here.
  const levels = levelsTable(evidence);
  if (levels === undefined && (a !== null || b !== null)) {
    const mfu = (x: number | null) => (x === null ? EM_DASH : formatMfu(x));
    const label = cell(mfuLabel(levelsOf(evidence)?.peak));
    rows.push([label, mfu(a), mfu(b), a !== null && b !== null ? formatMfuDelta(a, b) : '']);
  } else if (levels === undefined) {
    rows.push(['MFU', cell(mfuText(evidence)), '', '']);
  }
  const header = ['', 'champion (A)', 'candidate (B)', 'change'];
  const lines = [table(header, rows, ['left', 'right', 'right', 'right'])];
  const bars = barsLine(m);
  if (bars) lines.push(bars);
  const clock = clockLine(m);
  if (clock) lines.push(clock);
  if (levels) lines.push(`**Kernel and model**\n\n${levels}`);
  return lines.join('\n\n');
}

/** The CPU time clock's name in the metrics (hillclimb_bench.metrics.CLOCK_CPU), up to its details. */
const CPU_CLOCK = 'process_time+block_until_ready';

/**
 * Which clock decided, said plainly, and what the wall clock beside it says of the same rounds:
 * `Clock: CPU time of the verifier's one pinned core (… cannot stretch it); the wall clock beside it
 * says 1.214×.`
 */
export function clockLine(m: MeasurementEvidence): string | undefined {
  const clock = m.clock;
  if (!clock) return undefined;
  const what = clock.name.startsWith(CPU_CLOCK)
    ? "CPU time of the verifier's one pinned core (other work's preemptions cannot stretch it)"
    : `the wall clock (${code(clock.name)})`;
  const wall = clock.wall;
  const beside =
    wall === undefined
      ? ''
      : wall.ratio === null
        ? '; no wall-clock times beside it'
        : `; the wall clock beside it says ${formatRatio(wall.ratio)} (median A / median B, a busy machine's preemptions included)`;
  return `Clock: ${what}${beside}.${machineText(m, clock.name.startsWith(CPU_CLOCK))}`;
}

/**
 * How busy the machine was during the sessions, when they ran on it; on a busy machine what that means
 * for the clock that decided: ` Machine: load 11.3 on 2 cores (5.65 a core), steal 0.0%: busy; …`.
 */
function machineText(m: MeasurementEvidence, cpuClock: boolean): string {
  const load = m.machine;
  if (!load) return '';
  const steal = load.stealShare === null ? '' : `, steal ${formatPercent(load.stealShare, 1)}`;
  const said = ` Machine: load ${formatFixed(load.load, 1)} on ${load.cpus} core${load.cpus === 1 ? '' : 's'} (${formatFixed(load.loadPerCore, 2)} a core)${steal}`;
  if (!isBusy(load)) return `${said}.`;
  return cpuClock
    ? `${said}: busy; the CPU-time clock decided, which preemptions cannot stretch, and the rounds' noise is in the interval. What it cannot take out is the core's other hyperthread and the caches other work evicts, which can slow one program more than the other: on a machine this busy the effect's size can be off by more than its interval says, so measure again where nothing else runs before quoting it.`
    : `${said}: busy, and the wall clock decided: other work's preemptions are in these times and widen the interval; measure where nothing else runs for a verdict this noise does not blur.`;
}

/** `Improvement 1.229× [1.201×, 1.258×] (95% percentile CI, …). Accept bar …; regression bar ….` */
export function barsLine(m: MeasurementEvidence): string | undefined {
  const c = m.comparison;
  if (!c) return undefined;
  const parts: string[] = [];
  if (c.ratio !== null && c.ci !== null) {
    if (c.ciMethod === 'paired-t') {
      const what =
        c.direction === 'lower'
          ? "Speedup (geometric mean of the rounds' A / B)"
          : "Gain (geometric mean of the rounds' B / A)";
      parts.push(
        `${what} ${formatRatioWithCi(c.ratio, c.ci)}, ${confidenceLabel(c.confidence, c.ciMethod)} over ${c.a.n} rounds.`,
      );
    } else {
      const what = c.direction === 'lower' ? 'Speedup (median A / median B)' : 'Gain (median B / median A)';
      parts.push(
        `${what} ${formatRatioWithCi(c.ratio, c.ci)}, ${confidenceLabel(c.confidence, c.ciMethod)} from ${c.resamples} resamples, seed ${c.seed}.`,
      );
    }
  }
  if (c.acceptBar !== null) parts.push(acceptBarText(c));
  return parts.length > 0 ? parts.join(' ') : undefined;
}

/**
 * The accept bar said as what it is (the lower CI bound must clear it), then what it can detect:
 * `Accept bar 1.010×: the lower CI bound must clear +1.0% (the practical floor; noise margin +0.6%
 * for ≤ 1% false accepts at no change). Detectable with 80% power at n = 5/5 and CV 2.1% (observed;
 * MDE at the noise's upper bound 3.2%): +8.7%. Regression bar 0.990×.`
 */
export function acceptBarText(c: NonNullable<MeasurementEvidence['comparison']>): string {
  const bar = c.acceptBar!;
  const regress = `Regression bar ${formatRatio(c.regressBar)}.`;
  const clear = `+${formatPercent(bar - 1, 1)}`;
  if (c.mdeSource === 'fixed' || c.acceptMargin === undefined || c.acceptMargin === null) {
    // A margin fixed by policy (or a record from before the bar had a noise margin).
    const why = c.mdeSource === 'fixed' ? 'a margin fixed by policy' : `MDE ${formatPercent(c.mde ?? 0, 1)}`;
    return `Accept bar ${formatRatio(bar)}: the lower CI bound must clear ${clear} (${why}). ${regress}`;
  }
  const floor = c.practicalDelta ?? 0;
  const margin = `noise margin +${formatPercent(c.acceptMargin, 1)} for ${falseAcceptText(c.falseAcceptRate ?? DEFAULT_POLICY.falseAcceptRate, c.sequence, (x) => formatPercent(x, 2))}`;
  const which =
    c.acceptMargin > floor
      ? `${margin}; practical floor +${formatPercent(floor, 1)}`
      : `the practical floor; ${margin}`;
  const power = Math.round((c.power ?? DEFAULT_POLICY.power) * 100);
  // Since issue 23 the MDE is computed at the CV's upper bound (`mdeCv`); older records lack it.
  const atBound =
    c.mdeCv != null && c.noiseCv !== null && c.mdeCv > c.noiseCv
      ? `; MDE at the noise's upper bound ${formatCv(c.mdeCv)}`
      : '';
  const detectable =
    c.mde === null || c.noiseCv === null
      ? ''
      : c.mdeBeyondCeiling
        ? ` Detectable with ${power}% power at n = ${c.a.n}/${c.b.n} and CV ${formatCv(c.noiseCv)} (${c.mdeSource}${atBound}): nothing below the plausibility ceiling (the MDE, +${formatPercent(c.mde, 1)}, is beyond it: this comparison could not accept a real gain).`
        : ` Detectable with ${power}% power at n = ${c.a.n}/${c.b.n} and CV ${formatCv(c.noiseCv)} (${c.mdeSource}${atBound}): +${formatPercent(c.mde, 1)}.`;
  return `Accept bar ${formatRatio(bar)}: the lower CI bound must clear ${clear} (${which}).${detectable} ${regress}`;
}

/** `95% percentile CI`, `90% BCa CI`, `95% t interval of the rounds' log ratios`. */
export function confidenceLabel(confidence: number, method: IntervalMethod): string {
  return `${formatFixed(confidence * 100, confidence * 100 === Math.round(confidence * 100) ? 0 : 1)}% ${INTERVAL_LABEL[method] ?? INTERVAL_LABEL.percentile}`;
}

/** The runs in the order they ran, with the sequential-stopping looks. */
export function rawRunsTable(evidence: IterationEvidence): string | undefined {
  const m = evidence.measurement;
  if (!m || m.runs.length === 0) return undefined;
  const cpu = ranOnCpu(evidence);
  // The model level's columns, when any run timed a training step.
  const model = m.runs.some((r) => r.levels?.stepMs != null);
  // The wall clock's value beside each run's, when the metric was timed on another clock.
  const wall = m.runs.some((r) => r.wall !== undefined);
  const rows = m.runs.map((r, i) => [
    String(i + 1),
    r.arm,
    String(r.index),
    r.value === null ? EM_DASH : formatValue(r.value, m.metric.unit),
    ...(wall ? [r.wall === undefined ? EM_DASH : formatValue(r.wall, m.metric.unit)] : []),
    r.mfu === null ? (cpu ? 'n/a' : EM_DASH) : formatMfu(r.mfu),
    ...(model
      ? [
          r.levels?.stepMs == null ? EM_DASH : formatValue(r.levels.stepMs, 'ms'),
          r.levels?.modelMfu == null ? EM_DASH : formatMfu(r.levels.modelMfu),
        ]
      : []),
    r.exitCode === null ? EM_DASH : String(r.exitCode),
    formatDuration(r.durationMs),
    r.problem ? cell(r.problem) : '',
  ]);
  const header = [
    '#',
    'arm',
    'run',
    cell(m.metric.label),
    ...(wall ? ['wall clock'] : []),
    'MFU',
    ...(model ? ['train step', 'model MFU'] : []),
    'exit',
    'took',
    'problem',
  ];
  const align: Array<'left' | 'right'> = [
    'right',
    'left',
    'right',
    'right',
    ...(wall ? (['right'] as const) : []),
    'right',
    ...(model ? (['right', 'right'] as const) : []),
    'right',
    'right',
    'left',
  ];
  const lines = [table(header, rows, align)];
  lines.push(`First arm: ${m.firstArm}. Metric: ${code(m.metric.path)} (${m.metric.direction} is better).`);
  if (m.looks.length > 0) {
    const looks = m.looks.map((l) => `n=${l.n} → ${l.action} (${cell(l.reason)})`);
    lines.push(`Sequential looks: ${looks.join('; ')}.`);
  }
  return lines.join('\n\n');
}

/** The raw values collapsed in a <details> block. */
export function rawRunsSection(evidence: IterationEvidence): string | undefined {
  const body = rawRunsTable(evidence);
  const m = evidence.measurement;
  if (!body || !m) return undefined;
  return details(`Raw per-run values (${m.runs.length} runs, in the order they ran)`, body);
}
