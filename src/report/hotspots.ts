/** The profile sections: hotspot diff (champion → candidate, time per step) and custom-call launches. */

import type { ProfileEvidence } from '../evidence/index.js';
import type { DiffNumbers, DiffRow, OpRow, TraceDiff } from '../trace/index.js';
import {
  EM_DASH,
  formatFixed,
  formatPercent,
  formatSignedPercent,
  formatSignedValue,
  formatValue,
} from './format.js';
import { cell, code, codeCell, table } from './markdown.js';
import { withPartialCost } from './trace-tables.js';

/** Rows of the hotspot table in a comment unless told otherwise. */
export const DEFAULT_HOTSPOT_ROWS = 10;
const MS = 'ms';

/** Diff rows by |Δ| (largest first), name breaking ties so the order never depends on input order. */
export function topChanges(rows: readonly DiffRow[], count: number): DiffRow[] {
  return [...rows]
    .sort((x, y) => Math.abs(y.delta) - Math.abs(x.delta) || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0))
    .slice(0, Math.max(0, count));
}

/**
 * The op rows a comment compares and the total they are shares of: the whole-trace rows (all devices,
 * inside and outside steps) when the diff leads with them because a trace's steps are unreliable, else
 * the per-step rows.
 */
export function hotspotBasis(diff: TraceDiff): { rows: DiffRow[]; total: DiffNumbers; wholeTrace: boolean } {
  if (diff.basis === 'whole-trace' && diff.wholeTrace !== undefined)
    return { rows: diff.wholeTrace, total: diff.deviceMs, wholeTrace: true };
  return { rows: diff.ops, total: diff.opTimeMs, wholeTrace: false };
}

/** Names XLA has no cost model for: custom calls (Pallas/Mosaic kernels) on either side. */
export function customCallNames(profile: ProfileEvidence): Set<string> {
  const names = new Set<string>();
  for (const row of profile.diff?.customCalls ?? []) names.add(row.name);
  for (const s of [profile.summary, profile.championSummary]) {
    for (const op of s?.ops ?? []) if (op.customCall) names.add(op.name);
    for (const cc of s?.customCalls ?? []) names.add(cc.name);
  }
  return names;
}

/** Launches per step: integers as they are, fractions (an average over steps) with 2 decimals. */
export function formatLaunches(count: number): string {
  return Number.isInteger(count) ? String(count) : formatFixed(count, 2);
}

/** `12.00 ms → 10.00 ms (−16.7%)` */
export function beforeAfter(n: DiffNumbers): string {
  const pct = n.deltaPct === null ? '' : ` (${formatSignedPercent(n.deltaPct)})`;
  return `${formatValue(n.before, MS)} → ${formatValue(n.after, MS)}${pct}`;
}

function noteFor(row: DiffRow, custom: boolean): string {
  const notes: string[] = [];
  if (row.status === 'added' || row.status === 'removed') notes.push(row.status);
  if (custom) notes.push('custom call, no cost model');
  return notes.join('; ');
}

function diffTableRow(row: DiffRow, custom: boolean): string[] {
  const added = row.status === 'added';
  const removed = row.status === 'removed';
  return [
    codeCell(row.name),
    row.program === '' || row.program === undefined ? EM_DASH : codeCell(row.program),
    cell(row.category),
    added ? EM_DASH : formatValue(row.before, MS),
    removed ? EM_DASH : formatValue(row.after, MS),
    formatSignedValue(row.delta, MS),
    row.deltaPct === null || added ? EM_DASH : formatSignedPercent(row.deltaPct),
    noteFor(row, custom),
  ];
}

/** The step, op and busy time lines above the table (device time and outside steps for whole-trace rows). */
function diffTotals(diff: TraceDiff, wholeTrace: boolean): string {
  if (wholeTrace) {
    const outside = diff.outsideMs === undefined ? '' : ` · outside steps ${beforeAfter(diff.outsideMs)}`;
    return `Whole trace (all devices), champion → candidate: device op time ${beforeAfter(diff.deviceMs)}${outside}.`;
  }
  const parts: string[] = [];
  if (diff.stepTimeMs) parts.push(`step ${beforeAfter(diff.stepTimeMs)}`);
  parts.push(`op time ${beforeAfter(diff.opTimeMs)}`);
  parts.push(`busy ${beforeAfter(diff.busyMs)}`);
  return `Per step, champion → candidate: ${parts.join(' · ')}.`;
}

