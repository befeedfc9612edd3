/**
 * Step detection. Detectors, tried in order; the first that applies defines the steps, and every other
 * one that applies gives its own count, so a disagreement can be reported (reference/traces.md §4):
 *   1. `device-steps`: a `Steps` line on a device; each event is one step on that device.
 *   2. `host-annotations`: host events with a `step_num` arg (jax.profiler.StepTraceAnnotation) or named
 *      `ProfilerStep#N` (PyTorch); step i spans from its start to the next step's start (the last one to
 *      its end), and device work is attributed to the step during which it started.
 *   3. `host-launches` (GPU): the host's launches of the dominant program (`jit_f:XLA GPU module`
 *      events); each launch runs the program once on one device.
 *   4. `dominant-program`: the program with the most execution time; each execution is one step (TPU
 *      `XLA Modules` events, XLA:CPU `run_id` groups).
 *   5. `kernel-repetition` (GPU, nothing marked): the modal execution count of the dominant program's
 *      ops. The mode, not a greatest common divisor: one kernel that lost its `hlo_op` tag turns counts
 *      40, 39, 79, 40 into a GCD of 1.
 * Without any of these the whole trace is one step (`whole-trace`).
 *
 * Per-device counts divide by the devices that ran compute (not only memory copies).
 */
import type { Execution, OpInfo, StepMarker, StepWindows, TraceCollector } from './collect.js';
import { profilerStepNumber } from './ops.js';

export type StepDetector =
  | 'device-steps'
  | 'host-annotations'
  | 'host-launches'
  | 'dominant-program'
  | 'kernel-repetition'
  | 'whole-trace';

export type Platform = 'tpu' | 'gpu' | 'cpu';

/** How far a detector's count can be trusted. */
export type Confidence = 'high' | 'medium' | 'low';

/** What one detector found. */
export interface StepEstimate {
  detector: StepDetector;
  /** Steps per device (a fraction when devices ran different counts). */
  perDevice: number;
  confidence: Confidence;
  /** One line: what was counted. */
  detail: string;
}

export interface StepPlan {
  detector: StepDetector;
  /** One line saying what was found, for people. */
  detail: string;
  /** Step windows (absent for `whole-trace` and for GPU programs without marked executions). */
  windows: StepWindows | undefined;
  /** Step lengths in ps, one per step per device (empty when they must come from op time). */
  stepDurationsPs: number[];
  /** For the program detectors: the program (full module name). */
  program: string | undefined;
  /** For `dominant-program` with marked executions: the executions that are the steps. */
  executions: Execution[] | undefined;
  /** For `host-launches`: how many launches the program had (all devices together). */
  launches: number | undefined;
  notes: string[];
}

/** Whether a detector reads step markers the trace carries (the others infer steps from repetition). */
export function isMarked(detector: StepDetector): boolean {
  return detector === 'device-steps' || detector === 'host-annotations';
}

/** Steps holding at least this share of device op time keep their detector's confidence. */
export const FULL_COVERAGE = 0.8;
/** Steps holding less than this share of device op time are low confidence: most work is elsewhere. */
export const MINOR_COVERAGE = 0.5;

/**
 * The confidence of a step count, capped by the share of device op time inside the steps: a count
 * can be right while describing a minor part of the trace (one of twelve programs), and per-step
 * numbers then say little about the trace. 80% or more keeps the detector's own confidence; 50–80%
 * is at most medium; under 50% is low.
 */
export function coverageConfidence(detectorConfidence: Confidence, coverage: number): Confidence {
  if (coverage < MINOR_COVERAGE) return 'low';
  if (coverage < FULL_COVERAGE && detectorConfidence === 'high') return 'medium';
  return detectorConfidence;
}

const CONFIDENCE: Record<StepDetector, Confidence> = {
  'device-steps': 'high',
  'host-annotations': 'high',
  'host-launches': 'high',
  'dominant-program': 'high',
  'kernel-repetition': 'medium',
  'whole-trace': 'low',
};

