/**
 * One streaming pass over a trace: collects the structure steps are made of (device `Steps` lines,
 * `XLA Modules` executions, host step annotations, XLA:CPU executions) and aggregates op self time.
 *
 * Memory stays bounded by the number of distinct ops, programs, executions and steps, never by the
 * number of events: each op lane keeps only a stack of open events (XLA:CPU ops nest, e.g. `while`).
 *
 * Op time is bucketed in one of two ways:
 * - `program` mode (no step windows known yet): every op counts, and each op identity is per program,
 *   found from the enclosing `XLA Modules` execution (TPU) or the `hlo_module` arg (GPU, CPU);
 * - `windows` mode: ops are split into inside / outside the given step windows, and each window's busy
 *   time is accumulated.
 * The caller (summarize.ts) decides after a pass whether it needs another one; see `needsSecondPass`.
 *
 * XLA:CPU runs every device of a host on the same pool of host threads, so a host lane is not a device:
 * each XLA:CPU op is counted on the device its `device_ordinal` names (`/host:CPU:2`), which keeps a
 * pmap over N forced host devices N devices rather than one device N times as busy.
 */

import {
  baseOpName,
  deriveCategory,
  isCustomCall,
  isDerivedGpuLane,
  type LaneRole,
  laneRole,
  numberArg,
  profilerStepNumber,
  scopeOf,
} from './ops.js';
import type { TraceDevice, TraceEventView, TraceLane, TraceVisitor } from './readers/model.js';

/** One op identity: a named HLO instruction (or kernel) of one program, with its aggregated time. */
export interface OpInfo {
  name: string;
  baseName: string;
  program: string;
  category: string;
  scope: string;
  longName: string | undefined;
  customCall: boolean;
  /** FLOPs per occurrence from the cost model (absent in the trace when undefined). */
  flops: number | undefined;
  /** Bytes accessed per occurrence (absent in the trace when undefined). */
  bytes: number | undefined;
  /** Where the op ran: on a device (TPU/GPU lanes) or on host threads (XLA:CPU). */
  where: 'device' | 'host';
  /** The program id (`program_id` arg, or the number in `jit_f(123)`), when the trace has one. */
  programId: string | undefined;
  /** A memory copy or set (no compute): such devices do not count as running steps. */
  memcpy: boolean;
  /**
   * GPU: launches per kernel name, when the op's kernels are not named after it (a cuDNN convolution
   * launches an im2col kernel and a GEMM). An op execution launches each of them once.
   */
  kernels: Map<string, number> | undefined;
  /** Occurrences and self time counted (inside steps; or all, in program mode). */
  countIn: number;
  selfInPs: number;
  /** selfInPs by device (DeviceState.index): a mean over devices hides an op that ran on a few. */
  selfInByDevice: number[];
  /** Occurrences and self time outside every step window (windows mode only). */
  countOut: number;
  selfOutPs: number;
}

/** One run of a program on a device: an `XLA Modules` event, or an XLA:CPU (hlo_module, run_id) group. */
export interface Execution {
  device: TraceDevice;
  program: string;
  startPs: number;
  endPs: number;
  /** Union of top-level op time inside the execution. */
  busyPs: number;
}

export interface StepMarker {
  startPs: number;
  durPs: number;
  name: string;
}

/** Step windows for a windows-mode pass: per device name, or `*` for windows every device shares. */
export type StepWindows = Map<string, { starts: number[]; ends: number[] }>;

export interface CollectOptions {
  /** Collect modules, step markers and host annotations. */
  structure: boolean;
  /** How op time is bucketed, or `skip` to not read device op lanes at all. */
  ops: 'program' | 'windows' | 'skip';
  windows?: StepWindows;
  /** Executions from an earlier pass, so a windows pass can still name each op's program. */
  modules?: Map<string, Execution[]>;
  /** Lanes (`device\u0000lane`) whose events arrive out of order: buffered and sorted before use. */
  bufferLanes?: ReadonlySet<string>;
}

