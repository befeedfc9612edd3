/**
 * `summarizeTrace`: reads a trace in one to three streaming passes and builds the TraceSummary.
 *
 * Pass 1 collects structure (modules, step markers, annotations) and, for JSON, aggregates every op by
 * program at the same time. That is already exact when steps are executions of the dominant program, when
 * the whole trace is one step, or when every program runs either only inside or only outside the step
 * windows. Otherwise pass 2 re-reads the op lanes with the step windows known. For an XSpace, pass 1 skips
 * the device op lines (skipping costs nothing there) and pass 2 always runs. A JSON whose metadata names
 * lanes after their first events is read once more up front, with the names known.
 */
import { InputError } from '../../util/errors.js';
import type { ReadStats, TraceSource } from '../trace/model.js';
import {
  type CollectOptions,
  type Execution,
  type OpInfo,
  type StepWindows,
  TraceCollector,
} from './collect.js';
import { allExecutions, type Platform, planSteps, programsInsideWindows, type StepPlan } from './steps.js';
import {
  type CustomCallRow,
  type DeviceRow,
  type GroupRow,
  type OpRow,
  TRACE_SUMMARY_SCHEMA,
  type TraceSummary,
} from './types.js';

export interface SummarizeOptions {
  signal?: AbortSignal;
}

const PS_PER_MS = 1e9;

export async function summarizeTrace(
  source: TraceSource,
  opts: SummarizeOptions = {},
): Promise<TraceSummary> {
  const readOpts = opts.signal === undefined ? {} : { signal: opts.signal };
  let passes = 0;
  const run = async (o: CollectOptions): Promise<{ c: TraceCollector; stats: ReadStats }> => {
    const c = new TraceCollector(o);
    passes++;
    const stats = await source.read(c, readOpts);
    c.finish();
    return { c, stats };
  };

  const firstOpts: CollectOptions = { structure: true, ops: source.cheapLaneSkip ? 'skip' : 'program' };
  let { c: first, stats } = await run(firstOpts);
  if (stats.lateNames) ({ c: first, stats } = await run(firstOpts));
  if (stats.events === 0) throw new InputError(source.path, 'the trace holds no events');

  const platform = decidePlatform(first, source.path);
  const opDevices = activeDevices(first, platform);
  let plan = planSteps(first, platform, opDevices);
  const where = platform === 'cpu' ? 'host' : 'device';

  // Decide whether pass 1 already has exact per-step numbers.
  let final = first;
  let included: Set<string> | 'all' | undefined;
  if (!first.collectedOps(where) && plan.windows === undefined) {
    // Device ops were skipped and no step windows exist: one program-mode pass both names the dominant
    // program (from the ops' hlo_module) and counts exactly.
    final = (await run({ structure: false, ops: 'program', modules: modulesByDevice(first) })).c;
    plan = planSteps(first, platform, opDevices, final);
    included = plan.program === undefined ? 'all' : new Set([plan.program]);
  }
  const unsorted = first.unsortedLanes.size > 0;
  const modulesLate = first.modulesLate.size > 0;
  if (included === undefined && first.collectedOps(where) && !unsorted && !modulesLate) {
    if (plan.detector === 'whole-trace') included = 'all';
    else if (plan.detector === 'dominant-program' && plan.program !== undefined)
      included = new Set([plan.program]);
    else if (plan.windows !== undefined) {
      const executions = allExecutions(first, platform, opDevices);
      if (executions.length > 0) included = programsInsideWindows(executions, plan.windows);
    }
  }
  if (included === undefined || final.unsortedLanes.size > 0) {
    const windows = plan.windows;
    const second: CollectOptions = {
      structure: false,
      ops: windows === undefined ? 'program' : 'windows',
      ...(windows === undefined ? {} : { windows }),
      modules: modulesByDevice(first),
      bufferLanes: new Set([...first.unsortedLanes, ...final.unsortedLanes]),
    };
    final = (await run(second)).c;
    included = windows === undefined ? (plan.program === undefined ? 'all' : new Set([plan.program])) : 'all';
  }
  return buildSummary({ source, stats, passes, platform, opDevices, plan, first, final, included });
}

