/** Human-readable tables for a trace summary and a trace diff (the CLI's default output). */
import {
  type DeviceSpread,
  type DiffNumbers,
  type DiffRow,
  isMarked,
  type OpRow,
  type OpSpread,
  type TraceDiff,
  type TraceSummary,
} from '../trace/index.js';

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

/** `41% of 299 TFLOP/s (memory)`: where an op sits against the device roofline. */
export function rooflineText(o: OpRow): string {
  const r = o.roofline;
  if (r === null) return '—';
  if (r.attainableTflops === 0) return `${(r.fraction * 100).toFixed(0)}% of HBM BW`;
  return `${(r.fraction * 100).toFixed(0)}% of ${formatRate(r.attainableTflops)} (${r.bound})`;
}

function formatRate(tflops: number): string {
  return tflops >= 100 ? tflops.toFixed(0) : tflops >= 1 ? tflops.toFixed(1) : tflops.toFixed(3);
}

function opNote(o: OpRow, labels: Record<string, string>): string {
  if (o.customCall) {
    const who =
      o.customCallKind === null || o.customCallKind === 'other'
        ? 'custom call'
        : `custom call (${labels[o.customCallKind]})`;
    return o.noCostModel ? `${who}, no cost model` : withPartialCost(who, o);
  }
  return o.noCostModel ? 'no cost model' : withPartialCost('', o);
}

/** Says how many of a row's variants lack FLOPs when the others have them (its FLOPs are a lower bound). */
export function withPartialCost(note: string, o: OpRow): string {
  const missing = o.variantsWithoutFlops ?? 0;
  if (missing === 0 || missing >= o.variants) return note;
  const part = `no FLOPs for ${missing} of ${o.variants} variants`;
  return note === '' ? part : `${note}, ${part}`;
}

const KIND_LABEL: Record<string, string> = {
  pallas: 'Pallas/Mosaic',
  'te-ffi': 'TE FFI',
  cudnn: 'cuDNN',
  cublas: 'cuBLAS',
  other: 'other',
};

/**
 * ROCm keeps XLA's CUDA names for its library calls (`__cublas$gemm` runs rocBLAS or hipBLASLt,
 * `__cudnn$conv…` runs MIOpen): on an AMD device the labels say what ran.
 */
const AMD_KIND_LABEL: Record<string, string> = {
  ...KIND_LABEL,
  cudnn: 'MIOpen',
  cublas: 'rocBLAS/hipBLASLt',
};

/** The custom-call labels for the devices of a summary. */
function kindLabels(s: TraceSummary): Record<string, string> {
  // The plane's own vendor stat; else the board the peak table matched (a JSON trace, `--device-kind`).
  const amd =
    s.devices.some((d) => /^AMD\b/i.test(d.vendor ?? '')) || /^AMD\b/.test(s.roofline.peak?.name ?? '');
  return amd ? AMD_KIND_LABEL : KIND_LABEL;
}