/** Choose the detector and build step windows from a structure pass (ops from `opsPass` when it read them). */
export function planSteps(
  c: TraceCollector,
  platform: Platform,
  opDevices: ReadonlySet<string>,
  opsPass: TraceCollector = c,
): StepPlan {
  const notes: string[] = [];
  const plan = (p: Omit<StepPlan, 'notes' | 'launches'> & { launches?: number }): StepPlan => ({
    launches: undefined,
    ...p,
    notes,
  });

  // 1. Device Steps lines (only on devices that ran ops).
  const windows: StepWindows = new Map();
  const deviceDurations: number[] = [];
  for (const [device, markers] of c.stepMarkers) {
    if (!opDevices.has(device.name) || markers.length === 0) continue;
    const sorted = [...markers].sort((a, b) => a.startPs - b.startPs);
    windows.set(device.name, {
      starts: sorted.map((m) => m.startPs),
      ends: sorted.map((m) => m.startPs + m.durPs),
    });
    for (const m of sorted) deviceDurations.push(m.durPs);
  }
  if (windows.size > 0) {
    const perDevice = deviceDurations.length / windows.size;
    return plan({
      detector: 'device-steps',
      detail: `device Steps line: ${fmtCount(perDevice)} steps on each of ${windows.size} device(s)`,
      windows,
      stepDurationsPs: deviceDurations,
      program: undefined,
      executions: undefined,
    });
  }

  // 2. Host step annotations: of several kinds (e.g. hillclimb_fwd and hillclimb_fwd_bwd), the one with
  // the most time.
  const kinds = annotationKinds(c.hostSteps);
  if (kinds.length > 0) {
    const chosen = kinds[0]!;
    const host = chosen.markers;
    const starts = host.map((m) => m.startPs);
    const ends = host.map((m, k) => (k + 1 < host.length ? host[k + 1]!.startPs : m.startPs + m.durPs));
    notes.push(
      'device work is attributed to the host step during which it started; step time is the annotation length',
    );
    if (kinds.length > 1) {
      notes.push(
        `steps are the "${chosen.name}" annotations (the most time); also annotated: ${kinds
          .slice(1)
          .map((k) => `"${k.name}" ×${k.markers.length}`)
          .join(', ')}`,
      );
    }
    return plan({
      detector: 'host-annotations',
      detail: `host step annotations (${chosen.name}…): ${host.length} steps`,
      windows: new Map([['*', { starts, ends }]]),
      // One duration per annotation; buildSummary repeats them per device that ran compute.
      stepDurationsPs: host.map((m) => m.durPs),
      program: undefined,
      executions: undefined,
    });
  }

  // 3. GPU: host launches of the dominant program, unless the devices recorded fewer executions.
  const programs = programTimes(opsPass, platform);
  if (platform === 'gpu' && programs.length > 0) {
    const launch = launchesOf(c, programs);
    if (launch !== undefined) {
      const ran = [...(opsPass.programDevices.get(launch.program) ?? [])].filter((d) => opDevices.has(d));
      const devices = Math.max(1, ran.length);
      const perLauncher = launch.count / launch.launchers;
      const mode = modalExecutions(programOps(opsPass, launch.program, platform));
      if (mode.share >= 0.5 && mode.count / devices < perLauncher - 0.5) {
        notes.push(
          `the host launched ${launch.module} ${fmtCount(perLauncher)} times per launching thread, but the devices recorded ${fmtCount(mode.count / devices)} executions each: device events of the other launches are missing, so steps are the executions the devices recorded`,
        );
      } else {
        notes.push(
          'each host launch of the dominant program is one step; other programs count as outside steps',
        );
        return plan({
          detector: 'host-launches',
          detail: `host launches of ${launch.module} (${launch.program}): ${launch.count} from ${launch.launchers} thread(s)`,
          windows: undefined,
          stepDurationsPs: [],
          program: launch.program,
          executions: undefined,
          launches: launch.count,
        });
      }
    }
  }

  // 4. The dominant program's marked executions.
  const executions = allExecutions(c, platform, opDevices);
  if (executions.length > 0) {
    const byProgram = new Map<string, number>();
    for (const e of executions)
      byProgram.set(e.program, (byProgram.get(e.program) ?? 0) + (e.endPs - e.startPs));
    const program = [...byProgram].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]![0];
    const steps = executions.filter((e) => e.program === program).sort((a, b) => a.startPs - b.startPs);
    const devices = new Set(steps.map((e) => e.device.name));
    const stepWindows: StepWindows = new Map();
    for (const device of devices) {
      const mine = steps.filter((e) => e.device.name === device);
      stepWindows.set(device, { starts: mine.map((e) => e.startPs), ends: mine.map((e) => e.endPs) });
    }
    notes.push(
      'no step markers: each execution of the dominant program is a step; host gaps between them are excluded',
    );
    return plan({
      detector: 'dominant-program',
      detail: `dominant program ${program}: ${fmtCount(steps.length / devices.size)} executions on each of ${devices.size} device(s)`,
      windows: stepWindows,
      stepDurationsPs: steps.map((e) => e.endPs - e.startPs),
      program,
      executions: steps,
    });
  }

  // 5. GPU without launches: how often the dominant program's ops ran.
  if (programs.length > 0) {
    const program = programs[0]![0];
    notes.push(
      'no step markers and no launches or executions: steps are executions of the dominant program, counted as the most common execution count of its ops',
    );
    return plan({
      detector: 'kernel-repetition',
      detail: `dominant program ${program} (execution count from how often its ops ran)`,
      windows: undefined,
      stepDurationsPs: [],
      program,
      executions: undefined,
    });
  }

  notes.push('no step markers and no program information: the whole trace is treated as one step');
  return plan({
    detector: 'whole-trace',
    detail: 'no step markers: the whole trace is one step',
    windows: undefined,
    stepDurationsPs: [],
    program: undefined,
    executions: undefined,
  });
}