/** TPU or GPU when device op lanes exist, else XLA:CPU when host events carry `hlo_op`. */
function decidePlatform(c: TraceCollector, path: string): Platform {
  const kinds = new Set<string>();
  for (const device of c.deviceOpLanes) kinds.add(device.kind);
  if (kinds.has('tpu')) return 'tpu';
  if (kinds.has('gpu')) return 'gpu';
  for (const ops of c.opsByProgram.values())
    for (const op of ops.values()) if (op.where === 'host') return 'cpu';
  const seen = [...new Set([...c.allDevices].map((d) => d.name))].slice(0, 6).join(', ');
  throw new InputError(path, `no TPU, GPU or XLA:CPU op events found (devices: ${seen || 'none'})`, {
    hint: 'expected a jax.profiler trace: XLA Ops lines on /device:TPU:N, GPU stream lines, or XLA:CPU host ops',
  });
}

/** Names of the devices whose ops are analysed. */
function activeDevices(c: TraceCollector, platform: Platform): Set<string> {
  const out = new Set<string>();
  if (platform === 'cpu') {
    for (const dev of c.devices.values())
      if (dev.device.kind === 'host' && dev.opLanes.size > 0) out.add(dev.device.name);
  } else {
    for (const device of c.deviceOpLanes) if (device.kind === platform) out.add(device.name);
  }
  return out;
}

function modulesByDevice(c: TraceCollector): Map<string, Execution[]> {
  const out = new Map<string, Execution[]>();
  for (const dev of c.deviceStates()) if (dev.modules.length > 0) out.set(dev.device.name, dev.modules);
  return out;
}

interface BuildInput {
  source: TraceSource;
  stats: ReadStats;
  passes: number;
  platform: Platform;
  opDevices: Set<string>;
  plan: StepPlan;
  first: TraceCollector;
  final: TraceCollector;
  included: Set<string> | 'all';
}

function buildSummary(input: BuildInput): TraceSummary {
  const { stats, plan, final, first, platform, opDevices, included } = input;
  const where = platform === 'cpu' ? 'host' : 'device';
  const windowsMode = final !== first && plan.windows !== undefined;
  const counted: { op: OpInfo; count: number; selfPs: number }[] = [];
  let outsidePs = 0;
  const outsideOps = new Set<string>();
  for (const [program, ops] of final.opsByProgram) {
    for (const op of ops.values()) {
      if (op.where !== where) continue;
      const inProgram = included === 'all' || included.has(program);
      const count = windowsMode ? op.countIn : inProgram ? op.countIn : 0;
      const selfPs = windowsMode ? op.selfInPs : inProgram ? op.selfInPs : 0;
      const outPs = windowsMode ? op.selfOutPs : inProgram ? 0 : op.selfInPs;
      if (outPs > 0) {
        outsidePs += outPs;
        outsideOps.add(op.baseName);
      }
      if (count > 0) counted.push({ op, count, selfPs });
    }
  }

  // The per-step denominator and step-level times.
  const deviceCount = Math.max(1, opDevices.size);
  let deviceSteps: number;
  let stepDurations = plan.stepDurationsPs;
  let busyPs = 0;
  if (plan.detector === 'whole-trace') {
    deviceSteps = deviceCount;
    stepDurations = [];
    for (const dev of final.deviceStates()) {
      if (!opDevices.has(dev.device.name) || dev.lastOpEndPs < dev.firstOpPs) continue;
      stepDurations.push(dev.lastOpEndPs - dev.firstOpPs);
      busyPs += dev.busyPs;
    }
  } else if (plan.windows === undefined) {
    // GPU without marked executions: count executions from kernel repetition.
    deviceSteps = Math.max(1, gcdOfCounts(counted.map((c) => c.count)));
    stepDurations = [];
    busyPs = counted.reduce((s, c) => s + c.selfPs, 0);
  } else if (windowsMode) {
    deviceSteps = windowCount(plan.windows, opDevices, platform);
    for (const dev of final.deviceStates()) {
      if (dev.windowBusyPs !== undefined) for (const b of dev.windowBusyPs) busyPs += b;
    }
  } else {
    // Pass 1 was exact: steps are executions (dominant program) or windows holding whole programs.
    const executions =
      plan.executions ??
      allExecutions(first, platform, opDevices).filter((e) => included !== 'all' && included.has(e.program));
    busyPs = executions.reduce((s, e) => s + e.busyPs, 0);
    deviceSteps =
      plan.executions !== undefined ? plan.executions.length : windowCount(plan.windows, opDevices, platform);
  }
  deviceSteps = Math.max(1, deviceSteps);

  const opPsTotal = counted.reduce((s, c) => s + c.selfPs, 0);
  const perStep = (ps: number): number => ms(ps / deviceSteps);
  const timeStats = stepDurations.length > 0 ? describe(stepDurations) : null;
  const meanStepPs = timeStats === null ? undefined : timeStats.mean * PS_PER_MS;
  const share = (ps: number): number => pct(ps, opPsTotal);
  const shareOfStep = (ps: number): number | null =>
    meanStepPs === undefined || meanStepPs === 0 ? null : pct(ps / deviceSteps, meanStepPs);

  const summary: TraceSummary = {
    schema: TRACE_SUMMARY_SCHEMA,
    source: {
      path: stats.path,
      format: stats.format,
      bytes: stats.bytes,
      events: stats.events,
      passes: input.passes,
      capped: stats.capped,
    },
    platform,
    devices: deviceRows(final, first, opDevices),
    steps: {
      detector: plan.detector,
      detail: plan.detail,
      count: round(deviceSteps / deviceCount, 3),
      deviceSteps,
      program: plan.program,
      timeMs: timeStats,
      busyMs: perStep(busyPs),
      idleMs: meanStepPs === undefined ? null : ms(Math.max(0, meanStepPs - busyPs / deviceSteps)),
      opMs: perStep(opPsTotal),
    },
    ops: opRows(counted, deviceSteps, share, shareOfStep),
    categories: groupRows(counted, (c) => c.op.category, deviceSteps, share),
    scopes: groupRows(counted, (c) => c.op.scope || '(none)', deviceSteps, share),
    customCalls: customCallRows(counted, deviceSteps, share),
    outsideSteps: { opMs: ms(outsidePs), ops: outsideOps.size },
    warnings: [...stats.warnings],
    notes: [...plan.notes],
  };
  const multiLane = final.deviceStates().filter((d) => opDevices.has(d.device.name) && d.opLanes.size > 1);
  if (multiLane.length > 0 && platform !== 'cpu') {
    const d = multiLane[0]!;
    summary.notes.push(
      `busy time adds up the op lanes of a device (${d.opLanes.size} on ${d.device.name}); work overlapping on concurrent lanes is counted once per lane`,
    );
  }
  if (input.passes > 1) summary.notes.push(passNote(input));
  return summary;
}