/** Whether the profile's times are profiler-inflated: the traced step is not the measured time. */
export function profilerInflated(profile: ProfileEvidence): boolean {
  return profile.agreement?.agrees === false;
}

/** A row's share of the per-step op time (or of `total`), before and after, in percent. */
export function shares(
  row: DiffRow,
  diff: TraceDiff,
  total: DiffNumbers = diff.opTimeMs,
): { before: number; after: number; delta: number } {
  const before = total.before === 0 ? 0 : (100 * row.before) / total.before;
  const after = total.after === 0 ? 0 : (100 * row.after) / total.after;
  return { before, after, delta: after - before };
}

/** Diff rows by |Δ share of op time| (or of `total`; largest first), name breaking ties. */
export function topShareChanges(
  rows: readonly DiffRow[],
  diff: TraceDiff,
  count: number,
  total: DiffNumbers = diff.opTimeMs,
): DiffRow[] {
  return [...rows]
    .sort(
      (x, y) =>
        Math.abs(shares(y, diff, total).delta) - Math.abs(shares(x, diff, total).delta) ||
        (x.name < y.name ? -1 : x.name > y.name ? 1 : 0),
    )
    .slice(0, Math.max(0, count));
}

/** `12.3%`, percentage points signed: `+4.1 pp`. */
function sharePct(percent: number): string {
  return `${formatFixed(percent, 1)}%`;
}

function sharePp(delta: number): string {
  const v = formatFixed(Math.abs(delta), 1);
  return delta > 0.05 ? `+${v} pp` : delta < -0.05 ? `−${v} pp` : `${v} pp`;
}

/**
 * The hotspot diff when the trace's times are profiler-inflated: the measured change stays the
 * headline, the traced times are named for what they are, and ops are compared by their share of op
 * time per step (which overhead spread over every op distorts far less than the times).
 */
function inflatedDiffSection(
  profile: ProfileEvidence,
  diff: TraceDiff,
  rows: number,
  custom: Set<string>,
): string {
  const basis = hotspotBasis(diff);
  const of = basis.wholeTrace ? 'device op time over the whole trace' : 'op time per step';
  const top = topShareChanges(basis.rows, diff, rows, basis.total);
  const lines = [
    `#### Hotspots (profiler-inflated trace: shares of ${of}, top ${top.length} of ${basis.rows.length} ops by |Δ share|)`,
    `${inflationSentence(profile)} The measured change above is the result; below, each op's share of the ${of}.`,
  ];
  if (basis.wholeTrace) lines.push(WHOLE_TRACE_REASON);
  if (top.length > 0) {
    const header = ['op', 'program', 'category', 'share before', 'share after', 'Δ share', 'note'];
    const body = top.map((r) => {
      const sh = shares(r, diff, basis.total);
      return [
        codeCell(r.name),
        r.program === '' ? EM_DASH : codeCell(r.program),
        cell(r.category),
        r.status === 'added' ? EM_DASH : sharePct(sh.before),
        r.status === 'removed' ? EM_DASH : sharePct(sh.after),
        sharePp(sh.delta),
        noteFor(r, custom.has(r.name)),
      ];
    });
    lines.push(table(header, body, ['left', 'left', 'left', 'right', 'right', 'right', 'left']));
  }
  if (top.length < basis.rows.length) {
    lines.push(`_${basis.rows.length - top.length} more ops in the trace diff of the evidence bundle._`);
  }
  for (const w of diff.warnings) lines.push(`> warning: ${cell(w)}`);
  return lines.join('\n\n');
}

/** Why a hotspot table compares the whole trace rather than steps. */
const WHOLE_TRACE_REASON =
  "_Whole trace, all devices: a trace's steps hold too little of its device op time to compare per step (see the warnings)._";

/**
 * `Trace times are profiler-inflated, so they are not compared: the traced step is 10× the measured
 * median on the champion (17.18 ms vs 1.718 ms) and 1.77× on the candidate (2.383 ms vs 1.345 ms).`
 */
export function inflationSentence(profile: ProfileEvidence): string {
  const a = profile.agreement!;
  const sides = [
    ['champion', a.champion],
    ['candidate', a.candidate],
  ] as const;
  const parts = sides
    .filter(([, x]) => x.ratio !== null)
    .map(
      ([label, x]) =>
        `${formatFixed(x.ratio!, x.ratio! >= 10 ? 0 : 2)}× the measured median on the ${label} (${formatValue(x.tracedMs!, MS)} vs ${formatValue(x.measuredMs!, MS)})`,
    );
  return `Trace times are profiler-inflated, so they are not compared: the traced step is ${parts.join(' and ')}.`;
}

