/**
 * `summarizeTrace`: reads a trace in one to three streaming passes and builds the TraceSummary.
 *
 * Pass 1 collects structure (modules, step markers, annotations, GPU host launches) and, for JSON,
 * aggregates every op by program at the same time. That is already exact when steps are executions of
 * the dominant program, when the whole trace is one step, or when every program runs either only inside
 * or only outside the step windows. Otherwise pass 2 re-reads the op lanes with the step windows known.
 * For an XSpace, pass 1 skips the device op lines (skipping costs nothing there) and pass 2 always runs.
 * A JSON whose metadata names lanes after their first events is read once more up front, with the names
 * known. Ops without FLOPs in the trace are costed from the HLO modules an XSpace carries (op-costs.ts).
 */
import { InputError } from '../util/index.js';
import { type CollectOptions, type Execution, type StepWindows, TraceCollector } from './collect.js';
import { type OpCosts, opCosts } from './op-costs.js';
import {
  type DevicePeak,
  describeGpuPlane,
  type PeakLookup,
  peakForDeviceKind,
  peakForPlane,
} from './peaks.js';
import type { ReadStats, TraceFormat, TraceSource } from './readers/model.js';
import {
  type Counted,
  customCallRows,
  groupRows,
  ms,
  opRows,
  programRows,
  type RowContext,
  round,
} from './rows.js';
import {
  allExecutions,
  annotationKinds,
  type Confidence,
  coverageConfidence,
  disagreement,
  isMarked,
  modalExecutions,
  type Platform,
  planSteps,
  programOps,
  programsInsideWindows,
  type StepPlan,
  slowestDeviceSteps,
  stepEstimates,
} from './steps.js';
import {
  type DeviceRow,
  type OpRow,
  type OpSpread,
  TRACE_SUMMARY_SCHEMA,
  type TraceSummary,
} from './types.js';

export interface SummarizeOptions {
  signal?: AbortSignal;
  /**
   * The JAX `device_kind` the trace was captured on (`TPU v6 lite`), for the roofline when the trace
   * does not say (JSON traces carry no device stats). An XSpace's own device planes take precedence.
   */
  deviceKind?: string;
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
    else if (plan.windows === undefined && plan.program !== undefined) included = new Set([plan.program]);
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
  const costs = await opCosts(source, final, where);
  return buildSummary({
    source,
    stats,
    passes,
    platform,
    opDevices,
    plan,
    first,
    final,
    included,
    costs,
    deviceKind: opts.deviceKind,
  });
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
  costs: OpCosts;
  deviceKind: string | undefined;
}

