/**
 * Step detection. Three detectors, tried in order (reference/traces.md §4):
 *   1. `device-steps`: a `Steps` line on a device; each event is one step on that device.
 *   2. `host-annotations`: host events with a `step_num` arg (jax.profiler.StepTraceAnnotation) or named
 *      `ProfilerStep#N` (PyTorch); step i spans from its start to the next step's start (the last one to
 *      its end), and device work is attributed to the step during which it started.
 *   3. `dominant-program`: the program with the most execution time; each execution is one step (TPU
 *      `XLA Modules` events, XLA:CPU `run_id` groups). On GPU, where executions are not marked, the count
 *      is estimated from how often the program's kernels repeat.
 * Without any of these the whole trace is one step (`whole-trace`).
 */
import type { Execution, StepMarker, StepWindows, TraceCollector } from './collect.js';

export type StepDetector = 'device-steps' | 'host-annotations' | 'dominant-program' | 'whole-trace';

export type Platform = 'tpu' | 'gpu' | 'cpu';

export interface StepPlan {
  detector: StepDetector;
  /** One line saying what was found, for people. */
  detail: string;
  /** Step windows (absent for `whole-trace` and for GPU programs without marked executions). */
  windows: StepWindows | undefined;
  /** Step lengths in ps, one per step per device (empty when they must come from op time). */
  stepDurationsPs: number[];
  /** For `dominant-program`: the program (full module name). */
  program: string | undefined;
  /** For `dominant-program` with marked executions: the executions that are the steps. */
  executions: Execution[] | undefined;
  notes: string[];
}

/** Choose the detector and build step windows from a structure pass (ops from `opsPass` when it read them). */
export function planSteps(
  c: TraceCollector,
  platform: Platform,
  opDevices: ReadonlySet<string>,
  opsPass: TraceCollector = c,
): StepPlan {
  const notes: string[] = [];

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
    return {
      detector: 'device-steps',
      detail: `device Steps line: ${fmtCount(perDevice)} steps on each of ${windows.size} device(s)`,
      windows,
      stepDurationsPs: deviceDurations,
      program: undefined,
      executions: undefined,
      notes,
    };
  }

  // 2. Host step annotations.
  const host = topLevel(c.hostSteps);
  if (host.length > 0) {
    const starts = host.map((m) => m.startPs);
    const ends = host.map((m, k) => (k + 1 < host.length ? host[k + 1]!.startPs : m.startPs + m.durPs));
    const perDevice = platform === 'cpu' ? 1 : Math.max(1, opDevices.size);
    const durations: number[] = [];
    for (let d = 0; d < perDevice; d++) for (const m of host) durations.push(m.durPs);
    notes.push(
      'device work is attributed to the host step during which it started; step time is the annotation length',
    );
    return {
      detector: 'host-annotations',
      detail: `host step annotations (${host[0]!.name}…): ${host.length} steps`,
      windows: new Map([['*', { starts, ends }]]),
      stepDurationsPs: durations,
      program: undefined,
      executions: undefined,
      notes,
    };
  }

  // 3. The dominant program.
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
    return {
      detector: 'dominant-program',
      detail: `dominant program ${program}: ${fmtCount(steps.length / devices.size)} executions on each of ${devices.size} device(s)`,
      windows: stepWindows,
      stepDurationsPs: steps.map((e) => e.endPs - e.startPs),
      program,
      executions: steps,
      notes,
    };
  }
  const programs = programTimes(opsPass, platform);
  if (programs.length > 0) {
    const program = programs[0]![0];
    notes.push(
      'no step markers and no marked executions: steps are executions of the dominant program, counted from how often its kernels repeat',
    );
    return {
      detector: 'dominant-program',
      detail: `dominant program ${program} (execution count estimated from kernel repetition)`,
      windows: undefined,
      stepDurationsPs: [],
      program,
      executions: undefined,
      notes,
    };
  }

  notes.push('no step markers and no program information: the whole trace is treated as one step');
  return {
    detector: 'whole-trace',
    detail: 'no step markers: the whole trace is one step',
    windows: undefined,
    stepDurationsPs: [],
    program: undefined,
    executions: undefined,
    notes,
  };
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

function fmtCount(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}