/**
 * The hotspot diff: top `rows` ops by |Δ time per step|, with added/removed ops and custom calls
 * flagged; when the profile does not agree with the measurement, by |Δ share| instead (see
 * inflatedDiffSection). Without a champion trace, the candidate's heaviest ops; without a profile, why.
 */
export function hotspotSection(profile: ProfileEvidence | undefined, rows: number): string | undefined {
  if (!profile) return undefined;
  const title = '#### Hotspots';
  if (profile.status !== 'done') {
    return `${title}\n\nProfile ${profile.status}${profile.reason ? `: ${cell(profile.reason)}` : ''}.`;
  }
  const custom = customCallNames(profile);
  const diff = profile.diff;
  if (diff && profilerInflated(profile)) return inflatedDiffSection(profile, diff, rows, custom);
  if (diff) {
    const basis = hotspotBasis(diff);
    const top = topChanges(basis.rows, rows);
    const lines = [
      `${title} (${basis.wholeTrace ? 'whole trace' : 'time per step'}, top ${top.length} of ${basis.rows.length} ops by |Δ|)`,
      ...(basis.wholeTrace ? [WHOLE_TRACE_REASON] : []),
      diffTotals(diff, basis.wholeTrace),
    ];
    if (top.length > 0) {
      const header = ['op', 'program', 'category', 'before', 'after', 'Δ', 'Δ%', 'note'];
      const body = top.map((r) => diffTableRow(r, custom.has(r.name)));
      lines.push(table(header, body, ['left', 'left', 'left', 'right', 'right', 'right', 'right', 'left']));
    }
    if (top.length < basis.rows.length) {
      lines.push(`_${basis.rows.length - top.length} more ops in the trace diff of the evidence bundle._`);
    }
    for (const w of diff.warnings) lines.push(`> warning: ${cell(w)}`);
    return lines.join('\n\n');
  }
  const summary = profile.summary;
  if (!summary) return `${title}\n\nThe profile produced no trace summary.`;
  const top = heaviestOps(summary.ops, rows);
  const inflated = profilerInflated(profile);
  const lines = [
    `${title} (candidate only, no champion trace to diff; top ${top.length} of ${summary.ops.length} ops by device time over the whole trace${inflated ? '; profiler-inflated trace: compare shares, not times' : ''})`,
  ];
  if (inflated) lines.push(inflationSentence(profile));
  if (top.length > 0) {
    const body = top.map((op) => [
      codeCell(op.name),
      op.program === '' ? EM_DASH : codeCell(op.program),
      cell(op.category),
      op.occurrences === 0 && op.timeMs === 0 ? 'outside steps' : formatValue(op.timeMs, MS),
      formatPercent(op.shareOfDevice / 100, 1),
      op.tflops === null || op.noCostModel ? EM_DASH : formatFixed(op.tflops, 2),
      rooflineCell(op),
      opNote(op),
    ]);
    lines.push(
      table(
        ['op', 'program', 'category', 'time per step', 'share of device time', 'TFLOP/s', 'roofline', 'note'],
        body,
        ['left', 'left', 'left', 'right', 'right', 'right', 'right', 'left'],
      ),
    );
  }
  return lines.join('\n\n');
}

/** `35% of 299 (memory)`: an op's place against the device roofline. */
function rooflineCell(op: OpRow): string {
  const r = op.roofline;
  if (r === null) return EM_DASH;
  if (r.attainableTflops === 0) return `${formatFixed(r.fraction * 100, 0)}% of HBM BW`;
  return `${formatFixed(r.fraction * 100, 0)}% of ${formatFixed(r.attainableTflops, r.attainableTflops >= 100 ? 0 : 1)} (${r.bound})`;
}

function opNote(op: OpRow): string {
  if (op.customCall)
    return op.noCostModel ? 'custom call, no cost model' : withPartialCost('custom call', op);
  return op.noCostModel ? 'no cost model' : withPartialCost('', op);
}