/**
 * The dominant program's launches: module name, count and launching host threads (one per device in
 * JAX), when they are unambiguous.
 */
export function launchesOf(
  c: TraceCollector,
  programs: readonly [string, number][],
): { module: string; program: string; count: number; launchers: number } | undefined {
  if (c.hostLaunches.size === 0 || programs.length === 0) return undefined;
  const program = programs[0]![0];
  const module = moduleName(program);
  const launches = c.hostLaunches.get(module);
  if (launches === undefined || launches.count === 0) return undefined;
  if (
    sameModule(
      programs.map(([p]) => p),
      module,
    ) > 1
  )
    return undefined;
  return { module, program, count: launches.count, launchers: launches.lanes.size };
}

/**
 * How many compilations share a module name. Launches name only the module, so those of several
 * compilations (one per input shape) cannot be told apart. Kernels without a program id count as
 * part of the compilation that has one.
 */
export function sameModule(programs: readonly string[], module: string): number {
  const withIds = programs.filter((p) => p !== module && moduleName(p) === module).length;
  return withIds === 0 ? (programs.includes(module) ? 1 : 0) : withIds;
}

/** `jit_f(123)` → `jit_f`; names without an id are returned as they are. */
export function moduleName(program: string): string {
  return program.replace(/\(\d+\)$/, '');
}

/** Top-level step annotations grouped by name (`ProfilerStep#N` as one), the most total time first. */
export function annotationKinds(markers: readonly StepMarker[]): { name: string; markers: StepMarker[] }[] {
  const byName = new Map<string, StepMarker[]>();
  for (const m of topLevel(markers)) {
    const name = profilerStepNumber(m.name) === undefined ? m.name : 'ProfilerStep';
    const list = byName.get(name);
    if (list === undefined) byName.set(name, [m]);
    else list.push(m);
  }
  const total = (list: StepMarker[]) => list.reduce((t, m) => t + m.durPs, 0);
  return [...byName]
    .map(([name, list]) => ({ name, markers: list }))
    .sort((a, b) => total(b.markers) - total(a.markers) || a.name.localeCompare(b.name));
}