function buildSummary(input: BuildInput): TraceSummary {
  const { stats, plan, final, first, platform, opDevices, included } = input;
  const where = platform === 'cpu' ? 'host' : 'device';
  const windowsMode = final !== first && plan.windows !== undefined;
  const counted: Counted[] = [];
  let outsidePs = 0;
  let devicePs = 0;
  // Keyed like the op table's rows (program and op name), so the count matches the rows a reader sees.
  const outsideOps = new Set<string>();
  for (const [program, ops] of final.opsByProgram) {
    for (const op of ops.values()) {
      if (op.where !== where) continue;
      const inProgram = included === 'all' || included.has(program);
      const count = windowsMode ? op.countIn : inProgram ? op.countIn : 0;
      const selfPs = windowsMode ? op.selfInPs : inProgram ? op.selfInPs : 0;
      const totalPs = op.selfInPs + op.selfOutPs;
      const totalCount = op.countIn + op.countOut;
      const outPs = totalPs - selfPs;
      devicePs += totalPs;
      if (outPs > 0) {
        outsidePs += outPs;
        outsideOps.add(`${op.program}\u0000${op.baseName}`);
      }
      if (totalCount > 0)
        counted.push({ op, count, selfPs, totalCount, totalPs, cost: input.costs.byOp.get(op) });
    }
  }

  // Devices that ran compute, not only copies: per-device step counts divide by these.
  const computeDevices = new Set<string>();
  for (const dev of final.deviceStates())
    if (opDevices.has(dev.device.name) && dev.computePs > 0) computeDevices.add(dev.device.name);
  if (computeDevices.size === 0) for (const d of opDevices) computeDevices.add(d);
  const devicesOf = (program: string): number => {
    const set = final.programDevices.get(program);
    if (set === undefined) return computeDevices.size;
    let n = 0;
    for (const d of set) if (computeDevices.has(d)) n++;
    return Math.max(1, n);
  };

  // The per-step denominator (steps summed over devices) and step-level times.
  let deviceSteps: number;
  let stepDevices = computeDevices.size;
  let stepDurations = plan.stepDurationsPs;
  let busyPs = 0;
  switch (plan.detector) {
    case 'whole-trace':
      deviceSteps = computeDevices.size;
      stepDurations = [];
      for (const dev of final.deviceStates()) {
        if (!computeDevices.has(dev.device.name) || dev.lastOpEndPs < dev.firstOpPs) continue;
        stepDurations.push(dev.lastOpEndPs - dev.firstOpPs);
        busyPs += dev.busyPs;
      }
      break;
    case 'host-launches':
    case 'kernel-repetition': {
      const program = plan.program!;
      deviceSteps =
        plan.detector === 'host-launches'
          ? plan.launches!
          : modalExecutions(programOps(final, program, platform)).count;
      stepDevices = devicesOf(program);
      stepDurations = [];
      busyPs = counted.reduce((s, c) => s + c.selfPs, 0);
      break;
    }
    case 'host-annotations':
      // Every device (XLA:CPU: every device ordinal of the host) runs each annotated step.
      deviceSteps = plan.stepDurationsPs.length * computeDevices.size;
      busyPs = windowsMode ? windowBusy(final) : executionBusy(first, platform, opDevices, included);
      break;
    case 'device-steps':
      deviceSteps = windowCount(plan.windows!, computeDevices);
      stepDevices = Math.max(1, [...plan.windows!.keys()].filter((d) => computeDevices.has(d)).length);
      busyPs = windowsMode ? windowBusy(final) : executionBusy(first, platform, opDevices, included);
      break;
    default: {
      // dominant-program: each marked execution of the program is a step.
      const executions = plan.executions ?? [];
      deviceSteps = executions.length;
      stepDevices = new Set(executions.map((e) => e.device.name)).size;
      busyPs = windowsMode ? windowBusy(final) : executions.reduce((s, e) => s + e.busyPs, 0);
    }
  }
  deviceSteps = Math.max(1, deviceSteps);
  stepDevices = Math.max(1, stepDevices);
  // Devices with their own step windows: the slowest one gates each step.
  const perDevice =
    plan.detector === 'device-steps' || plan.detector === 'dominant-program'
      ? slowestDeviceSteps(plan.windows!, computeDevices)
      : undefined;
  if (perDevice !== undefined) stepDurations = perDevice.durationsPs;
  // Several devices without step windows of their own: every per-step op time is a mean over devices.
  // The slowest device gates the step, as it does a windowed step: name it, with its op time, and each
  // op's time on the device where it took the longest.
  const opSpread =
    perDevice === undefined && computeDevices.size >= 2
      ? deviceOpSpread(final, counted, computeDevices, deviceSteps / stepDevices)
      : undefined;

  const opPsTotal = counted.reduce((s, c) => s + c.selfPs, 0);
  const timeStats = stepDurations.length > 0 ? describe(stepDurations) : null;
  const meanStepPs = timeStats === null ? undefined : timeStats.mean * PS_PER_MS;
  const roofline = devicePeak(input, computeDevices);
  const programExecutions = memoize((program: string) =>
    program === '' ? null : programExecutionCount(program, first, final, platform),
  );
  const ctx: RowContext = {
    steps: deviceSteps,
    opPsPerStepTotal: opPsTotal / deviceSteps,
    devicePs,
    meanStepPs,
    peak: roofline.lookup?.peak,
    programExecutions,
  };
  const estimates = stepEstimates({
    plan,
    platform,
    computeDevices,
    first,
    final,
    stepProgram: heaviestInSteps(counted),
  });
  const coverage = devicePs === 0 ? 1 : opPsTotal / devicePs;
  const chosen = estimates.find((e) => e.detector === plan.detector);
  const confidence = coverageConfidence(
    chosen?.confidence ?? (plan.detector === 'whole-trace' ? 'low' : 'high'),
    coverage,
  );
  if (chosen !== undefined) chosen.confidence = confidence;
  const warnings = [...stats.warnings, ...input.costs.warnings];
  const split = disagreement(estimates);
  if (split !== undefined) warnings.push(split);
  if (roofline.lookup?.warning !== undefined) warnings.push(roofline.lookup.warning);

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
    devices: deviceRows(final, first, opDevices, computeDevices),
    steps: {
      detector: plan.detector,
      confidence,
      detail: plan.detail,
      estimates,
      count: round(deviceSteps / stepDevices, 3),
      deviceSteps,
      program: plan.program,
      timeMs: timeStats,
      ...(perDevice === undefined ? {} : { deviceSpread: perDevice.spread }),
      ...(opSpread === undefined
        ? {}
        : { opSpread: { ...opSpread.spread, meanMs: ms(opPsTotal / deviceSteps) } }),
      annotations: annotationKinds(first.hostSteps).map((k) => {
        const t = describe(k.markers.map((m) => m.durPs));
        return { name: k.name, count: k.markers.length, meanMs: t.mean, medianMs: t.median };
      }),
      busyMs: ms(busyPs / deviceSteps),
      idleMs: meanStepPs === undefined ? null : ms(Math.max(0, meanStepPs - busyPs / deviceSteps)),
      opMs: ms(opPsTotal / deviceSteps),
    },
    total: { deviceMs: ms(devicePs), inStepsMs: ms(opPsTotal), outsideMs: ms(outsidePs) },
    programs: programRows(counted, devicePs, programExecutions, devicesOf),
    ops: withSlowestDevice(opRows(counted, ctx), opSpread?.byOp),
    roofline: { peak: roofline.lookup?.peak ?? null, source: roofline.source },
    categories: groupRows(counted, (c) => c.op.category, deviceSteps, ctx.opPsPerStepTotal),
    scopes: groupRows(counted, (c) => c.op.scope || '(none)', deviceSteps, ctx.opPsPerStepTotal),
    customCalls: customCallRows(counted, ctx),
    outsideSteps: { opMs: ms(outsidePs), ops: outsideOps.size },
    warnings,
    notes: [...unmarkedNote(plan, coverage, confidence), ...plan.notes],
  };
  if (devicePs > 0 && outsidePs / devicePs > 0.5) {
    summary.notes.push(
      `${round((100 * outsidePs) / devicePs, 1)}% of device op time is outside steps (other programs); the op and program tables cover the whole trace`,
    );
  }
  if (computeDevices.size < opDevices.size) {
    const idle = [...opDevices].filter((d) => !computeDevices.has(d));
    summary.notes.push(
      `${idle.length} device(s) ran only memory copies and are not counted per device: ${idle.slice(0, 4).join(', ')}`,
    );
  }
  const multiLane = final
    .deviceStates()
    .filter((d) => computeDevices.has(d.device.name) && d.opLanes.size > 1);
  if (multiLane.length > 0 && platform !== 'cpu') {
    const d = multiLane[0]!;
    summary.notes.push(
      `busy time adds up the op lanes of a device (${d.opLanes.size} on ${d.device.name}); work overlapping on concurrent lanes is counted once per lane`,
    );
  }
  if (platform === 'gpu' && first.derivedGpuLanes > 0) {
    summary.notes.push(
      derivedLanesNote(
        stats.format,
        counted.some((c) => c.op.program !== ''),
      ),
    );
  }
  if (input.costs.modulesRead > 0) {
    summary.notes.push(
      `FLOPs and bytes of ${input.costs.modulesRead} program(s) from the HLO in the XSpace (XLA's cost model: elementwise ops count one FLOP per element)`,
    );
  }
  if (input.passes > 1) summary.notes.push(passNote(input));
  return summary;
}