/** The heaviest ops of one summary over the whole trace, largest first (name breaks ties). */
export function heaviestOps(ops: readonly OpRow[], count: number): OpRow[] {
  return [...ops]
    .sort(
      (x, y) =>
        (y.totalMs ?? y.timeMs) - (x.totalMs ?? x.timeMs) ||
        y.timeMs - x.timeMs ||
        (x.name < y.name ? -1 : x.name > y.name ? 1 : 0),
    )
    .slice(0, Math.max(0, count));
}

/** Total custom-call launches per step, before and after (before is null without a champion trace). */
export function launchTotals(profile: ProfileEvidence): { before: number | null; after: number } | undefined {
  const diff = profile.diff;
  if (diff) {
    return {
      before: diff.customCalls.reduce((s, r) => s + r.countBefore, 0),
      after: diff.customCalls.reduce((s, r) => s + r.countAfter, 0),
    };
  }
  if (!profile.summary) return undefined;
  return { before: null, after: profile.summary.customCalls.reduce((s, r) => s + r.launches, 0) };
}

/** `6 → 4`, or `4` when only the candidate is known. */
export function launchesText(profile: ProfileEvidence): string | undefined {
  const totals = launchTotals(profile);
  if (!totals) return undefined;
  const after = formatLaunches(totals.after);
  return totals.before === null ? after : `${formatLaunches(totals.before)} → ${after}`;
}

/** Custom-call launches per step, total and per kernel (largest |Δ time| first, up to `rows`). */
export function customCallSection(profile: ProfileEvidence | undefined, rows: number): string | undefined {
  if (profile?.status !== 'done') return undefined;
  const text = launchesText(profile);
  if (text === undefined) return undefined;
  const lines = [
    `#### Custom calls\n\nCustom-call launches per step (Pallas/Mosaic and other hand-written kernels; XLA has no cost model for most of them): ${text}.`,
  ];
  const diff = profile.diff;
  if (diff && diff.customCalls.length > 0 && profilerInflated(profile)) {
    const top = topShareChanges(diff.customCalls, diff, rows);
    const body = top.map((r) => {
      const sh = shares(r, diff);
      return [
        codeCell(r.name),
        formatLaunches(r.countBefore),
        formatLaunches(r.countAfter),
        sharePct(sh.before),
        sharePct(sh.after),
        sharePp(sh.delta),
      ];
    });
    const header = ['kernel', 'launches before', 'launches after', 'share before', 'share after', 'Δ share'];
    lines.push(table(header, body, ['left', 'right', 'right', 'right', 'right', 'right']));
    if (top.length < diff.customCalls.length) {
      lines.push(`_${diff.customCalls.length - top.length} more kernels in the evidence bundle._`);
    }
  } else if (diff && diff.customCalls.length > 0) {
    const top = topChanges(diff.customCalls, rows);
    const body = top.map((r) => [
      codeCell(r.name),
      formatLaunches(r.countBefore),
      formatLaunches(r.countAfter),
      formatValue(r.before, MS),
      formatValue(r.after, MS),
      formatSignedValue(r.delta, MS),
    ]);
    const header = ['kernel', 'launches before', 'launches after', 'time before', 'time after', 'Δ'];
    lines.push(table(header, body, ['left', 'right', 'right', 'right', 'right', 'right']));
    if (top.length < diff.customCalls.length) {
      lines.push(`_${diff.customCalls.length - top.length} more kernels in the evidence bundle._`);
    }
  }
  return lines.join('\n\n');
}

/** One line per top change, for log entries and terminal output: `` `op` 5.210 ms → 3.900 ms (−1.310 ms, −25.1%) ``. */
export function hotspotLine(row: DiffRow, custom: boolean, wholeTrace = false): string {
  const before = row.status === 'added' ? 'absent' : formatValue(row.before, MS);
  const after = row.status === 'removed' ? 'absent' : formatValue(row.after, MS);
  const pct = row.deltaPct === null || row.status === 'added' ? '' : `, ${formatSignedPercent(row.deltaPct)}`;
  const flags = [
    row.status === 'added' || row.status === 'removed' ? row.status : '',
    custom ? 'custom call' : '',
    wholeTrace ? 'whole trace' : '',
  ]
    .filter((f) => f !== '')
    .join(', ');
  // Over the whole trace one op name can come from several programs: the line names which.
  const name = wholeTrace && row.program ? `${code(row.name)} in ${code(row.program)}` : code(row.name);
  return `${name} ${before} → ${after} (${formatSignedValue(row.delta, MS)}${pct})${flags ? ` [${flags}]` : ''}`;
}