const ROLE_IGNORE = 0;
const ROLE_OPS = 1;
const ROLE_MODULES = 2;
const ROLE_STEPS = 3;
const ROLE_HOST = 4;
const ROLE_CODE: Record<LaneRole, number> = {
  ignore: ROLE_IGNORE,
  ops: ROLE_OPS,
  modules: ROLE_MODULES,
  steps: ROLE_STEPS,
  host: ROLE_HOST,
};

interface DeviceState {
  device: TraceDevice;
  /** Order of first sight in this pass: the index of OpInfo.selfInByDevice. */
  index: number;
  modules: Execution[];
  modulesSorted: boolean;
  moduleCursor: number;
  opsSeen: boolean;
  windows: { starts: number[]; ends: number[] } | undefined;
  windowCursor: number;
  windowBusyPs: Float64Array | undefined;
  windowOpPs: Float64Array | undefined;
  opPs: number;
  /** Op self time of ops that are not memory copies or sets. */
  computePs: number;
  busyPs: number;
  firstOpPs: number;
  lastOpEndPs: number;
  lastOpStartPs: number;
  opLanes: Set<string>;
}

interface LaneState {
  role: number;
  hasOps: boolean;
  gpu: boolean;
  tpu: boolean;
  keyProgram: string | undefined;
  keyCache: Map<unknown, OpInfo> | undefined;
  /** The program of the lane's last op (programDevices is updated when it changes). */
  lastProgram: string | undefined;
  lane: TraceLane;
  /** The lane's device; on host lanes, XLA:CPU ops are counted on the device of their ordinal instead. */
  device: DeviceState;
  /** The device of the lane's last op, for `opLanes` and `programDevices`. */
  lastOpDevice: DeviceState | undefined;
  /** The `device_ordinal` of the lane's last XLA:CPU op. */
  lastOrdinal: string | undefined;
  where: 'device' | 'host';
  depth: number;
  starts: number[];
  ends: number[];
  durs: number[];
  childPs: number[];
  ops: OpInfo[];
  execs: (Execution | undefined)[];
  /** The device each open event counts on. */
  devs: DeviceState[];
  lastStart: number;
  buffer:
    | {
        starts: number[];
        durs: number[];
        selfDurs: number[];
        ops: OpInfo[];
        execs: (Execution | undefined)[];
        devs: DeviceState[];
      }
    | undefined;
}

export class TraceCollector implements TraceVisitor {
  readonly devices = new Map<TraceDevice, DeviceState>();
  /** Op identities, per program then per name. */
  readonly opsByProgram = new Map<string, Map<string, OpInfo>>();
  readonly stepMarkers = new Map<TraceDevice, StepMarker[]>();
  readonly hostSteps: StepMarker[] = [];
  readonly cpuExecutions = new Map<string, Execution>();
  /** Lanes seen out of start order. */
  readonly unsortedLanes = new Set<string>();
  /** Devices whose modules arrived after some of their ops (program attribution needs another pass). */
  readonly modulesLate = new Set<TraceDevice>();
  /** Devices with op lanes (TPU `XLA Ops`, GPU streams), read or skipped. */
  readonly deviceOpLanes = new Set<TraceDevice>();
  /** Every device with a lane offered. */
  readonly allDevices = new Set<TraceDevice>();
  /** GPU host launches of a program (`jit_f:XLA GPU module` events) by module name, and the host lanes. */
  readonly hostLaunches = new Map<string, { count: number; lanes: Set<string> }>();
  /** The devices each program's ops ran on (device names). */
  readonly programDevices = new Map<string, Set<string>>();
  /** GPU lines xprof's trace viewer derived from the streams (ignored; counted to say so). */
  derivedGpuLanes = 0;
  private readonly lanes: LaneState[] = [];
  /** Op identities by event key, per program (see TraceEventView.key). */
  private readonly keyCaches = new Map<string, Map<unknown, OpInfo>>();
  /** The XLA:CPU devices of each host plane, by plane name and ordinal (see hostOpDevice). */
  private readonly ordinalDevices = new Map<string, TraceDevice>();
  private deviceOps = false;
  private hostOps = false;