export function formatSummary(s: TraceSummary, top = 15): string {
  const out: string[] = [];
  const src = s.source;
  out.push(
    `${src.path} (${src.format}, ${(src.bytes / 1e6).toFixed(1)} MB, ${src.events.toLocaleString('en-US')} events, read ${src.passes}×)`,
  );
  const dev = s.devices;
  const types = [...new Set(dev.map((d) => d.type).filter((t) => t !== undefined))];
  const compute = dev.filter((d) => d.compute).length;
  const devInfo = types.join(', ');
  out.push(
    `Platform: ${s.platform.toUpperCase()}, ${dev.length} device(s)${compute < dev.length ? ` (${compute} ran compute)` : ''}: ${clip(dev.map((d) => d.name).join(', '), 100)}${devInfo === '' ? '' : ` (${devInfo})`}`,
  );
  const peak = s.roofline.peak;
  out.push(
    peak === null
      ? 'Roofline: no device peaks (unknown device; `--device-kind` names it for JSON traces)'
      : `Roofline: ${peak.name}, ${formatRate(peak.bf16FlopsPerSecond / 1e12)} TFLOP/s bf16${peak.fp32FlopsPerSecond === null ? '' : `, ${formatRate(peak.fp32FlopsPerSecond / 1e12)} fp32`}, ${(peak.bytesPerSecond / 1e9).toFixed(0)} GB/s HBM (from ${s.roofline.source})`,
  );
  const st = s.steps;
  const t = s.total;
  const wholeTrace = `Whole trace: ${formatMs(t.deviceMs)} of device op time (all devices), ${formatMs(t.inStepsMs)} in steps, ${formatMs(t.outsideMs)} outside`;
  const coverage = t.deviceMs === 0 ? 100 : (100 * t.inStepsMs) / t.deviceMs;
  if (isMarked(st.detector)) {
    out.push(
      `Steps: ${count(st.count)} per device, by ${st.detector} (${st.confidence} confidence): ${st.detail}`,
    );
  } else {
    // No step markers: what is certain (the whole trace) comes before what is inferred.
    out.push(
      wholeTrace,
      `Steps: none marked in the trace; inferred ${count(st.count)} per device by ${st.detector} (${st.confidence} confidence, ${coverage.toFixed(0)}% of device op time in them): ${st.detail}`,
    );
  }
  const others = st.estimates.filter((e) => e.detector !== st.detector);
  if (others.length > 0) {
    out.push(
      `  cross-check: ${others.map((e) => `${e.detector} ${count(e.perDevice)} (${e.confidence})`).join(', ')}`,
    );
  }
  const time =
    st.timeMs === null
      ? 'step time unknown'
      : `step time mean ${formatMs(st.timeMs.mean)} (median ${formatMs(st.timeMs.median)}, min ${formatMs(st.timeMs.min)}, max ${formatMs(st.timeMs.max)})`;
  out.push(
    `Per step: ${time}; busy ${formatMs(st.busyMs)}; idle ${st.idleMs === null ? '—' : formatMs(st.idleMs)}; op time ${formatMs(st.opMs)}`,
  );
  if (st.deviceSpread !== undefined) out.push(`  ${spreadLine(st.deviceSpread, st.count)}`);
  if (st.opSpread !== undefined) out.push(`  ${opSpreadLine(st.opSpread)}`);
  if (isMarked(st.detector)) out.push(wholeTrace);

  if (s.programs.length > 1) {
    const programs = s.programs.slice(0, top);
    out.push('', `Programs (${programs.length} of ${s.programs.length}) by device time`);
    out.push(
      textTable(
        ['program', 'device time', 'share', 'in steps', 'executions', 'devices', 'ops'],
        programs.map((p) => [
          clip(p.name, 48),
          formatMs(p.deviceMs),
          `${p.shareOfDevice.toFixed(1)}%`,
          formatMs(p.inStepsMs),
          p.executions === null ? '—' : String(p.executions),
          String(p.devices),
          String(p.ops),
        ]),
        [false, true, true, true, true, true, true],
      ),
    );
  }

  const ops = s.ops.slice(0, top);
  const labels = kindLabels(s);
  out.push(
    '',
    `Top ${ops.length} of ${s.ops.length} ops by device time (whole trace; per step inside steps)`,
  );
  // Per-step times are means over devices without step windows: beside each, its slowest device's.
  const slowest = st.opSpread !== undefined;
  const withSlowest = <T>(cells: T[], cell: () => T): T[] =>
    slowest ? [...cells.slice(0, 6), cell(), ...cells.slice(6)] : cells;
  out.push(
    textTable(
      withSlowest(
        [
          'op',
          'program',
          'category',
          'total',
          'share',
          'time/step',
          'count/step',
          'TFLOP/s',
          'GB/s',
          'FLOP/B',
          'roofline',
          'note',
        ],
        () => 'slowest device/step',
      ),
      ops.map((o) =>
        withSlowest(
          [
            clip(o.name, 40),
            clip(o.program || '—', 28),
            clip(o.category, 20),
            formatMs(o.totalMs),
            `${o.shareOfDevice.toFixed(1)}%`,
            o.timeMs === 0 && o.occurrences === 0 ? 'outside' : formatMs(o.timeMs),
            count(o.occurrences),
            o.tflops === null || o.noCostModel ? '—' : o.tflops.toFixed(2),
            o.gbps === null ? '—' : o.gbps.toFixed(0),
            o.intensity === null ? '—' : o.intensity.toFixed(1),
            rooflineText(o),
            opNote(o, labels),
          ],
          () => (o.timeMs === 0 && o.occurrences === 0 ? 'outside' : formatMs(o.slowestDeviceMs ?? 0)),
        ),
      ),
      withSlowest([false, false, false, true, true, true, true, true, true, true, false, false], () => true),
    ),
  );

  const cats = s.categories.slice(0, top);
  out.push('', 'By category (per step)');
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
    out.push('', 'By scope (tf_op, per step)');
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
  out.push('', s.customCalls.length === 0 ? 'Custom calls: none' : 'Custom calls');
  if (s.customCalls.length > 0) {
    out.push(
      textTable(
        ['kernel', 'program', 'kind', 'scope', 'total', 'launches/step', 'time/step', 'cost model'],
        s.customCalls
          .slice(0, top)
          .map((c) => [
            clip(c.name, 40),
            clip(c.program || '—', 28),
            labels[c.kind] ?? c.kind,
            clip(c.scope || '—', 40),
            formatMs(c.totalMs),
            count(c.launches),
            formatMs(c.timeMs),
            c.noCostModel ? 'none (no FLOPs)' : 'HLO',
          ]),
        [false, false, false, false, true, true, true, false],
      ),
    );
  }
  if (s.outsideSteps.opMs > 0) {
    // Counted in the op table's rows (op and program), as the reader sees them.
    const only = s.ops.filter((o) => o.timeMs === 0 && o.occurrences === 0 && o.totalMs > 0).length;
    out.push(
      '',
      `Outside steps: ${formatMs(s.outsideSteps.opMs)} of op time, in ${s.outsideSteps.ops} of the ${s.ops.length} op rows (${only} of them only outside steps: "outside" in time/step)`,
    );
  }
  for (const n of s.notes) out.push(`note: ${n}`);
  for (const w of s.warnings) out.push(`warning: ${w}`);
  return out.join('\n');
}