/**
 * A trace without step markers says so first: its steps are inferred, and xprof reports no step
 * time for it ("No step marker observed and hence the step time is unknown").
 */
function unmarkedNote(plan: StepPlan, coverage: number, confidence: Confidence): string[] {
  if (isMarked(plan.detector) || plan.detector === 'whole-trace') return [];
  return [
    `no step markers in the trace (xprof reports no step time for it): steps are inferred by ${plan.detector} and hold ${round(100 * coverage, 1)}% of device op time (${confidence} confidence); the whole-trace figures cover everything`,
  ];
}

/**
 * The note for GPU lines xprof derived from the kernels. Only xprof's trace-viewer JSON has such lines
 * and kernels without HLO ops (its streaming form); an XSpace with derived lines is never that JSON.
 */
export function derivedLanesNote(format: TraceFormat, namedOps: boolean): string {
  if (format === 'xplane') {
    return namedOps
      ? 'XSpace: the lines derived from the kernels (XLA Ops, XLA Modules, Steps, …) are not counted again'
      : 'XSpace: the lines derived from the kernels (XLA Ops, XLA Modules, Steps, …) are not counted again; its kernels carry no HLO op or program (hlo_op, hlo_module), so ops are kernels and steps cannot be told';
  }
  return namedOps
    ? 'xprof trace-viewer JSON: the lines xprof derives from the kernels (XLA Ops, XLA Modules, Framework Ops, …) are not counted again'
    : "xprof's streaming trace-viewer JSON: its kernels carry no HLO op or program (xprof loads those on demand), so ops are kernels and steps cannot be told; the .xplane.pb or xprof's non-streaming trace_viewer JSON has them";
}