  constructor(private readonly opts: CollectOptions) {}

  /** Whether this pass aggregated the ops of a platform: device lanes (TPU, GPU) or host threads (CPU). */
  collectedOps(where: 'device' | 'host'): boolean {
    return where === 'device' ? this.deviceOps : this.hostOps;
  }

  wantLane(lane: TraceLane): boolean {
    this.allDevices.add(lane.device);
    if (lane.device.kind === 'gpu' && isDerivedGpuLane(lane.name.trim())) this.derivedGpuLanes++;
    const role = ROLE_CODE[laneRole(lane)];
    if (role === ROLE_OPS) this.deviceOpLanes.add(lane.device);
    if (role === ROLE_IGNORE) return false;
    if (role === ROLE_OPS && this.opts.ops === 'skip') return false;
    if ((role === ROLE_MODULES || role === ROLE_STEPS) && !this.opts.structure) return false;
    const device = this.deviceState(lane.device);
    const key = laneKey(lane);
    const state: LaneState = {
      role,
      hasOps: false,
      gpu: lane.device.kind === 'gpu',
      tpu: lane.device.kind === 'tpu',
      keyProgram: undefined,
      keyCache: undefined,
      lastProgram: undefined,
      lane,
      device,
      lastOpDevice: undefined,
      lastOrdinal: undefined,
      where: role === ROLE_HOST ? 'host' : 'device',
      depth: 0,
      starts: [],
      ends: [],
      durs: [],
      childPs: [],
      ops: [],
      execs: [],
      devs: [],
      lastStart: -Infinity,
      buffer: this.opts.bufferLanes?.has(key)
        ? { starts: [], durs: [], selfDurs: [], ops: [], execs: [], devs: [] }
        : undefined,
    };
    this.lanes[lane.index] = state;
    return true;
  }

  onEvent(lane: TraceLane, ev: TraceEventView): void {
    const st = this.lanes[lane.index]!;
    switch (st.role) {
      case ROLE_OPS:
        // GPU kernels are grouped by the HLO op that launched them, like TPU ops.
        if (st.gpu) this.opEvent(st, ev, ev.arg('hlo_op') ?? ev.name, undefined);
        else this.opEvent(st, ev, undefined, ev.key);
        return;
      case ROLE_MODULES:
        if (this.opts.structure) this.moduleEvent(st.device, ev);
        return;
      case ROLE_STEPS:
        if (this.opts.structure) this.markers(st.device.device).push(marker(ev));
        return;
      case ROLE_HOST:
        this.hostEvent(st, ev);
        return;
    }
  }

  /** Close every open event; call once after the read. */
  finish(): void {
    for (const st of this.lanes) {
      if (st === undefined) continue;
      if (st.buffer !== undefined) this.replay(st);
      while (st.depth > 0) this.pop(st);
    }
  }

  // ---- structure ------------------------------------------------------------------------------------

  private moduleEvent(dev: DeviceState, ev: TraceEventView): void {
    const exec: Execution = {
      device: dev.device,
      program: ev.name,
      startPs: ev.startPs,
      endPs: ev.startPs + ev.durPs,
      busyPs: 0,
    };
    const list = dev.modules;
    if (list.length > 0 && list[list.length - 1]!.startPs > exec.startPs) dev.modulesSorted = false;
    list.push(exec);
    // A module starting before an op already attributed may have owned it (time-sorted files are fine).
    if (dev.opsSeen && exec.startPs <= dev.lastOpStartPs) this.modulesLate.add(dev.device);
  }