/** Step markers that do not start inside an earlier one (drops nested annotations). */
function topLevel(markers: readonly StepMarker[]): StepMarker[] {
  const sorted = [...markers].sort((a, b) => a.startPs - b.startPs || b.durPs - a.durPs);
  const out: StepMarker[] = [];
  let end = -Infinity;
  for (const m of sorted) {
    if (m.startPs < end) continue;
    out.push(m);
    end = m.startPs + m.durPs;
  }
  return out;
}

/** Marked executions on the platform's devices: TPU/GPU module events, or XLA:CPU run groups. */
export function allExecutions(
  c: TraceCollector,
  platform: Platform,
  opDevices: ReadonlySet<string>,
): Execution[] {
  if (platform === 'cpu') return [...c.cpuExecutions.values()];
  const out: Execution[] = [];
  for (const dev of c.deviceStates()) {
    if (!opDevices.has(dev.device.name)) continue;
    out.push(...dev.modules);
  }
  return out;
}

/** Programs by total op self time (for traces without marked executions), largest first. */
export function programTimes(c: TraceCollector, platform: Platform): [string, number][] {
  const where = platform === 'cpu' ? 'host' : 'device';
  const times = new Map<string, number>();
  for (const [program, ops] of c.opsByProgram) {
    if (program === '') continue;
    for (const op of ops.values()) {
      if (op.where !== where) continue;
      times.set(program, (times.get(program) ?? 0) + op.selfInPs + op.selfOutPs);
    }
  }
  return [...times].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}

/** A program's ops on the platform's lanes (device ops, or XLA:CPU host ops). */
export function programOps(c: TraceCollector, program: string, platform: Platform): OpInfo[] {
  const where = platform === 'cpu' ? 'host' : 'device';
  return [...(c.opsByProgram.get(program)?.values() ?? [])].filter((op) => op.where === where);
}

/**
 * How many times an op ran (all devices): its events, or on GPU, when one execution launches several
 * differently named kernels, the executions its launches imply. Every kernel runs at least once per
 * execution and some more often (TransformerEngine's backward fills two buffers before its three
 * attention kernels: 10, 5, 5, 5 launches in 5 executions), so each kernel's launches per execution are
 * its launches over a base count, rounded; the executions are the most any kernel's launches imply (a
 * kernel whose `hlo_op` tag was lost ran once less: 39 and 40 launches give 40 executions).
 * `programExecutions` (the op's program's executions, when known) sets the base: the fewest launches of
 * a kernel that ran in at least half of them, in whole program executions, so a kernel launched in
 * only some executions does not lower it. Without it, the base is the fewest launches of any kernel.
 */
export function executionsOf(op: OpInfo, programExecutions?: number): number {
  const count = op.countIn + op.countOut;
  if (op.kernels === undefined || op.kernels.size < 2) return count;
  const launches = [...op.kernels.values()];
  const base = baseLaunches(launches, programExecutions);
  let executions = 0;
  for (const n of launches) executions = Math.max(executions, n / Math.max(1, Math.round(n / base)));
  return Math.min(count, Math.round(executions));
}

/** The launches of one kernel per op execution times the executions: see executionsOf. */
function baseLaunches(launches: readonly number[], programExecutions: number | undefined): number {
  if (programExecutions !== undefined && programExecutions > 0) {
    const regular = launches.filter((n) => n >= programExecutions / 2);
    if (regular.length > 0)
      return programExecutions * Math.max(1, Math.round(Math.min(...regular) / programExecutions));
  }
  return Math.min(...launches);
}

/**
 * The most common execution count among a program's ops (ties go to the larger count), and the share
 * of its ops that have it.
 */
export function modalExecutions(ops: readonly OpInfo[]): { count: number; share: number } {
  const freq = new Map<number, number>();
  for (const op of ops) {
    const n = executionsOf(op);
    if (n > 0) freq.set(n, (freq.get(n) ?? 0) + 1);
  }
  let best = 0;
  let bestFreq = 0;
  for (const [n, f] of freq) {
    if (f > bestFreq || (f === bestFreq && n > best)) {
      best = n;
      bestFreq = f;
    }
  }
  const total = [...freq.values()].reduce((s, f) => s + f, 0);
  return { count: best, share: total === 0 ? 0 : bestFreq / total };
}