/** The program with the most op time inside steps. */
function heaviestInSteps(counted: readonly Counted[]): string | undefined {
  const time = new Map<string, number>();
  for (const c of counted)
    if (c.selfPs > 0 && c.op.program !== '') time.set(c.op.program, (time.get(c.op.program) ?? 0) + c.selfPs);
  return [...time].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]?.[0];
}

/** Busy time inside the step windows, from a windows-mode pass. */
function windowBusy(final: TraceCollector): number {
  let busy = 0;
  for (const dev of final.deviceStates())
    if (dev.windowBusyPs !== undefined) for (const b of dev.windowBusyPs) busy += b;
  return busy;
}

/** Busy time of the marked executions of the programs inside steps (pass 1 was exact). */
function executionBusy(
  first: TraceCollector,
  platform: Platform,
  opDevices: ReadonlySet<string>,
  included: Set<string> | 'all',
): number {
  return allExecutions(first, platform, opDevices)
    .filter((e) => included === 'all' || included.has(e.program))
    .reduce((s, e) => s + e.busyPs, 0);
}

/** Executions of a program (all devices): marked ones (TPU modules, CPU runs), or on GPU the modal op count. */
function programExecutionCount(
  program: string,
  first: TraceCollector,
  final: TraceCollector,
  platform: Platform,
): number | null {
  if (platform === 'cpu') {
    let n = 0;
    for (const e of first.cpuExecutions.values()) if (e.program === program) n++;
    for (const e of final.cpuExecutions.values())
      if (e.program === program && first.cpuExecutions.size === 0) n++;
    return n > 0 ? n : null;
  }
  let n = 0;
  for (const dev of first.deviceStates()) for (const m of dev.modules) if (m.program === program) n++;
  if (n > 0) return n;
  if (platform === 'gpu') {
    // The executions the device recorded (host launches may include ones whose kernels were dropped).
    const mode = modalExecutions(programOps(final, program, platform));
    return mode.count > 0 ? mode.count : null;
  }
  return null;
}

/** `f` with its results kept per argument. */
function memoize<T>(f: (key: string) => T): (key: string) => T {
  const cache = new Map<string, T>();
  return (key) => {
    if (!cache.has(key)) cache.set(key, f(key));
    return cache.get(key)!;
  };
}

/** The peaks for the roofline: the XSpace's device plane, else the device kind the caller named. */
function devicePeak(
  input: BuildInput,
  computeDevices: ReadonlySet<string>,
): { lookup: PeakLookup | undefined; source: string } {
  for (const dev of [...input.final.deviceStates(), ...input.first.deviceStates()]) {
    if (!computeDevices.has(dev.device.name)) continue;
    const lookup = peakForPlane(dev.device.stats);
    if (lookup?.peak !== undefined) return { lookup, source: `XSpace plane ${dev.device.name}` };
    const own = planePeak(dev.device.stats);
    if (own !== undefined) {
      return {
        lookup: { peak: own, warning: lookup?.warning },
        source: `the peaks ${dev.device.name} records (not in the table)`,
      };
    }
    if (lookup !== undefined && input.deviceKind === undefined) return { lookup, source: 'none' };
    break;
  }
  if (input.deviceKind !== undefined) {
    const lookup = peakForDeviceKind(input.deviceKind);
    return { lookup, source: lookup.peak === undefined ? 'none' : `device kind "${input.deviceKind}"` };
  }
  return { lookup: undefined, source: 'none' };
}

/** Peaks a TPU plane states itself (`peak_teraflops_per_second`, `peak_hbm_bw_gigabytes_per_second`). */
function planePeak(stats: Readonly<Record<string, string>>): DevicePeak | undefined {
  const tflops = Number(stats.peak_teraflops_per_second);
  const gbps = Number(stats.peak_hbm_bw_gigabytes_per_second);
  if (!(tflops > 0 && gbps > 0)) return undefined;
  return {
    name: stats.device_type_string ?? 'device',
    bf16FlopsPerSecond: tflops * 1e12,
    fp32FlopsPerSecond: null,
    bytesPerSecond: gbps * 1e9,
    matchedBy: 'plane stats peak_teraflops_per_second and peak_hbm_bw_gigabytes_per_second',
  };
}