  private markers(device: TraceDevice): StepMarker[] {
    let list = this.stepMarkers.get(device);
    if (list === undefined) {
      list = [];
      this.stepMarkers.set(device, list);
    }
    return list;
  }

  /** Host events are step annotations, XLA:CPU ops (they carry `hlo_op`), or neither. */
  private hostEvent(st: LaneState, ev: TraceEventView): void {
    const name = ev.name;
    if (profilerStepNumber(name) !== undefined || ev.arg('step_num') !== undefined) {
      if (this.opts.structure) this.hostSteps.push(marker(ev));
      return;
    }
    if (name.endsWith(GPU_LAUNCH_SUFFIX)) {
      if (this.opts.structure) {
        const module = name.slice(0, -GPU_LAUNCH_SUFFIX.length);
        let launches = this.hostLaunches.get(module);
        if (launches === undefined) {
          launches = { count: 0, lanes: new Set() };
          this.hostLaunches.set(module, launches);
        }
        launches.count++;
        launches.lanes.add(laneKey(st.lane));
      }
      return;
    }
    const hloOp = ev.arg('hlo_op');
    if (hloOp !== undefined) this.opEvent(st, ev, hloOp, undefined);
  }

  // ---- ops --------------------------------------------------------------------------------------------

  /**
   * An op event; `opName` overrides the event name (GPU, CPU), `key` (the event's identity) lets the op
   * identity be found without hashing its name.
   */
  private opEvent(st: LaneState, ev: TraceEventView, opName: string | undefined, key: unknown): void {
    const start = ev.startPs;
    const dur = ev.durPs;
    const dev = st.where === 'host' ? this.hostOpDevice(st, ev) : st.device;
    if (st.where === 'device') this.deviceOps = true;
    else this.hostOps = true;
    if (!dev.opsSeen) {
      dev.opsSeen = true;
      if (!dev.modulesSorted) sortExecutions(dev);
    }
    if (!st.hasOps || st.lastOpDevice !== dev) {
      st.hasOps = true;
      dev.opLanes.add(st.lane.name);
    }
    if (start > dev.lastOpStartPs) dev.lastOpStartPs = start;
    let exec: Execution | undefined;
    let program = '';
    if (st.where === 'device') {
      exec = this.enclosingModule(dev, start);
      if (exec !== undefined) program = exec.program;
      else if (st.gpu) program = gpuProgram(ev);
    } else {
      program = ev.arg('hlo_module') ?? '';
      exec = this.cpuExecution(dev.device, program, ev.arg('run_id'), start, start + dur);
    }
    let op: OpInfo | undefined;
    if (key !== undefined) {
      let byKey = st.keyProgram === program ? st.keyCache : undefined;
      if (byKey === undefined) {
        byKey = this.keyCaches.get(program);
        if (byKey === undefined) {
          byKey = new Map();
          this.keyCaches.set(program, byKey);
        }
        st.keyProgram = program;
        st.keyCache = byKey;
      }
      op = byKey.get(key);
      if (op === undefined) {
        op = this.opInfo(program, ev.name, ev, st);
        byKey.set(key, op);
      }
    } else op = this.opInfo(program, opName ?? ev.name, ev, st);
    if (st.lastProgram !== program || st.lastOpDevice !== dev) {
      st.lastProgram = program;
      st.lastOpDevice = dev;
      let devices = this.programDevices.get(program);
      if (devices === undefined) {
        devices = new Set();
        this.programDevices.set(program, devices);
      }
      devices.add(dev.device.name);
    }
    if (st.gpu && opName !== undefined && opName !== ev.name) {
      op.kernels ??= new Map();
      op.kernels.set(ev.name, (op.kernels.get(ev.name) ?? 0) + 1);
    }
    // TPU ops carry the device's own measurement; xprof's op statistics use it, so do we. The timeline
    // duration still decides nesting and busy time.
    const selfDur = st.tpu ? (ev.argNumber('device_duration_ps') ?? dur) : dur;
    if (st.buffer !== undefined) {
      st.buffer.starts.push(start);
      st.buffer.durs.push(dur);
      st.buffer.selfDurs.push(selfDur);
      st.buffer.ops.push(op);
      st.buffer.execs.push(exec);
      st.buffer.devs.push(dev);
      return;
    }
    if (start < st.lastStart) this.unsortedLanes.add(laneKey(st.lane));
    st.lastStart = start;
    this.push(st, start, dur, selfDur, op, exec, dev);
  }

