/** Human-readable tables for a trace summary and a trace diff (the CLI's default output). */
import type { DiffNumbers, DiffRow, TraceDiff, TraceSummary } from './types.js';

/** A duration in ms with a unit that keeps small values readable: `12.345 ms`, `8.200 µs`, `350 ns`. */
export function formatMs(ms: number): string {
  const a = Math.abs(ms);
  if (a >= 1 || a === 0) return `${ms.toFixed(3)} ms`;
  if (a >= 1e-3) return `${(ms * 1e3).toFixed(3)} µs`;
  return `${(ms * 1e6).toFixed(0)} ns`;
}

function signedMs(ms: number): string {
  return ms > 0 ? `+${formatMs(ms)}` : ms < 0 ? `−${formatMs(-ms)}` : formatMs(0);
}

function signedPct(pct: number | null): string {
  if (pct === null) return '—';
  const s = `${Math.abs(pct).toFixed(1)}%`;
  return pct > 0 ? `+${s}` : pct < 0 ? `−${s}` : s;
}

function count(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(2);
}

/** Lay out rows as columns; `right` marks right-aligned columns. */
export function textTable(header: string[], rows: string[][], right: boolean[]): string {
  const width = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((v, c) => (right[c] ? v.padStart(width[c]!) : v.padEnd(width[c]!)))
      .join('  ')
      .trimEnd();
  return [line(header), line(width.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

function clip(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

export function formatSummary(s: TraceSummary, top = 15): string {
  const out: string[] = [];
  const src = s.source;
  out.push(
    `${src.path} (${src.format}, ${(src.bytes / 1e6).toFixed(1)} MB, ${src.events.toLocaleString('en-US')} events, read ${src.passes}×)`,
  );
  const dev = s.devices;
  const types = [...new Set(dev.map((d) => d.type).filter((t) => t !== undefined))];
  const peak = dev.find((d) => d.peakTflops !== undefined)?.peakTflops;
  const devInfo = [types.join(', '), peak === undefined ? '' : `${peak} TFLOP/s peak`]
    .filter((x) => x !== '')
    .join(', ');
  out.push(
    `Platform: ${s.platform.toUpperCase()}, ${dev.length} device(s): ${clip(dev.map((d) => d.name).join(', '), 100)}${devInfo === '' ? '' : ` (${devInfo})`}`,
  );
  const st = s.steps;
  out.push(`Steps: ${count(st.count)} per device, by ${st.detector}: ${st.detail}`);
  const time =
    st.timeMs === null
      ? 'step time unknown'
      : `step time mean ${formatMs(st.timeMs.mean)} (median ${formatMs(st.timeMs.median)}, min ${formatMs(st.timeMs.min)}, max ${formatMs(st.timeMs.max)})`;
  out.push(
    `Per step: ${time}; busy ${formatMs(st.busyMs)}; idle ${st.idleMs === null ? '—' : formatMs(st.idleMs)}; op time ${formatMs(st.opMs)}`,
  );

  const ops = s.ops.slice(0, top);
  out.push('', `Top ${ops.length} of ${s.ops.length} ops by time per step`);
  out.push(
    textTable(
      ['op', 'category', 'time/step', 'share', 'count/step', 'TFLOP/s', 'note'],
      ops.map((o) => [
        clip(o.name, 48),
        clip(o.category, 24),
        formatMs(o.timeMs),
        `${o.shareOfOps.toFixed(1)}%`,
        count(o.occurrences),
        o.tflops === null || o.noCostModel ? '—' : o.tflops.toFixed(2),
        o.customCall ? 'custom call, no cost model' : o.noCostModel ? 'no cost model' : '',
      ]),
      [false, false, true, true, true, true, false],
    ),
  );

  const cats = s.categories.slice(0, top);
  out.push('', 'By category');
  out.push(
    textTable(
      ['category', 'time/step', 'share', 'count/step', 'ops'],
      cats.map((c) => [
        clip(c.name, 40),
        formatMs(c.timeMs),
        `${c.shareOfOps.toFixed(1)}%`,
        count(c.occurrences),
        String(c.ops),
      ]),
      [false, true, true, true, true],
    ),
  );
  if (s.scopes.some((x) => x.name !== '(none)')) {
    out.push('', 'By scope (tf_op)');
    out.push(
      textTable(
        ['scope', 'time/step', 'share', 'ops'],
        s.scopes
          .slice(0, top)
          .map((c) => [clip(c.name, 72), formatMs(c.timeMs), `${c.shareOfOps.toFixed(1)}%`, String(c.ops)]),
        [false, true, true, true],
      ),
    );
  }
  out.push(
    '',
    s.customCalls.length === 0
      ? 'Custom calls: none'
      : 'Custom calls (no cost model: XLA reports no FLOPs for them)',
  );
  if (s.customCalls.length > 0) {
    out.push(
      textTable(
        ['kernel', 'scope', 'launches/step', 'time/step', 'share'],
        s.customCalls.map((c) => [
          clip(c.name, 40),
          clip(c.scope || '—', 48),
          count(c.launches),
          formatMs(c.timeMs),
          `${c.shareOfOps.toFixed(1)}%`,
        ]),
        [false, false, true, true, true],
      ),
    );
  }
  if (s.outsideSteps.opMs > 0) {
    out.push(
      '',
      `Outside steps (not counted above): ${formatMs(s.outsideSteps.opMs)} of op time in ${s.outsideSteps.ops} op(s)`,
    );
  }
  for (const n of s.notes) out.push(`note: ${n}`);
  for (const w of s.warnings) out.push(`warning: ${w}`);
  return out.join('\n');
}

function change(n: DiffNumbers): string {
  return `${formatMs(n.before)} → ${formatMs(n.after)} (${signedPct(n.deltaPct)})`;
}

function diffTable(rows: readonly DiffRow[], top: number, label: string): string[] {
  const shown = rows.slice(0, top);
  const changed = rows.filter((r) => r.status !== 'unchanged').length;
  return [
    `${label}: top ${shown.length} of ${rows.length} by |Δ time per step| (${changed} changed)`,
    textTable(
      ['name', 'category', 'before', 'after', 'Δ', 'Δ%', 'count/step', 'status'],
      shown.map((r) => [
        clip(r.name, 48),
        clip(r.category, 24),
        r.status === 'added' ? '—' : formatMs(r.before),
        r.status === 'removed' ? '—' : formatMs(r.after),
        signedMs(r.delta),
        signedPct(r.deltaPct),
        `${count(r.countBefore)} → ${count(r.countAfter)}`,
        r.status,
      ]),
      [false, false, true, true, true, true, true, false],
    ),
  ];
}

export function formatDiff(d: TraceDiff, top = 15): string {
  const out: string[] = [];
  const sideLine = (label: string, x: TraceDiff['before']): string =>
    `${label} ${x.path} (${x.platform}, ${count(x.steps)} steps by ${x.detector})`;
  out.push(sideLine('before:', d.before), sideLine('after: ', d.after));
  const totals = [
    d.stepTimeMs === null ? undefined : `step time ${change(d.stepTimeMs)}`,
    `op time ${change(d.opTimeMs)}`,
    `busy ${change(d.busyMs)}`,
  ].filter((x) => x !== undefined);
  out.push(`Per step: ${totals.join('; ')}`);
  out.push('', ...diffTable(d.ops, top, 'Ops'));
  out.push('', ...diffTable(d.categories, top, 'Categories'));
  if (d.customCalls.length > 0)
    out.push('', ...diffTable(d.customCalls, top, 'Custom calls (no cost model)'));
  out.push('', `note: changes under ${d.unchangedBelowPct}% of op time per step count as unchanged`);
  for (const w of d.warnings) out.push(`warning: ${w}`);
  return out.join('\n');
}