export interface EstimateInput {
  plan: StepPlan;
  /** The program with the most op time inside steps: what the program detectors cross-check. */
  stepProgram: string | undefined;
  platform: Platform;
  /** Per-step counts come from these (op devices that ran compute). */
  computeDevices: ReadonlySet<string>;
  first: TraceCollector;
  final: TraceCollector;
}

/**
 * Every detector's count, per device that ran compute, the plan's own first. The chosen count is what
 * the summary uses; the others are there to be compared with it.
 */
export function stepEstimates(input: EstimateInput): StepEstimate[] {
  const { plan, platform, computeDevices, first, final, stepProgram } = input;
  const devices = Math.max(1, computeDevices.size);
  const out: StepEstimate[] = [];
  const add = (detector: StepDetector, perDevice: number, detail: string, confidence?: Confidence) => {
    if (perDevice > 0 && !out.some((e) => e.detector === detector))
      out.push({ detector, perDevice, detail, confidence: confidence ?? CONFIDENCE[detector] });
  };

  // Device Steps lines.
  let markers = 0;
  let withMarkers = 0;
  for (const [device, list] of first.stepMarkers) {
    if (!computeDevices.has(device.name) || list.length === 0) continue;
    markers += list.length;
    withMarkers++;
  }
  if (withMarkers > 0)
    add('device-steps', markers / withMarkers, `${markers} Steps events on ${withMarkers} device(s)`);

  // Host annotations (of the kind the steps are).
  const host = annotationKinds(first.hostSteps)[0]?.markers.length ?? 0;
  if (host > 0) add('host-annotations', host, `${host} host step annotations`);

  const programs = programTimes(final, platform);
  const dominant = plan.program ?? stepProgram ?? programs[0]?.[0];
  const ranOn = (program: string): number => {
    const set = final.programDevices.get(program) ?? first.programDevices.get(program);
    if (set === undefined) return devices;
    let n = 0;
    for (const d of set) if (computeDevices.has(d)) n++;
    return Math.max(1, n);
  };

  // Host launches (GPU), per launching thread (JAX launches each device's executions on its own thread).
  if (platform === 'gpu' && programs.length > 0) {
    const launch = launchesOf(first, programs);
    if (launch !== undefined) {
      add(
        'host-launches',
        launch.count / launch.launchers,
        `${launch.count} launches of ${launch.module} from ${launch.launchers} host thread(s)`,
      );
    }
  }

  // Marked executions of the dominant program (TPU modules, XLA:CPU run ids).
  if (dominant !== undefined) {
    const opDevices = new Set(computeDevices);
    const execs = allExecutions(first, platform, opDevices).filter((e) => e.program === dominant);
    if (execs.length > 0) {
      const on = new Set(execs.map((e) => e.device.name)).size;
      add(
        'dominant-program',
        execs.length / on,
        `${execs.length} executions of ${dominant} on ${on} device(s)`,
      );
    }
  }

  // Op repetition of the dominant program (GPU; elsewhere only as a cross-check).
  if (dominant !== undefined) {
    const mode = modalExecutions(programOps(final, dominant, platform));
    if (mode.count > 0) {
      const on = ranOn(dominant);
      add(
        'kernel-repetition',
        mode.count / on,
        `${mode.count} executions for ${Math.round(mode.share * 100)}% of the ops of ${dominant}, on ${on} device(s)`,
        mode.share >= 0.5 ? 'medium' : 'low',
      );
    }
  }
  // The plan's detector first.
  out.sort((a, b) => (a.detector === plan.detector ? -1 : b.detector === plan.detector ? 1 : 0));
  return out;
}

/**
 * A warning when detectors disagree with the chosen one by more than rounding: each is listed with its
 * count and confidence. Counts of a program that runs several times per annotated step legitimately
 * differ from the annotations; the warning says so.
 */