  private opInfo(program: string, name: string, ev: TraceEventView, st: LaneState): OpInfo {
    let byName = this.opsByProgram.get(program);
    if (byName === undefined) {
      byName = new Map();
      this.opsByProgram.set(program, byName);
    }
    // Host events that name an HLO op are XLA:CPU ops, or on GPU the host's kernel launches: never the
    // same op as a device event of that name.
    const key = st.where === 'host' ? `${HOST_KEY}${name}` : name;
    let op = byName.get(key);
    if (op === undefined) {
      op = newOpInfo(program, name, ev, st);
      byName.set(key, op);
    }
    return op;
  }

  /** The module execution on this device that contains `t`, if any (ops arrive mostly in time order). */
  private enclosingModule(dev: DeviceState, t: number): Execution | undefined {
    const list = this.opts.modules?.get(dev.device.name) ?? dev.modules;
    const n = list.length;
    if (n === 0) return undefined;
    let c = dev.moduleCursor;
    if (c >= n || list[c]!.startPs > t) c = lastAtOrBefore(list, t);
    while (c + 1 < n && list[c + 1]!.startPs <= t) c++;
    dev.moduleCursor = Math.max(c, 0);
    if (c < 0) return undefined;
    const m = list[c]!;
    return t < m.endPs || (t === m.startPs && m.endPs === m.startPs) ? m : undefined;
  }

  private cpuExecution(
    device: TraceDevice,
    program: string,
    runId: string | undefined,
    start: number,
    end: number,
  ) {
    if (runId === undefined) return undefined;
    const key = `${device.name}\u0000${program}\u0000${runId}`;
    let exec = this.cpuExecutions.get(key);
    if (exec === undefined) {
      exec = { device, program, startPs: start, endPs: end, busyPs: 0 };
      this.cpuExecutions.set(key, exec);
    } else {
      if (start < exec.startPs) exec.startPs = start;
      if (end > exec.endPs) exec.endPs = end;
    }
    return exec;
  }

  private push(
    st: LaneState,
    start: number,
    dur: number,
    selfDur: number,
    op: OpInfo,
    exec: Execution | undefined,
    dev: DeviceState,
  ): void {
    const end = start + dur;
    while (st.depth > 0 && start >= st.ends[st.depth - 1]!) this.pop(st);
    if (st.depth > 0) {
      const parentEnd = st.ends[st.depth - 1]!;
      st.childPs[st.depth - 1]! += Math.min(end, parentEnd) - start;
    }
    const d = st.depth++;
    st.starts[d] = start;
    st.ends[d] = end;
    st.durs[d] = selfDur;
    st.childPs[d] = 0;
    st.ops[d] = op;
    st.execs[d] = exec;
    st.devs[d] = dev;
  }