function passNote(input: BuildInput): string {
  const reasons: string[] = [];
  if (input.first.unsortedLanes.size > 0) reasons.push('some lanes were out of time order');
  if (input.first.modulesLate.size > 0) reasons.push('XLA Modules came after their ops');
  if (input.source.cheapLaneSkip) reasons.push('XSpace: structure first, then ops');
  else if (input.final !== input.first) reasons.push('step windows split some programs');
  return `read ${input.passes} times${reasons.length > 0 ? ` (${reasons.join('; ')})` : ' (lane names arrived late)'}`;
}

function windowCount(windows: StepWindows, opDevices: ReadonlySet<string>, platform: Platform): number {
  const shared = windows.get('*');
  if (shared !== undefined)
    return shared.starts.length * (platform === 'cpu' ? 1 : Math.max(1, opDevices.size));
  let n = 0;
  for (const [device, w] of windows) if (opDevices.has(device)) n += w.starts.length;
  return n;
}

function deviceRows(
  final: TraceCollector,
  first: TraceCollector,
  opDevices: ReadonlySet<string>,
): DeviceRow[] {
  const rows: DeviceRow[] = [];
  for (const dev of final.deviceStates()) {
    if (!opDevices.has(dev.device.name)) continue;
    const stats = dev.device.stats;
    const peak = Number(stats.peak_teraflops_per_second);
    rows.push({
      name: dev.device.name,
      kind: dev.device.kind,
      type: stats.device_type_string,
      peakTflops: Number.isFinite(peak) && peak > 0 ? peak : undefined,
      opMs: ms(dev.opPs),
      busyMs: ms(dev.busyPs),
    });
  }
  // Devices whose ops were only read in pass 1 (CPU) keep their pass-1 numbers.
  if (rows.length === 0 && final !== first) return deviceRows(first, first, opDevices);
  return rows.sort((a, b) => a.name.localeCompare(b.name, 'en', { numeric: true }));
}

type Counted = { op: OpInfo; count: number; selfPs: number };

