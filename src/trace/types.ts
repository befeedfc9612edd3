/**
 * The analysis results hillclimb publishes: a trace summary (steps, hotspots, custom calls) and the diff
 * of two summaries. Plain JSON-serializable data with a schema version; times are milliseconds (numbers,
 * rounded to the nanosecond), per step and per device unless a field says otherwise.
 */

import type { CustomCallKind } from './ops.js';
import type { DevicePeak } from './peaks.js';
import type { TraceFormat } from './readers/model.js';
import type { Confidence, DeviceSpread, Platform, StepDetector, StepEstimate } from './steps.js';

export const TRACE_SUMMARY_SCHEMA = 'hillclimb.trace-summary/2';
export const TRACE_DIFF_SCHEMA = 'hillclimb.trace-diff/2';

export type { Confidence, CustomCallKind, DevicePeak, DeviceSpread, Platform, StepDetector, StepEstimate };

export interface TraceSummary {
  schema: typeof TRACE_SUMMARY_SCHEMA;
  source: {
    /** The file that was read (for a profile directory, the trace chosen inside it). */
    path: string;
    format: TraceFormat;
    /** Bytes of trace data: uncompressed JSON text, or the `.xplane.pb` size. */
    bytes: number;
    /** Complete events in the file. */
    events: number;
    /** How many times the file was read (1–3; see summarize.ts). */
    passes: number;
    /** The JSON held exactly the profiler's 5,000,000-event cap: later steps are missing. */
    capped: boolean;
  };
  /** Where the ops ran: TPU or GPU device lanes, or XLA:CPU host threads. */
  platform: Platform;
  /** Devices that ran ops. */
  devices: DeviceRow[];
  steps: StepSummary;
  /** Op time of the whole trace, summed over devices: in steps, outside them, and the total. */
  total: { deviceMs: number; inStepsMs: number; outsideMs: number };
  /** Every program (compiled module) that ran ops, by device time, largest first. */
  programs: ProgramRow[];
  /**
   * Every op (name without its `.N` suffix) of every program, by device time over the whole trace,
   * largest first. Per-step columns count only the time inside steps.
   */
  ops: OpRow[];
  /** The peaks the roofline uses (one device kind per trace); null when the device is unknown. */
  roofline: { peak: DevicePeak | null; source: string };
  /** Time per step by HLO category (`hlo_category`, or derived from the op name). */
  categories: GroupRow[];
  /** Time per step by JAX name scope (`tf_op` without its last component); `(none)` when absent. */
  scopes: GroupRow[];
  /** Custom calls (Pallas/Mosaic and other hand-written kernels), by name and scope. */
  customCalls: CustomCallRow[];
  /**
   * Op time that fell outside every step, in total (not per step), and how many rows of `ops` (program
   * and op name) have some of it.
   */
  outsideSteps: { opMs: number; ops: number };
  /** Problems the reader or the analysis found (capped trace, late metadata, …). */
  warnings: string[];
  /** How numbers were derived, when that is not obvious (detector caveats). */
  notes: string[];
}

export interface DeviceRow {
  name: string;
  kind: string;
  /** `device_type_string` from an XSpace (e.g. "TPU v6 Lite"), when known. */
  type: string | undefined;
  /** `device_vendor` from an XSpace GPU plane (e.g. "Nvidia", "AMD"), when known. */
  vendor?: string;
  /** A GPU plane's hardware in words (vendor, compute capability, cores, memory), when known. */
  hardware?: string;
  /** Peak TFLOP/s from the XSpace plane stats, when known. */
  peakTflops: number | undefined;
  /** Whether the device ran compute (not only memory copies); only those count steps. */
  compute: boolean;
  /** Op self time on this device over the whole trace. */
  opMs: number;
  /** Busy time (union of top-level ops) on this device over the whole trace. */
  busyMs: number;
}

export interface StepSummary {
  detector: StepDetector;
  /**
   * How far the steps describe the trace: the detector's own confidence, capped by the share of device
   * op time inside the steps (80% or more keeps it, 50–80% is at most medium, under 50% is low).
   */
  confidence: Confidence;
  /** What the detector found, in one line. */
  detail: string;
  /** Every detector that applied, the chosen one first, with its own count per device. */
  estimates: StepEstimate[];
  /** Steps per device (per device that ran compute). */
  count: number;
  /** Steps summed over devices: every per-step number is a total divided by this. */
  deviceSteps: number;
  /** The dominant program (full module name) when `detector` is `dominant-program`. */
  program: string | undefined;
  /**
   * Step length statistics; null when only op time is known (GPU without marked executions). With
   * several devices that have their own step windows, each step's time is its slowest device's: the
   * one that gates the step (`deviceSpread` says how far the others were).
   */
  timeMs: { mean: number; median: number; min: number; max: number } | null;
  /** How the devices' step times spread, when several devices have their own step windows. */
  deviceSpread?: DeviceSpread;
  /**
   * Several devices without step windows of their own (GPU host launches, kernel repetition, host
   * annotations, the whole trace): every per-step op time is the mean over devices, so this names the
   * slowest device — the one that gates the step — and its own op time per step.
   */
  opSpread?: OpSpread;
  /** Host step annotations by name (the bench marks `hillclimb_<measurement>` steps), most time first. */
  annotations: AnnotationRow[];
  /** Device busy time per step: the union of top-level op intervals. */
  busyMs: number;
  /** Mean step time minus busy time; null when step time is unknown. */
  idleMs: number | null;
  /** Op self time per step (the sum of the ops table). */
  opMs: number;
}