  private pop(st: LaneState): void {
    const d = --st.depth;
    const start = st.starts[d]!;
    const dur = st.ends[d]! - start;
    const self = Math.max(0, st.durs[d]! - st.childPs[d]!);
    const op = st.ops[d]!;
    const dev = st.devs[d]!;
    const top = d === 0;
    dev.opPs += self;
    if (!op.memcpy) dev.computePs += self;
    if (top) {
      dev.busyPs += dur;
      if (start < dev.firstOpPs) dev.firstOpPs = start;
      if (start + dur > dev.lastOpEndPs) dev.lastOpEndPs = start + dur;
    }
    if (this.opts.ops === 'windows') {
      const w = this.windowAt(dev, start);
      if (w >= 0) {
        op.countIn++;
        op.selfInPs += self;
        op.selfInByDevice[dev.index] = (op.selfInByDevice[dev.index] ?? 0) + self;
        dev.windowOpPs![w]! += self;
        if (top) dev.windowBusyPs![w]! += Math.min(start + dur, dev.windows!.ends[w]!) - start;
      } else {
        op.countOut++;
        op.selfOutPs += self;
      }
    } else {
      op.countIn++;
      op.selfInPs += self;
      op.selfInByDevice[dev.index] = (op.selfInByDevice[dev.index] ?? 0) + self;
      if (top) {
        const exec = st.execs[d];
        if (exec !== undefined) exec.busyPs += dur;
      }
    }
    st.ops[d] = PLACEHOLDER_OP;
    st.execs[d] = undefined;
  }

  /** Index of the step window containing `t` on this device, or -1. */
  private windowAt(dev: DeviceState, t: number): number {
    let w = dev.windows;
    if (w === undefined) {
      const all = this.opts.windows;
      w = all?.get(dev.device.name) ?? all?.get('*') ?? { starts: [], ends: [] };
      dev.windows = w;
      dev.windowBusyPs = new Float64Array(w.starts.length);
      dev.windowOpPs = new Float64Array(w.starts.length);
    }
    const n = w.starts.length;
    if (n === 0) return -1;
    let c = dev.windowCursor;
    if (c >= n || w.starts[c]! > t) c = lastStartAtOrBefore(w.starts, t);
    while (c + 1 < n && w.starts[c + 1]! <= t) c++;
    dev.windowCursor = Math.max(c, 0);
    return c >= 0 && t < w.ends[c]! ? c : -1;
  }

  /** Sort a buffered lane's events by start (longest first on ties, so parents precede children). */
  private replay(st: LaneState): void {
    const b = st.buffer!;
    st.buffer = undefined;
    const order = b.starts
      .map((_, k) => k)
      .sort((x, y) => b.starts[x]! - b.starts[y]! || b.durs[y]! - b.durs[x]!);
    for (const k of order)
      this.push(st, b.starts[k]!, b.durs[k]!, b.selfDurs[k]!, b.ops[k]!, b.execs[k], b.devs[k]!);
  }

  /**
   * The device an XLA:CPU op ran on: `device_ordinal` names it, whichever host thread ran the op. Ops
   * without one (older profilers) stay on the lane's device.
   */
  private hostOpDevice(st: LaneState, ev: TraceEventView): DeviceState {
    const ordinal = ev.arg('device_ordinal');
    if (ordinal === undefined) {
      st.lastOrdinal = undefined;
      return st.device;
    }
    // A thread mostly runs one device's ops in a row.
    if (ordinal === st.lastOrdinal && st.lastOpDevice !== undefined) return st.lastOpDevice;
    st.lastOrdinal = ordinal;
    const host = st.lane.device;
    const key = `${host.name}\u0000${ordinal}`;
    let device = this.ordinalDevices.get(key);
    if (device === undefined) {
      device = {
        index: host.index,
        name: `${host.name}:${ordinal}`,
        rawId: `${host.rawId}:${ordinal}`,
        kind: host.kind,
        stats: host.stats,
      };
      this.ordinalDevices.set(key, device);
    }
    return this.deviceState(device);
  }

  private deviceState(device: TraceDevice): DeviceState {
    let dev = this.devices.get(device);
    if (dev === undefined) {
      dev = {
        device,
        index: this.devices.size,
        modules: [],
        modulesSorted: true,
        moduleCursor: 0,
        opsSeen: false,
        windows: undefined,
        windowCursor: 0,
        windowBusyPs: undefined,
        windowOpPs: undefined,
        opPs: 0,
        computePs: 0,
        busyPs: 0,
        firstOpPs: Infinity,
        lastOpEndPs: -Infinity,
        lastOpStartPs: -Infinity,
        opLanes: new Set(),
      };
      this.devices.set(device, dev);
    }
    return dev;
  }