function opRows(
  counted: readonly Counted[],
  steps: number,
  share: (ps: number) => number,
  shareOfStep: (ps: number) => number | null,
): OpRow[] {
  const groups = new Map<string, Counted[]>();
  for (const c of counted) {
    const list = groups.get(c.op.baseName);
    if (list === undefined) groups.set(c.op.baseName, [c]);
    else list.push(c);
  }
  // Without any FLOPs in the trace (XLA:CPU, Kineto) "no cost model" says nothing about a single op.
  const traceHasFlops = counted.some((c) => c.op.flops !== undefined);
  const rows: OpRow[] = [];
  for (const [name, list] of groups) {
    const selfPs = list.reduce((s, c) => s + c.selfPs, 0);
    const count = list.reduce((s, c) => s + c.count, 0);
    const heaviest = [...list].sort((a, b) => b.selfPs - a.selfPs)[0]!.op;
    const customCall = list.some((c) => c.op.customCall);
    const haveFlops = list.every((c) => c.op.flops !== undefined);
    const flops = haveFlops ? list.reduce((s, c) => s + c.op.flops! * c.count, 0) : undefined;
    const haveBytes = list.every((c) => c.op.bytes !== undefined);
    const bytes = haveBytes ? list.reduce((s, c) => s + c.op.bytes! * c.count, 0) : undefined;
    const timeSec = selfPs / 1e12;
    rows.push({
      name,
      category: heaviestKey(list, (c) => c.op.category),
      scope: heaviestKey(list, (c) => c.op.scope),
      programs: [...new Set(list.map((c) => c.op.program))].filter((p) => p !== '').sort(),
      variants: new Set(list.map((c) => c.op.name)).size,
      timeMs: ms(selfPs / steps),
      occurrences: round(count / steps, 3),
      shareOfOps: share(selfPs),
      shareOfStep: shareOfStep(selfPs),
      flops: flops === undefined || customCall ? null : round(flops / steps, 0),
      bytes: bytes === undefined ? null : round(bytes / steps, 0),
      tflops: flops === undefined || customCall || timeSec === 0 ? null : round(flops / timeSec / 1e12, 3),
      customCall,
      noCostModel: customCall || (traceHasFlops && (flops === undefined || flops === 0)),
      longName: heaviest.longName,
    });
  }
  return rows.sort((a, b) => b.timeMs - a.timeMs || a.name.localeCompare(b.name));
}

function groupRows(
  counted: readonly Counted[],
  keyOf: (c: Counted) => string,
  steps: number,
  share: (ps: number) => number,
): GroupRow[] {
  const groups = new Map<string, { selfPs: number; count: number; names: Set<string> }>();
  for (const c of counted) {
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
      shareOfOps: share(g.selfPs),
      ops: g.names.size,
    }))
    .sort((a, b) => b.timeMs - a.timeMs || a.name.localeCompare(b.name));
}

function customCallRows(
  counted: readonly Counted[],
  steps: number,
  share: (ps: number) => number,
): CustomCallRow[] {
  const groups = new Map<string, { name: string; scope: string; selfPs: number; count: number }>();
  for (const c of counted) {
    if (!c.op.customCall) continue;
    const key = `${c.op.baseName}\u0000${c.op.scope}`;
    let g = groups.get(key);
    if (g === undefined) {
      g = { name: c.op.baseName, scope: c.op.scope, selfPs: 0, count: 0 };
      groups.set(key, g);
    }
    g.selfPs += c.selfPs;
    g.count += c.count;
  }
  return [...groups.values()]
    .map((g) => ({
      name: g.name,
      scope: g.scope,
      launches: round(g.count / steps, 3),
      timeMs: ms(g.selfPs / steps),
      shareOfOps: share(g.selfPs),
      noCostModel: true as const,
    }))
    .sort((a, b) => b.timeMs - a.timeMs || a.name.localeCompare(b.name));
}

function heaviestKey(list: readonly Counted[], keyOf: (c: Counted) => string): string {
  const time = new Map<string, number>();
  for (const c of list) time.set(keyOf(c), (time.get(keyOf(c)) ?? 0) + c.selfPs);
  return [...time].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]![0];
}

/** Greatest common divisor of occurrence counts: how often a program whose ops all repeat ran. */
export function gcdOfCounts(counts: readonly number[]): number {
  let g = 0;
  for (const c of counts) {
    let a = g;
    let b = Math.round(c);
    while (b !== 0) [a, b] = [b, a % b];
    g = a;
  }
  return g;
}

function describe(ps: readonly number[]): { mean: number; median: number; min: number; max: number } {
  const sorted = [...ps].sort((a, b) => a - b);
  const n = sorted.length;
  const mid = n >> 1;
  const median = n % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return {
    mean: ms(sorted.reduce((s, v) => s + v, 0) / n),
    median: ms(median),
    min: ms(sorted[0]!),
    max: ms(sorted[n - 1]!),
  };
}

/** ps → ms, rounded to the nanosecond. */
function ms(ps: number): number {
  return Math.round(ps / 1e3) / 1e6;
}

function pct(part: number, whole: number): number {
  return whole === 0 ? 0 : round((100 * part) / whole, 4);
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
