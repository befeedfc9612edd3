/**
 * The diff of two trace summaries, in the style of HTA's TraceDiff (`compare_traces` + `ops_diff`):
 * per op (name without `.N`), per category and per custom call, the time per step before and after,
 * Δ, Δ%, occurrences per step, and a status (added / removed / increased / decreased / unchanged),
 * sorted by |Δ|. Per-step normalisation lets traces with different step counts be compared; the same
 * code serves TPU, GPU and CPU summaries. Ops outside steps have no per-step time: every op is also
 * compared over the whole trace, and that comparison leads when either side's steps are unreliable.
 */
import { moduleName } from './steps.js';
import {
  type DiffNumbers,
  type DiffRow,
  type DiffStatus,
  type OpRow,
  TRACE_DIFF_SCHEMA,
  type TraceDiff,
  type TraceSummary,
} from './types.js';

export interface DiffOptions {
  /** Changes smaller than this percent of op time per step count as unchanged. Default 0.5. */
  unchangedBelowPct?: number;
}

const DEFAULT_UNCHANGED_PCT = 0.5;

interface Entry {
  name: string;
  program: string;
  category: string;
  timeMs: number;
  count: number;
}

export function diffSummaries(before: TraceSummary, after: TraceSummary, opts: DiffOptions = {}): TraceDiff {
  const unchangedBelowPct = opts.unchangedBelowPct ?? DEFAULT_UNCHANGED_PCT;
  const threshold = (Math.max(before.steps.opMs, after.steps.opMs) * unchangedBelowPct) / 100;
  const rows = (b: Entry[], a: Entry[]): DiffRow[] => diffRows(b, a, threshold);
  const wholeThreshold = (Math.max(before.total.deviceMs, after.total.deviceMs) * unchangedBelowPct) / 100;
  const beforeMean = before.steps.timeMs?.mean;
  const afterMean = after.steps.timeMs?.mean;
  return {
    schema: TRACE_DIFF_SCHEMA,
    before: side(before),
    after: side(after),
    stepTimeMs: beforeMean === undefined || afterMean === undefined ? null : numbers(beforeMean, afterMean),
    opTimeMs: numbers(before.steps.opMs, after.steps.opMs),
    busyMs: numbers(before.steps.busyMs, after.steps.busyMs),
    deviceMs: numbers(before.total.deviceMs, after.total.deviceMs),
    outsideMs: numbers(before.total.outsideMs, after.total.outsideMs),
    ops: rows(opEntries(before), opEntries(after)),
    wholeTrace: diffRows(wholeTraceEntries(before), wholeTraceEntries(after), wholeThreshold),
    basis: unreliableSteps(before) || unreliableSteps(after) ? 'whole-trace' : 'per-step',
    categories: rows(categoryEntries(before), categoryEntries(after)),
    customCalls: rows(customCallEntries(before), customCallEntries(after)),
    unchangedBelowPct,
    warnings: warnings(before, after),
  };
}

function side(s: TraceSummary): TraceDiff['before'] {
  return {
    path: s.source.path,
    platform: s.platform,
    detector: s.steps.detector,
    steps: s.steps.count,
    devices: s.devices.filter((d) => d.compute).length,
    // A TPU names its type; a GPU plane its vendor, compute capability, cores and memory.
    deviceTypes: [
      ...new Set(s.devices.map((d) => d.type ?? d.hardware).filter((t) => t !== undefined)),
    ].sort(),
    programs: [...new Set(s.programs.map((p) => p.module))].sort(),
  };
}

/**
 * Ops inside steps (ops only outside steps have no per-step time: `wholeTraceEntries` has them), by module name and op:
 * the compilations of one module (different ids) are summed.
 */
function opEntries(s: TraceSummary): Entry[] {
  const ops = s.ops.filter((o) => !(o.occurrences === 0 && o.timeMs === 0));
  return mergeByModule(
    ops.map((o) => ({
      name: o.name,
      program: moduleName(o.program),
      category: o.category,
      timeMs: o.timeMs,
      count: o.occurrences,
    })),
    (x, y) => round(x + y),
  );
}

/** Every op over the whole trace (all devices, inside and outside steps), by module name and op. */
function wholeTraceEntries(s: TraceSummary): Entry[] {
  return mergeByModule(
    s.ops.map((o) => ({
      name: o.name,
      program: moduleName(o.program),
      category: o.category,
      timeMs: o.totalMs,
      count: o.totalCount,
    })),
    (x, y) => round(x + y),
  );
}

/**
 * Steps that describe too little of the trace to compare per step: low confidence, inferred or
 * holding under half the device op time. One whole-trace step is per-device totals already.
 */
function unreliableSteps(s: TraceSummary): boolean {
  return s.steps.confidence === 'low' && s.steps.detector !== 'whole-trace';
}

/** Ops that ran only outside steps: in the whole-trace comparison, not in the per-step one. */
function outsideOnly(s: TraceSummary): number {
  return s.ops.filter((o) => o.occurrences === 0 && o.timeMs === 0 && o.totalMs > 0).length;
}