/** The devices' op time per step, when per-step times are means over devices (see `opSpread`). */
export interface OpSpread {
  /** Devices that ran compute. */
  devices: number;
  /** Op time per step of the mean device (the steps' `opMs`). */
  meanMs: number;
  /** The device with the most op time in steps, and its op time per step. */
  slowest: string;
  slowestMs: number;
  /** The device with the least, and its op time per step. */
  fastestMs: number;
}

export interface ProgramRow {
  /** Full program name as the trace gives it, e.g. `jit_train_step(1234)`. */
  name: string;
  /** The module name without its id, e.g. `jit_train_step`. */
  module: string;
  /** Op self time over the whole trace, summed over devices. */
  deviceMs: number;
  /** The part of it inside steps. */
  inStepsMs: number;
  /** Percent of all device op time. */
  shareOfDevice: number;
  /** Executions (all devices), when the trace marks them (module events, CPU runs, GPU host launches). */
  executions: number | null;
  /** Devices its ops ran on. */
  devices: number;
  /** Distinct ops (names without `.N`). */
  ops: number;
}

export interface Roofline {
  /** Which ceiling applies at this arithmetic intensity. */
  bound: 'compute' | 'memory';
  /** The roofline at the op's intensity: min(peak FLOP/s, intensity × bandwidth), in TFLOP/s. */
  attainableTflops: number;
  /**
   * Achieved over attainable, 0–1 (a fraction of the roofline). For ops that move data without
   * FLOPs, the share of the peak memory bandwidth they used (attainableTflops is then 0).
   */
  fraction: number;
  /** The peak used: `bf16` (tensor cores, MXU) or `fp32`. */
  peak: 'bf16' | 'fp32';
}

export interface AnnotationRow {
  name: string;
  count: number;
  meanMs: number;
  medianMs: number;
}

export interface OpRow {
  /** Op name without the `.N` suffix, e.g. `convolution_add_fusion`. */
  name: string;
  /** The program as the trace names it (`jit_dot(49)`, or `jit_dot` without an id); '' when unknown. */
  program: string;
  /** The category with the most time among its variants. */
  category: string;
  /** The scope with the most time among its variants ('' when unknown). */
  scope: string;
  /** Programs it ran in. */
  programs: string[];
  /** Distinct instructions merged into this row (`fusion.1`, `fusion.2`, …). */
  variants: number;
  /**
   * Of those, how many have no FLOPs (no cost model, or missing from the HLO). FLOPs, bytes and their
   * rates cover the variants that have them, over those variants' own time, so a row with some variants
   * without FLOPs gives a lower bound of its FLOPs per step. Absent in summaries made before it existed.
   */
  variantsWithoutFlops?: number;
  /** Self time per step (inside steps only); with several devices, the mean over them. */
  timeMs: number;
  /**
   * With `steps.opSpread` (several devices, no step windows of their own): the op's self time per step
   * on the device where it took the longest — an op that ran on one device of eight is not 1/8 of it.
   */
  slowestDeviceMs?: number;
  /** Occurrences per step. */
  occurrences: number;
  /** Percent of op time per step. */
  shareOfOps: number;
  /** Percent of mean step time; null when step time is unknown. */
  shareOfStep: number | null;
  /** Self time over the whole trace, summed over devices (inside and outside steps). */
  totalMs: number;
  /** Occurrences over the whole trace. */
  totalCount: number;
  /** Percent of all device op time. */
  shareOfDevice: number;
  /**
   * Executions over the whole trace: events, or on GPU, when one execution launches several kernels
   * (or one kernel several times), the executions the op's launches imply against its program's
   * executions (steps.ts `executionsOf`), never the launches of its most frequent kernel.
   */
  executions: number;
  /** Cost-model FLOPs per execution (averaged over variants); null when unknown. */
  flopsPerExecution: number | null;
  /** Bytes accessed per execution (averaged over variants); null when unknown. */
  bytesPerExecution: number | null;
  /** Cost-model FLOPs per step; null when unknown (or for custom calls without a cost model). */
  flops: number | null;
  /** Bytes accessed per step; null when unknown. */
  bytes: number | null;
  /** Achieved TFLOP/s over the whole trace; null without FLOPs. */
  tflops: number | null;
  /** Achieved GB/s (bytes accessed over time); null without bytes. */
  gbps: number | null;
  /** Arithmetic intensity, FLOPs per byte; null without both. */
  intensity: number | null;
  /** Position against the device roofline; null without FLOPs, bytes or device peaks. */
  roofline: Roofline | null;
  /** Where FLOPs and bytes came from: the trace's own stats, the HLO in the XSpace, or nowhere. */
  costSource: 'trace' | 'hlo' | null;
  /** Element type of the inputs that set the peak (`bf16`, `f32`), when the HLO says. */
  dtype: string | null;
  customCall: boolean;
  /** For custom calls: whose kernel (Pallas/Mosaic, TE FFI, cuDNN, cuBLAS, other). */
  customCallKind: CustomCallKind | null;
  /** A custom call, or (in a trace that has FLOPs) an op none of whose variants has FLOPs: no cost-model FLOPs. */
  noCostModel: boolean;
  /** Full HLO text of the heaviest variant, when the trace has it. */
  longName: string | undefined;
}

