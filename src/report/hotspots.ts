/** The profile sections: hotspot diff (champion → candidate, time per step) and custom-call launches. */
import type { DiffNumbers, DiffRow, OpRow, TraceDiff } from '../evidence/analysis/types.js';
import type { ProfileEvidence } from '../evidence/iteration.js';
import {
  EM_DASH,
  formatFixed,
  formatPercent,
  formatSignedPercent,
  formatSignedValue,
  formatValue,
} from './format.js';
import { cell, code, codeCell, table } from './markdown.js';

/** Rows of the hotspot table in a comment unless told otherwise. */
export const DEFAULT_HOTSPOT_ROWS = 10;
const MS = 'ms';

/** Diff rows by |Δ| (largest first), name breaking ties so the order never depends on input order. */
export function topChanges(rows: readonly DiffRow[], count: number): DiffRow[] {
  return [...rows]
    .sort((x, y) => Math.abs(y.delta) - Math.abs(x.delta) || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0))
    .slice(0, Math.max(0, count));
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
    cell(row.category),
    added ? EM_DASH : formatValue(row.before, MS),
    removed ? EM_DASH : formatValue(row.after, MS),
    formatSignedValue(row.delta, MS),
    row.deltaPct === null || added ? EM_DASH : formatSignedPercent(row.deltaPct),
    noteFor(row, custom),
  ];
}

/** The step, op and busy time lines above the table. */
function diffTotals(diff: TraceDiff): string {
  const parts: string[] = [];
  if (diff.stepTimeMs) parts.push(`step ${beforeAfter(diff.stepTimeMs)}`);
  parts.push(`op time ${beforeAfter(diff.opTimeMs)}`);
  parts.push(`busy ${beforeAfter(diff.busyMs)}`);
  return `Per step, champion → candidate: ${parts.join(' · ')}.`;
}

/**
 * The hotspot diff: top `rows` ops by |Δ time per step|, with added/removed ops and custom calls
 * flagged. Without a champion trace, the candidate's heaviest ops; without a profile, why.
 */
export function hotspotSection(profile: ProfileEvidence | undefined, rows: number): string | undefined {
  if (!profile) return undefined;
  const title = '#### Hotspots';
  if (profile.status !== 'done') {
    return `${title}\n\nProfile ${profile.status}${profile.reason ? `: ${cell(profile.reason)}` : ''}.`;
  }
  const custom = customCallNames(profile);
  const diff = profile.diff;
  if (diff) {
    const top = topChanges(diff.ops, rows);
    const lines = [
      `${title} (time per step, top ${top.length} of ${diff.ops.length} ops by |Δ|)`,
      diffTotals(diff),
    ];
    if (top.length > 0) {
      const header = ['op', 'category', 'before', 'after', 'Δ', 'Δ%', 'note'];
      const body = top.map((r) => diffTableRow(r, custom.has(r.name)));
      lines.push(table(header, body, ['left', 'left', 'right', 'right', 'right', 'right', 'left']));
    }
    if (top.length < diff.ops.length) {
      lines.push(`_${diff.ops.length - top.length} more ops in the trace diff of the evidence bundle._`);
    }
    for (const w of diff.warnings) lines.push(`> warning: ${cell(w)}`);
    return lines.join('\n\n');
  }
  const summary = profile.summary;
  if (!summary) return `${title}\n\nThe profile produced no trace summary.`;
  const top = heaviestOps(summary.ops, rows);
  const lines = [
    `${title} (candidate only, no champion trace to diff; top ${top.length} ops by time per step)`,
  ];
  if (top.length > 0) {
    const body = top.map((op) => [
      codeCell(op.name),
      cell(op.category),
      formatValue(op.timeMs, MS),
      formatPercent(op.shareOfOps / 100, 1),
      op.customCall ? 'custom call, no cost model' : op.noCostModel ? 'no cost model' : '',
    ]);
    lines.push(
      table(['op', 'category', 'time', 'share of ops', 'note'], body, [
        'left',
        'left',
        'right',
        'right',
        'left',
      ]),
    );
  }
  return lines.join('\n\n');
}

/** The heaviest ops of one summary, largest first (name breaks ties). */
export function heaviestOps(ops: readonly OpRow[], count: number): OpRow[] {
  return [...ops]
    .sort((x, y) => y.timeMs - x.timeMs || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0))
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
    `#### Custom calls\n\nCustom-call launches per step (Pallas/Mosaic kernels; XLA has no cost model for them): ${text}.`,
  ];
  const diff = profile.diff;
  if (diff && diff.customCalls.length > 0) {
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
export function hotspotLine(row: DiffRow, custom: boolean): string {
  const before = row.status === 'added' ? 'absent' : formatValue(row.before, MS);
  const after = row.status === 'removed' ? 'absent' : formatValue(row.after, MS);
  const pct = row.deltaPct === null || row.status === 'added' ? '' : `, ${formatSignedPercent(row.deltaPct)}`;
  const flags = [
    row.status === 'added' || row.status === 'removed' ? row.status : '',
    custom ? 'custom call' : '',
  ]
    .filter((f) => f !== '')
    .join(', ');
  return `${code(row.name)} ${before} → ${after} (${formatSignedValue(row.delta, MS)}${pct})${flags ? ` [${flags}]` : ''}`;
}