/** Entries summed by module name and name; `addTime` says how two times add (rounded or not). */
function mergeByModule(entries: readonly Entry[], addTime: (x: number, y: number) => number): Entry[] {
  const byKey = new Map<string, Entry>();
  for (const entry of entries) {
    const key = `${entry.program}\u0000${entry.name}`;
    const e = byKey.get(key);
    if (e === undefined) byKey.set(key, { ...entry });
    else {
      e.timeMs = addTime(e.timeMs, entry.timeMs);
      e.count += entry.count;
    }
  }
  return [...byKey.values()];
}

function categoryEntries(s: TraceSummary): Entry[] {
  return s.categories.map((c) => ({
    name: c.name,
    program: '',
    category: c.name,
    timeMs: c.timeMs,
    count: c.occurrences,
  }));
}

/** Custom calls by program and name (scopes merged). */
function customCallEntries(s: TraceSummary): Entry[] {
  const calls = s.customCalls.filter((c) => !(c.launches === 0 && c.timeMs === 0));
  return mergeByModule(
    calls.map((c) => ({
      name: c.name,
      program: moduleName(c.program),
      category: 'custom-call',
      timeMs: c.timeMs,
      count: c.launches,
    })),
    (x, y) => x + y,
  );
}

function diffRows(before: readonly Entry[], after: readonly Entry[], threshold: number): DiffRow[] {
  const keyOf = (e: Entry) => `${e.program}\u0000${e.name}`;
  const b = new Map(before.map((e) => [keyOf(e), e]));
  const a = new Map(after.map((e) => [keyOf(e), e]));
  const keys = new Set([...b.keys(), ...a.keys()]);
  const rows: DiffRow[] = [];
  for (const key of keys) {
    const x = b.get(key);
    const y = a.get(key);
    const name = (x ?? y)!.name;
    const program = (x ?? y)!.program;
    const n = numbers(x?.timeMs ?? 0, y?.timeMs ?? 0);
    let status: DiffStatus;
    if (x === undefined) status = 'added';
    else if (y === undefined) status = 'removed';
    else if (Math.abs(n.delta) < threshold) status = 'unchanged';
    else status = n.delta > 0 ? 'increased' : 'decreased';
    rows.push({
      name,
      program,
      category: y?.category ?? x?.category ?? '',
      status,
      ...n,
      countBefore: x?.count ?? 0,
      countAfter: y?.count ?? 0,
    });
  }
  return rows.sort(
    (p, q) =>
      Math.abs(q.delta) - Math.abs(p.delta) ||
      (p.name < q.name ? -1 : p.name > q.name ? 1 : 0) ||
      (p.program < q.program ? -1 : p.program > q.program ? 1 : 0),
  );
}

function numbers(before: number, after: number): DiffNumbers {
  const delta = round(after - before);
  return { before, after, delta, deltaPct: before === 0 ? null : Math.round((1e6 * delta) / before) / 1e4 };
}

function warnings(before: TraceSummary, after: TraceSummary): string[] {
  const out: string[] = [];
  if (before.platform !== after.platform) {
    out.push(
      `the traces ran on different platforms (${before.platform} → ${after.platform}); op names may not match`,
    );
  }
  if (before.steps.detector !== after.steps.detector) {
    out.push(
      `steps were found differently (${before.steps.detector} → ${after.steps.detector}); per-step numbers may not be comparable`,
    );
  }
  const b = side(before);
  const a = side(after);
  if (b.devices !== a.devices) {
    out.push(
      `the traces ran on different numbers of devices (${b.devices} → ${a.devices}); per-step times are per device`,
    );
  }
  if (b.deviceTypes.length > 0 && a.deviceTypes.length > 0 && b.deviceTypes.join() !== a.deviceTypes.join()) {
    out.push(
      `the traces ran on different devices (${b.deviceTypes.join(', ')} → ${a.deviceTypes.join(', ')}); times are not comparable`,
    );
  }
  const gone = b.programs.filter((p) => !a.programs.includes(p));
  const added = a.programs.filter((p) => !b.programs.includes(p));
  if (gone.length > 0 || added.length > 0) {
    const part = (label: string, list: string[]) =>
      list.length === 0
        ? []
        : [`${label} ${list.slice(0, 4).join(', ')}${list.length > 4 ? ` (+${list.length - 4})` : ''}`];
    out.push(
      `the traces ran different programs (${[...part('only before:', gone), ...part('only after:', added)].join('; ')}); ops of those programs show as added or removed`,
    );
  }
  out.push(...recompiled(before, after), ...dtypeChanges(before, after));
  const stepProgram = (s: TraceSummary) =>
    s.steps.program === undefined ? undefined : moduleName(s.steps.program);
  if (
    stepProgram(before) !== undefined &&
    stepProgram(after) !== undefined &&
    stepProgram(before) !== stepProgram(after)
  ) {
    out.push(
      `steps are executions of different programs (${stepProgram(before)} → ${stepProgram(after)}); per-step numbers compare different work`,
    );
  }
  for (const [label, s] of [
    ['before', before],
    ['after', after],
  ] as const) {
    if (s.source.capped)
      out.push(`the ${label} trace hit the profiler's event cap; its later steps are missing`);
    if (unreliableSteps(s))
      out.push(
        `the ${label} trace's steps are unreliable (${s.steps.detector}, low confidence: ${pctOf(s.total.inStepsMs, s.total.deviceMs)}% of device op time in steps): compare ops by the whole-trace table`,
      );
    else if (s.steps.confidence === 'low')
      out.push(
        `the ${label} trace's steps were found with low confidence (${s.steps.detector}): ${s.steps.detail}`,
      );
  }
  const outside = [outsideOnly(before), outsideOnly(after)];
  if (outside[0]! + outside[1]! > 0) {
    out.push(
      `ops outside steps (${formatCount(outside[0]!)} before, ${formatCount(outside[1]!)} after ran only there; ${before.total.outsideMs.toFixed(3)} → ${after.total.outsideMs.toFixed(3)} ms of op time outside steps) have no time per step: the whole-trace table compares them`,
    );
  }
  return out;
}