/**
 * The whole-trace op rows to show: all of them when steps are unreliable, else those of ops that ran
 * only outside steps (the per-step table has no row for them).
 */
function wholeTraceRows(d: TraceDiff): DiffRow[] {
  if (d.wholeTrace === undefined) return [];
  if (d.basis === 'whole-trace') return d.wholeTrace;
  const inSteps = new Set(d.ops.map((r) => `${r.program}\u0000${r.name}`));
  return d.wholeTrace.filter((r) => !inSteps.has(`${r.program}\u0000${r.name}`));
}

function change(n: DiffNumbers): string {
  return `${formatMs(n.before)} → ${formatMs(n.after)} (${signedPct(n.deltaPct)})`;
}

function diffTable(rows: readonly DiffRow[], top: number, label: string, perStep = true): string[] {
  const shown = rows.slice(0, top);
  const changed = rows.filter((r) => r.status !== 'unchanged').length;
  return [
    `${label}: top ${shown.length} of ${rows.length} by |Δ ${perStep ? 'time per step' : 'device time'}| (${changed} changed)`,
    textTable(
      [
        'name',
        'program',
        'category',
        'before',
        'after',
        'Δ',
        'Δ%',
        perStep ? 'count/step' : 'count',
        'status',
      ],
      shown.map((r) => [
        clip(r.name, 48),
        clip(r.program || '—', 28),
        clip(r.category, 24),
        r.status === 'added' ? '—' : formatMs(r.before),
        r.status === 'removed' ? '—' : formatMs(r.after),
        signedMs(r.delta),
        signedPct(r.deltaPct),
        `${count(r.countBefore)} → ${count(r.countAfter)}`,
        r.status,
      ]),
      [false, false, false, true, true, true, true, true, false],
    ),
  ];
}

export function formatDiff(d: TraceDiff, top = 15): string {
  const out: string[] = [];
  const sideLine = (label: string, x: TraceDiff['before']): string =>
    `${label} ${x.path} (${x.platform}${x.deviceTypes.length > 0 ? ` ${x.deviceTypes.join(', ')}` : ''}, ${x.devices} device(s), ${count(x.steps)} steps by ${x.detector})`;
  out.push(sideLine('before:', d.before), sideLine('after: ', d.after));
  const totals = [
    d.stepTimeMs === null ? undefined : `step time ${change(d.stepTimeMs)}`,
    `op time ${change(d.opTimeMs)}`,
    `busy ${change(d.busyMs)}`,
  ].filter((x) => x !== undefined);
  out.push(`Per step: ${totals.join('; ')}`);
  out.push(
    `Whole trace: device op time ${change(d.deviceMs)}${d.outsideMs === undefined ? '' : `, outside steps ${change(d.outsideMs)}`}`,
  );
  // Ops outside steps are only in the whole-trace table; it leads when steps are unreliable.
  const wholeRows = wholeTraceRows(d);
  const whole =
    wholeRows.length === 0
      ? []
      : [
          '',
          ...diffTable(
            wholeRows,
            top,
            d.basis === 'whole-trace'
              ? 'Ops over the whole trace (all devices)'
              : 'Ops only outside steps (whole trace, all devices)',
            false,
          ),
        ];
  if (d.basis === 'whole-trace') out.push(...whole);
  out.push('', ...diffTable(d.ops, top, 'Ops in steps'));
  if (d.basis !== 'whole-trace') out.push(...whole);
  out.push('', ...diffTable(d.categories, top, 'Categories'));
  if (d.customCalls.length > 0)
    out.push('', ...diffTable(d.customCalls, top, 'Custom calls (no cost model)'));
  out.push(
    '',
    `note: changes under ${d.unchangedBelowPct}% of op time per step (whole-trace table: of device op time) count as unchanged`,
  );
  for (const w of d.warnings) out.push(`warning: ${w}`);
  return out.join('\n');
}

/**
 * `step time is the slowest of 4 devices each step (mostly /device:TPU:1, 31 of 100 steps); device
 * mean 784.145 ms, slowest − fastest 66.043 ms (7.8%) on average`
 */
/** With several devices and no step windows of their own: per-step op times are means over devices. */
function opSpreadLine(spread: OpSpread): string {
  return `op times per step are the mean of ${spread.devices} devices (no step windows of their own); the slowest, ${spread.slowest}, ${formatMs(spread.slowestMs)} per step (the fastest ${formatMs(spread.fastestMs)}), and each op's slowest device is in the op table`;
}

function spreadLine(spread: DeviceSpread, steps: number): string {
  const pct = spread.meanMs === 0 ? 0 : (100 * spread.spreadMs) / spread.meanMs;
  return `step time is the slowest of ${spread.devices} devices each step (mostly ${spread.slowest}, ${spread.slowestSteps} of ${Math.round(steps)} steps); device mean ${formatMs(spread.meanMs)}, slowest − fastest ${formatMs(spread.spreadMs)} (${pct.toFixed(1)}%) on average`;
}