function passNote(input: BuildInput): string {
  const reasons: string[] = [];
  if (input.first.unsortedLanes.size > 0) reasons.push('some lanes were out of time order');
  if (input.first.modulesLate.size > 0) reasons.push('XLA Modules came after their ops');
  if (input.source.cheapLaneSkip) reasons.push('XSpace: structure first, then ops');
  else if (input.final !== input.first) reasons.push('step windows split some programs');
  return `read ${input.passes} times${reasons.length > 0 ? ` (${reasons.join('; ')})` : ' (lane names arrived late)'}`;
}

/**
 * Per compute device, the op time inside steps, per step (each device ran `stepsPerDevice` steps): the
 * slowest and fastest device, and per op row (program and op, as opRows keys them) its time per step
 * on the device where it took the longest.
 */
function deviceOpSpread(
  final: TraceCollector,
  counted: readonly Counted[],
  computeDevices: ReadonlySet<string>,
  stepsPerDevice: number,
): { spread: Omit<OpSpread, 'meanMs'>; byOp: Map<string, number> } {
  const names = new Map<number, string>();
  for (const dev of final.deviceStates())
    if (computeDevices.has(dev.device.name)) names.set(dev.index, dev.device.name);
  const totals = new Map<number, number>([...names.keys()].map((i) => [i, 0]));
  const rows = new Map<string, Map<number, number>>();
  for (const c of counted) {
    if (c.selfPs === 0 || c.op.selfInPs === 0) continue;
    // The share of the op's counted time that is inside steps (all of it, or none, outside windows).
    const inSteps = c.selfPs / c.op.selfInPs;
    const key = `${c.op.program}\u0000${c.op.baseName}`;
    const row = rows.get(key) ?? new Map<number, number>();
    rows.set(key, row);
    c.op.selfInByDevice.forEach((ps, i) => {
      if (!names.has(i)) return;
      row.set(i, (row.get(i) ?? 0) + ps * inSteps);
      totals.set(i, totals.get(i)! + ps * inSteps);
    });
  }
  const perStep = (ps: number) => ms(ps / Math.max(stepsPerDevice, 1e-9));
  const ranked = [...totals].sort((a, b) => b[1] - a[1] || names.get(a[0])!.localeCompare(names.get(b[0])!));
  const byOp = new Map<string, number>();
  for (const [key, row] of rows) byOp.set(key, perStep(Math.max(...row.values())));
  return {
    spread: {
      devices: names.size,
      slowest: names.get(ranked[0]![0])!,
      slowestMs: perStep(ranked[0]![1]),
      fastestMs: perStep(ranked.at(-1)![1]),
    },
    byOp,
  };
}

/** The op rows with their slowest device's time per step, when the summary has an op spread. */
function withSlowestDevice(rows: OpRow[], byOp: ReadonlyMap<string, number> | undefined): OpRow[] {
  if (byOp === undefined) return rows;
  return rows.map((r) => ({ ...r, slowestDeviceMs: byOp.get(`${r.program}\u0000${r.name}`) ?? 0 }));
}

function windowCount(windows: StepWindows, devices: ReadonlySet<string>): number {
  let n = 0;
  for (const [device, w] of windows) if (devices.has(device)) n += w.starts.length;
  return n;
}

function deviceRows(
  final: TraceCollector,
  first: TraceCollector,
  opDevices: ReadonlySet<string>,
  computeDevices: ReadonlySet<string>,
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
      ...(stats.device_vendor ? { vendor: stats.device_vendor } : {}),
      ...(describeGpuPlane(stats) ? { hardware: describeGpuPlane(stats) } : {}),
      peakTflops: Number.isFinite(peak) && peak > 0 ? peak : undefined,
      compute: computeDevices.has(dev.device.name),
      opMs: ms(dev.opPs),
      busyMs: ms(dev.busyPs),
    });
  }
  // Devices whose ops were only read in pass 1 (CPU) keep their pass-1 numbers.
  if (rows.length === 0 && final !== first) return deviceRows(first, first, opDevices, computeDevices);
  return rows.sort((a, b) => a.name.localeCompare(b.name, 'en', { numeric: true }));
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