  /** Device states with their modules sorted by start. */
  deviceStates(): DeviceState[] {
    for (const dev of this.devices.values()) if (!dev.modulesSorted) sortExecutions(dev);
    return [...this.devices.values()];
  }
}

export type { DeviceState };

const PLACEHOLDER_OP = {} as OpInfo;

/** Prefix of host op keys in `opsByProgram` (a name cannot start with it). */
const HOST_KEY = '\u0001';

/** A GPU program launch on a host thread: `<module>:XLA GPU module`. */
const GPU_LAUNCH_SUFFIX = ':XLA GPU module';

/** Categories of ops that only move or set memory. */
const MEMORY_CATEGORIES = new Set(['memcpy', 'memset', 'gpu_memcpy', 'gpu_memset']);

/** A GPU kernel's program: `hlo_module(program_id)` like TPU module names, or the module alone (JSON). */
function gpuProgram(ev: TraceEventView): string {
  const module = ev.arg('hlo_module');
  if (module === undefined) return '';
  const id = ev.arg('program_id');
  return id === undefined ? module : `${module}(${id})`;
}

function newOpInfo(program: string, name: string, ev: TraceEventView, st: LaneState): OpInfo {
  const longName = ev.longName();
  const gpu = st.lane.device.kind === 'gpu';
  const hloCategory = ev.arg('hlo_category');
  const category =
    hloCategory !== undefined && hloCategory !== ''
      ? hloCategory
      : deriveCategory(name, gpu ? ev.category : undefined, st.lane.name);
  const flops = numberArg(ev.arg('flops')) ?? numberArg(ev.arg('model_flops'));
  const bytes = numberArg(ev.arg('bytes_accessed')) ?? numberArg(ev.arg('raw_bytes_accessed'));
  return {
    name,
    baseName: baseOpName(name),
    program,
    category,
    scope: scopeOf(ev.arg('tf_op'), gpu ? ev.arg('name') : undefined),
    longName,
    customCall: isCustomCall(category, longName, name),
    flops,
    bytes,
    where: st.where,
    programId: ev.arg('program_id') ?? /\((\d+)\)$/.exec(program)?.[1],
    memcpy: MEMORY_CATEGORIES.has(category),
    kernels: undefined,
    countIn: 0,
    selfInPs: 0,
    selfInByDevice: [],
    countOut: 0,
    selfOutPs: 0,
  };
}

function marker(ev: TraceEventView): StepMarker {
  return { startPs: ev.startPs, durPs: ev.durPs, name: ev.name };
}

export function laneKey(lane: TraceLane): string {
  return `${lane.device.name}\u0000${lane.name}\u0000${lane.rawId}`;
}

function sortExecutions(dev: DeviceState): void {
  dev.modules.sort((a, b) => a.startPs - b.startPs);
  dev.modulesSorted = true;
  dev.moduleCursor = 0;
}

/** Index of the last execution starting at or before `t`, or -1. */
function lastAtOrBefore(list: readonly Execution[], t: number): number {
  return lastIndexAtOrBefore(list.length, (i) => list[i]!.startPs, t);
}

function lastStartAtOrBefore(starts: readonly number[], t: number): number {
  return lastIndexAtOrBefore(starts.length, (i) => starts[i]!, t);
}

/** Binary search over ascending starts: the last index whose start is at or before `t`, or -1. */
function lastIndexAtOrBefore(length: number, startOf: (i: number) => number, t: number): number {
  let lo = 0;
  let hi = length - 1;
  let ans = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (startOf(mid) <= t) {
      ans = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return ans;
}
