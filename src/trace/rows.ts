/**
 * The tables of a trace summary, from the counted ops of a final pass: ops (per program and name),
 * programs, categories, scopes and custom calls, with FLOP and byte rates and the roofline position.
 */
import type { OpInfo } from './collect.js';
import type { OpCostInfo } from './op-costs.js';
import { type CustomCallKind, customCallKind, customCallKindOfName } from './ops.js';
import type { DevicePeak } from './peaks.js';
import { executionsOf, moduleName } from './steps.js';
import type { CustomCallRow, GroupRow, OpRow, ProgramRow, Roofline } from './types.js';

/** One op identity with its time split into the part inside steps and the part outside. */
export interface Counted {
  op: OpInfo;
  /** Occurrences and self time inside steps. */
  count: number;
  selfPs: number;
  /** Occurrences and self time over the whole trace. */
  totalCount: number;
  totalPs: number;
  cost: OpCostInfo | undefined;
}

export interface RowContext {
  /** Device-steps: per-step numbers are totals inside steps divided by this. */
  steps: number;
  /** Op self time per step (ps), for shares of step op time. */
  opPsPerStepTotal: number;
  /** All device op time (ps), for shares of device time. */
  devicePs: number;
  /** Mean step time in ps, when known. */
  meanStepPs: number | undefined;
  peak: DevicePeak | undefined;
  /** Executions of a program (all devices), when known: an op's kernel launches are counted against them. */
  programExecutions?: (program: string) => number | null;
}

export function opRows(counted: readonly Counted[], ctx: RowContext): OpRow[] {
  const groups = new Map<string, Counted[]>();
  for (const c of counted) {
    const key = `${c.op.program}\u0000${c.op.baseName}`;
    const list = groups.get(key);
    if (list === undefined) groups.set(key, [c]);
    else list.push(c);
  }
  const rows: OpRow[] = [];
  for (const list of groups.values()) {
    const first = list[0]!;
    const selfPs = sum(list, (c) => c.selfPs);
    const totalPs = sum(list, (c) => c.totalPs);
    const customCall = list.some((c) => c.op.customCall);
    const kind = customCall ? customCallKindOf(list) : null;
    // A row merges variants (`fusion.1`, `fusion.2`, …); one without a cost (an instruction missing from
    // the HLO) must not blank the others: FLOPs, bytes and their rates cover the variants that have them.
    const withFlops = list.filter((c) => c.cost?.flops !== undefined);
    const withBytes = list.filter((c) => c.cost?.bytes !== undefined);
    const withBoth = withFlops.filter((c) => c.cost?.bytes !== undefined);
    // FLOPs and bytes are per execution; a GPU op may launch several kernels per execution, and one
    // kernel several times.
    const execTotal = (c: Counted) =>
      c.totalCount === 0
        ? 0
        : executionsOf(c.op, ctx.programExecutions?.(c.op.program) ?? undefined) *
          (c.totalCount / (c.op.countIn + c.op.countOut));
    const execIn = (c: Counted) => (c.totalCount === 0 ? 0 : execTotal(c) * (c.count / c.totalCount));
    const flopsOf = (c: Counted) => c.cost!.flops!;
    const bytesOf = (c: Counted) => c.cost!.bytes!;
    const total = (part: Counted[], per: (c: Counted) => number, execs: (c: Counted) => number) =>
      part.length === 0 ? undefined : sum(part, (c) => per(c) * execs(c));
    const flopsTotal = total(withFlops, flopsOf, execTotal);
    const bytesTotal = total(withBytes, bytesOf, execTotal);
    const flopsIn = total(withFlops, flopsOf, execIn);
    const bytesIn = total(withBytes, bytesOf, execIn);
    // An async start (copy-start, all-gather-start) only issues the transfer: its bytes move while
    // later ops run, so FLOPs or bytes over its own duration are no rate at all.
    const asyncStart = /-start$/.test(first.op.baseName);
    const secondsOf = (part: Counted[]) => (asyncStart ? 0 : sum(part, (c) => c.totalPs) / 1e12);
    const rate = (amount: number | undefined, part: Counted[]) => {
      const seconds = secondsOf(part);
      return amount === undefined || seconds === 0 ? null : amount / seconds;
    };
    const flopRate = rate(flopsTotal, withFlops);
    const byteRate = rate(bytesTotal, withBytes);
    const tflops = flopRate === null ? null : flopRate / 1e12;
    const gbps = byteRate === null ? null : byteRate / 1e9;
    const bothBytes = total(withBoth, bytesOf, execTotal);
    const intensity =
      bothBytes === undefined || bothBytes === 0 ? null : total(withBoth, flopsOf, execTotal)! / bothBytes;
    const dtype = heaviestKey(list, (c) => c.cost?.dtype ?? '') || null;
    const costSource = list.some((c) => c.cost?.source === 'hlo')
      ? 'hlo'
      : list.some((c) => c.cost?.source === 'trace')
        ? 'trace'
        : null;
    // "No cost model": XLA reports no FLOPs for the op (custom calls), not merely that this trace does
    // not say (an op missing from the HLO, a JSON trace without costs).
    const noCostModel = flopsTotal === undefined && list.some((c) => c.cost !== undefined || c.op.customCall);
    rows.push({
      name: first.op.baseName,
      program: first.op.program,
      category: heaviestKey(list, (c) => c.op.category),
      scope: heaviestKey(list, (c) => c.op.scope),
      programs: [...new Set(list.map((c) => c.op.program))].filter((p) => p !== '').sort(),
      variants: new Set(list.map((c) => c.op.name)).size,
      variantsWithoutFlops: new Set(list.filter((c) => c.cost?.flops === undefined).map((c) => c.op.name))
        .size,
      timeMs: ms(selfPs / ctx.steps),
      occurrences: round(sum(list, (c) => c.count) / ctx.steps, 3),
      shareOfOps: pct(selfPs / ctx.steps, ctx.opPsPerStepTotal),
      shareOfStep:
        ctx.meanStepPs === undefined || ctx.meanStepPs === 0 ? null : pct(selfPs / ctx.steps, ctx.meanStepPs),
      totalMs: ms(totalPs),
      totalCount: sum(list, (c) => c.totalCount),
      executions: round(sum(list, execTotal), 3),
      flopsPerExecution: perExecution(flopsTotal, sum(withFlops, execTotal)),
      bytesPerExecution: perExecution(bytesTotal, sum(withBytes, execTotal)),
      shareOfDevice: pct(totalPs, ctx.devicePs),
      flops: flopsIn === undefined ? null : round(flopsIn / ctx.steps, 0),
      bytes: bytesIn === undefined ? null : round(bytesIn / ctx.steps, 0),
      tflops: tflops === null ? null : round(tflops, 3),
      gbps: gbps === null ? null : round(gbps, 3),
      intensity: intensity === null ? null : round(intensity, 3),
      roofline: asyncStart ? null : rooflineOf(tflops, intensity, dtype, ctx.peak, gbps),
      costSource,
      dtype,
      customCall,
      customCallKind: kind,
      noCostModel,
      longName: [...list].sort((a, b) => b.totalPs - a.totalPs)[0]!.op.longName,
    });
  }
  return rows.sort((a, b) => b.totalMs - a.totalMs || a.timeMs - b.timeMs || a.name.localeCompare(b.name));
}