export interface GroupRow {
  name: string;
  timeMs: number;
  occurrences: number;
  shareOfOps: number;
  /** Distinct op names in the group. */
  ops: number;
}

export interface CustomCallRow {
  /** Kernel name without the `.N` suffix (from `pallas_call(name=…)`, or the call's target). */
  name: string;
  /** The program as the trace names it ('' when unknown). */
  program: string;
  scope: string;
  /** Whose kernel: Pallas/Mosaic, TE FFI, cuDNN, cuBLAS, other. */
  kind: CustomCallKind;
  /** Launches per step. */
  launches: number;
  /** Time per step. */
  timeMs: number;
  shareOfOps: number;
  /** Time over the whole trace, summed over devices. */
  totalMs: number;
  /** True unless XLA's cost model covers the call (cuDNN convolutions, cuBLAS GEMMs with HLO). */
  noCostModel: boolean;
}

export type DiffStatus = 'added' | 'removed' | 'increased' | 'decreased' | 'unchanged';

export interface TraceDiff {
  schema: typeof TRACE_DIFF_SCHEMA;
  before: DiffSide;
  after: DiffSide;
  /** Step time per step (mean), before and after; null when either side has none. */
  stepTimeMs: DiffNumbers | null;
  /** Op time per step, before and after. */
  opTimeMs: DiffNumbers;
  busyMs: DiffNumbers;
  /** Device op time over the whole trace (all devices, in and outside steps), before and after. */
  deviceMs: DiffNumbers;
  /** The part of it outside steps, before and after. Absent in diffs made before it existed. */
  outsideMs?: DiffNumbers;
  /** Per op (name without `.N`) inside steps, time per step, sorted by |Δ time|. */
  ops: DiffRow[];
  /**
   * Per op over the whole trace (all devices, inside and outside steps; counts are whole-trace
   * occurrences), sorted by |Δ time|: ops that ran outside steps are compared here. Absent in diffs
   * made before it existed.
   */
  wholeTrace?: DiffRow[];
  /**
   * Which op comparison to read first: `whole-trace` when either trace's steps were found with low
   * confidence (inferred steps holding under half the device op time), else `per-step`.
   */
  basis?: 'per-step' | 'whole-trace';
  /** Per category, sorted by |Δ time|. */
  categories: DiffRow[];
  /** Custom calls, sorted by |Δ time|. */
  customCalls: DiffRow[];
  /** Rows counted as unchanged had |Δ| below this share of op time per step (percent). */
  unchangedBelowPct: number;
  warnings: string[];
}

export interface DiffSide {
  path: string;
  platform: Platform;
  detector: StepDetector;
  steps: number;
  /** Devices that ran compute. */
  devices: number;
  /** Device types (`TPU v6 Lite`), when the trace names them. */
  deviceTypes: string[];
  /** Module names of the programs that ran. */
  programs: string[];
}

export interface DiffNumbers {
  before: number;
  after: number;
  delta: number;
  /** Δ as a percent of before; null when before is 0. */
  deltaPct: number | null;
}

export interface DiffRow extends DiffNumbers {
  name: string;
  /**
   * The program's module name without its id ('' when unknown, and for categories): ids differ between
   * compilations, so rows of one module are matched and summed by name.
   */
  program: string;
  category: string;
  status: DiffStatus;
  /** Occurrences per step, before and after. */
  countBefore: number;
  countAfter: number;
}