export function disagreement(estimates: readonly StepEstimate[]): string | undefined {
  const chosen = estimates[0];
  if (chosen === undefined) return undefined;
  const off = estimates.slice(1).filter((e) => Math.abs(e.perDevice - chosen.perDevice) > 0.5);
  if (off.length === 0) return undefined;
  const list = off.map((e) => `${e.detector} ${fmtCount(e.perDevice)} (${e.confidence}: ${e.detail})`);
  return `step detectors disagree: ${chosen.detector} found ${fmtCount(chosen.perDevice)} per device, ${list.join('; ')}`;
}

/** How the devices' step times spread, when several devices have their own step windows. */
export interface DeviceSpread {
  /** Devices whose step windows were compared. */
  devices: number;
  /** Mean step time over devices and steps (the mean device, not the one that gates the step). */
  meanMs: number;
  /** Mean over steps of the slowest minus the fastest device's step time. */
  spreadMs: number;
  /** The device slowest in the most steps, and in how many. */
  slowest: string;
  slowestSteps: number;
}

/**
 * Step lengths across devices with their own step windows (device `Steps` lines, executions of the
 * dominant program), step k being each device's k-th window: a step ends when its slowest device does,
 * so each step's time is that device's. Undefined with fewer than two such devices.
 */
export function slowestDeviceSteps(
  windows: StepWindows,
  devices: ReadonlySet<string>,
): { durationsPs: number[]; spread: DeviceSpread } | undefined {
  const lanes = [...windows].filter(([device]) => devices.has(device));
  if (lanes.length < 2) return undefined;
  const steps = Math.max(...lanes.map(([, w]) => w.starts.length));
  const durationsPs: number[] = [];
  const slowestCount = new Map<string, number>();
  let spreadPs = 0;
  let sumPs = 0;
  let windowCount = 0;
  for (let k = 0; k < steps; k++) {
    let slowest = '';
    let max = -Infinity;
    let min = Infinity;
    for (const [device, w] of lanes) {
      if (k >= w.starts.length) continue;
      const d = w.ends[k]! - w.starts[k]!;
      sumPs += d;
      windowCount++;
      min = Math.min(min, d);
      if (d > max) {
        max = d;
        slowest = device;
      }
    }
    durationsPs.push(max);
    spreadPs += max - min;
    slowestCount.set(slowest, (slowestCount.get(slowest) ?? 0) + 1);
  }
  const [slowest, slowestSteps] = [...slowestCount].sort(
    (a, b) => b[1] - a[1] || a[0].localeCompare(b[0]),
  )[0]!;
  return {
    durationsPs,
    spread: {
      devices: lanes.length,
      meanMs: psToMs(sumPs / windowCount),
      spreadMs: psToMs(spreadPs / steps),
      slowest,
      slowestSteps,
    },
  };
}

/** ps → ms, rounded to the nanosecond (as rows.ts `ms`, which imports this module). */
function psToMs(ps: number): number {
  return Math.round(ps / 1e3) / 1e6;
}

/**
 * Whether each program's executions are either all inside the step windows or all outside; then
 * per-program totals from a program-mode pass give exact per-step numbers without another pass.
 * Returns the programs inside, or undefined when some program is split.
 */
export function programsInsideWindows(
  executions: readonly Execution[],
  windows: StepWindows,
): Set<string> | undefined {
  const inside = new Map<string, number>();
  const total = new Map<string, number>();
  for (const e of executions) {
    total.set(e.program, (total.get(e.program) ?? 0) + 1);
    const w = windows.get(e.device.name) ?? windows.get('*');
    if (w !== undefined && containsStart(w, e.startPs))
      inside.set(e.program, (inside.get(e.program) ?? 0) + 1);
  }
  const out = new Set<string>();
  for (const [program, n] of total) {
    const k = inside.get(program) ?? 0;
    if (k === n) out.add(program);
    else if (k !== 0) return undefined;
  }
  return out;
}

function containsStart(w: { starts: number[]; ends: number[] }, t: number): boolean {
  let lo = 0;
  let hi = w.starts.length - 1;
  let ans = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (w.starts[mid]! <= t) {
      ans = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return ans >= 0 && t < w.ends[ans]!;
}

export function fmtCount(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(2);
}