function perExecution(total: number | undefined, executions: number): number | null {
  return total === undefined || executions === 0 ? null : round(total / executions, 0);
}

/** The roofline position of an op achieving `tflops` at `intensity` FLOPs per byte. */
export function rooflineOf(
  tflops: number | null,
  intensity: number | null,
  dtype: string | null,
  peak: DevicePeak | undefined,
  gbps: number | null = null,
): Roofline | null {
  if (peak === undefined) return null;
  // Data movement (no FLOPs, bytes known): its position is the share of the memory bandwidth it used.
  if (intensity === 0 && gbps !== null && gbps > 0) {
    return {
      bound: 'memory',
      attainableTflops: 0,
      fraction: round((gbps * 1e9) / peak.bytesPerSecond, 4),
      peak: 'bf16',
    };
  }
  if (tflops === null || intensity === null) return null;
  const fp32 = dtype === 'f32' && peak.fp32FlopsPerSecond !== null;
  const peakFlops = fp32 ? peak.fp32FlopsPerSecond! : peak.bf16FlopsPerSecond;
  const memoryCeiling = intensity * peak.bytesPerSecond;
  const attainable = Math.min(peakFlops, memoryCeiling);
  if (attainable <= 0) return null;
  return {
    bound: memoryCeiling < peakFlops ? 'memory' : 'compute',
    attainableTflops: round(attainable / 1e12, 3),
    fraction: round((tflops * 1e12) / attainable, 4),
    peak: fp32 ? 'fp32' : 'bf16',
  };
}