/**
 * Program ids of 10 or more digits are fingerprints of the compiled program (TPU: `jit_f(1219…)`); a
 * module whose fingerprints differ ran another program under the same name (other shapes, flags or
 * XLA). Short ids (GPU, CPU) number the compilations of one process and say nothing across runs.
 */
function recompiled(before: TraceSummary, after: TraceSummary): string[] {
  const b = fingerprints(before);
  const a = fingerprints(after);
  const changed: string[] = [];
  for (const [module, ids] of b) {
    const other = a.get(module);
    if (other === undefined || sameSet(ids, other)) continue;
    changed.push(`${module} ${[...ids].map(clipId).join(', ')} → ${[...other].map(clipId).join(', ')}`);
  }
  if (changed.length === 0) return [];
  return [
    `the same module names ran different compiled programs (program fingerprints ${listed(changed, 3)}): ops may differ beyond the code change (shapes, flags, XLA version)`,
  ];
}

function fingerprints(s: TraceSummary): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const p of s.programs) {
    const id = /\((\d{10,})\)$/.exec(p.name)?.[1];
    if (id === undefined) continue;
    const ids = out.get(p.module) ?? new Set<string>();
    ids.add(id);
    out.set(p.module, ids);
  }
  return out;
}

/** The number of main ops whose element types are compared: the heaviest over the whole trace, per side. */
const MAIN_OPS = 10;

/**
 * The main ops (the heaviest on either side) whose element type changed, e.g. a matmul moved from
 * bf16 to f32: its FLOP rate, bytes and roofline peak change with it, whatever the code change did.
 */
function dtypeChanges(before: TraceSummary, after: TraceSummary): string[] {
  const key = (o: OpRow) => `${moduleName(o.program)}\u0000${o.name}`;
  const heaviestByKey = (s: TraceSummary) => {
    const out = new Map<string, OpRow>();
    for (const o of s.ops) if (!out.has(key(o))) out.set(key(o), o); // ops are sorted by device time
    return out;
  };
  const b = heaviestByKey(before);
  const a = heaviestByKey(after);
  const main = new Set([...b.keys()].slice(0, MAIN_OPS).concat([...a.keys()].slice(0, MAIN_OPS)));
  const changed: string[] = [];
  for (const k of main) {
    const x = b.get(k);
    const y = a.get(k);
    const from = x === undefined ? undefined : elementType(x);
    const to = y === undefined ? undefined : elementType(y);
    if (from !== undefined && to !== undefined && from !== to) changed.push(`${x!.name} ${from} → ${to}`);
  }
  if (changed.length === 0) return [];
  return [
    `main ops ran in different element types (${listed(changed, 3)}): their FLOP rates, bytes and roofline peaks differ with the type, not only with the code`,
  ];
}

/** An op's element type: from the HLO cost model, else its result's in the HLO text (`= f32[…]`). */
function elementType(op: OpRow): string | undefined {
  if (op.dtype !== null) return op.dtype;
  return /=\s*\(?\s*([a-z][a-z0-9]*)\[/.exec(op.longName ?? '')?.[1];
}

function sameSet(x: ReadonlySet<string>, y: ReadonlySet<string>): boolean {
  return x.size === y.size && [...x].every((v) => y.has(v));
}

/** `1219076091…`: a 64-bit id, short enough to read. */
function clipId(id: string): string {
  return id.length > 10 ? `${id.slice(0, 10)}…` : id;
}

/** The first `n` items, and how many more. */
function listed(items: readonly string[], n: number): string {
  return `${items.slice(0, n).join('; ')}${items.length > n ? ` (+${items.length - n})` : ''}`;
}

function pctOf(part: number, whole: number): number {
  return whole === 0 ? 100 : Math.round((1000 * part) / whole) / 10;
}

function formatCount(n: number): string {
  return `${n} op${n === 1 ? '' : 's'}`;
}

function round(ms: number): number {
  return Math.round(ms * 1e6) / 1e6;
}