export function programRows(
  counted: readonly Counted[],
  devicePs: number,
  executions: (program: string) => number | null,
  devices: (program: string) => number,
): ProgramRow[] {
  const groups = new Map<string, Counted[]>();
  for (const c of counted) {
    const list = groups.get(c.op.program);
    if (list === undefined) groups.set(c.op.program, [c]);
    else list.push(c);
  }
  return [...groups]
    .map(([name, list]) => ({
      name: name === '' ? '(unknown)' : name,
      module: name === '' ? '(unknown)' : moduleName(name),
      deviceMs: ms(sum(list, (c) => c.totalPs)),
      inStepsMs: ms(sum(list, (c) => c.selfPs)),
      shareOfDevice: pct(
        sum(list, (c) => c.totalPs),
        devicePs,
      ),
      executions: name === '' ? null : executions(name),
      devices: name === '' ? 0 : devices(name),
      ops: new Set(list.map((c) => c.op.baseName)).size,
    }))
    .sort((a, b) => b.deviceMs - a.deviceMs || a.name.localeCompare(b.name));
}

/** Time per step by a key (category, scope), inside steps only. */
export function groupRows(
  counted: readonly Counted[],
  keyOf: (c: Counted) => string,
  steps: number,
  opPsPerStepTotal: number,
): GroupRow[] {
  const groups = new Map<string, { selfPs: number; count: number; names: Set<string> }>();
  for (const c of counted) {
    if (c.count === 0) continue;
    const key = keyOf(c);
    let g = groups.get(key);
    if (g === undefined) {
      g = { selfPs: 0, count: 0, names: new Set() };
      groups.set(key, g);
    }
    g.selfPs += c.selfPs;
    g.count += c.count;
    g.names.add(c.op.baseName);
  }
  return [...groups]
    .map(([name, g]) => ({
      name,
      timeMs: ms(g.selfPs / steps),
      occurrences: round(g.count / steps, 3),
      shareOfOps: pct(g.selfPs / steps, opPsPerStepTotal),
      ops: g.names.size,
    }))
    .sort((a, b) => b.timeMs - a.timeMs || a.name.localeCompare(b.name));
}

/** Custom calls by program, name and scope, whole trace and per step. */
export function customCallRows(counted: readonly Counted[], ctx: RowContext): CustomCallRow[] {
  const groups = new Map<string, { list: Counted[]; scope: string }>();
  for (const c of counted) {
    if (!c.op.customCall) continue;
    const key = `${c.op.program}\u0000${c.op.baseName}\u0000${c.op.scope}`;
    let g = groups.get(key);
    if (g === undefined) {
      g = { list: [], scope: c.op.scope };
      groups.set(key, g);
    }
    g.list.push(c);
  }
  return [...groups.values()]
    .map(({ list, scope }) => {
      const op = list[0]!.op;
      const selfPs = sum(list, (c) => c.selfPs);
      return {
        name: op.baseName,
        program: op.program,
        scope,
        kind: customCallKindOf(list),
        launches: round(sum(list, (c) => c.count) / ctx.steps, 3),
        timeMs: ms(selfPs / ctx.steps),
        shareOfOps: pct(selfPs / ctx.steps, ctx.opPsPerStepTotal),
        totalMs: ms(sum(list, (c) => c.totalPs)),
        noCostModel: !list.every((c) => c.cost?.flops !== undefined),
      };
    })
    .sort((a, b) => b.totalMs - a.totalMs || b.timeMs - a.timeMs || a.name.localeCompare(b.name));
}

function customCallKindOf(list: readonly Counted[]): CustomCallKind {
  for (const c of list) if (c.cost?.customCall !== undefined) return c.cost.customCall;
  const op = list[0]!.op;
  const target = /custom_call_target="([^"]+)"/.exec(op.longName ?? '')?.[1];
  if (target !== undefined) return customCallKind(target);
  return customCallKindOfName(op.baseName) ?? 'other';
}

function heaviestKey(list: readonly Counted[], keyOf: (c: Counted) => string): string {
  const time = new Map<string, number>();
  for (const c of list) time.set(keyOf(c), (time.get(keyOf(c)) ?? 0) + c.totalPs);
  return [...time].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]![0];
}

function sum<T>(list: readonly T[], f: (x: T) => number): number {
  let s = 0;
  for (const x of list) s += f(x);
  return s;
}

/** ps → ms, rounded to the nanosecond. */
export function ms(ps: number): number {
  return Math.round(ps / 1e3) / 1e6;
}

export function pct(part: number, whole: number): number {
  return whole === 0 ? 0 : round((100 * part) / whole, 4);
}

export function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
