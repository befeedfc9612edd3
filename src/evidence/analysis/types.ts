/**
 * The analysis results hillclimb publishes: a trace summary (steps, hotspots, custom calls) and the diff
 * of two summaries. Plain JSON-serializable data with a schema version; times are milliseconds (numbers,
 * rounded to the nanosecond), per step and per device unless a field says otherwise.
 */
import type { TraceFormat } from '../trace/model.js';
import type { Platform, StepDetector } from './steps.js';

export const TRACE_SUMMARY_SCHEMA = 'hillclimb.trace-summary/1';
export const TRACE_DIFF_SCHEMA = 'hillclimb.trace-diff/1';

export type { Platform, StepDetector };

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
    /** How many times the file was read (1–3; see hotspots.ts). */
    passes: number;
    /** The JSON held exactly the profiler's 5,000,000-event cap: later steps are missing. */
    capped: boolean;
  };
  /** Where the ops ran: TPU or GPU device lanes, or XLA:CPU host threads. */
  platform: Platform;
  /** Devices that ran ops. */
  devices: DeviceRow[];
  steps: StepSummary;
  /** Every op (name without its `.N` suffix), by time per step, largest first. */
  ops: OpRow[];
  /** Time per step by HLO category (`hlo_category`, or derived from the op name). */
  categories: GroupRow[];
  /** Time per step by JAX name scope (`tf_op` without its last component); `(none)` when absent. */
  scopes: GroupRow[];
  /** Custom calls (Pallas/Mosaic and other hand-written kernels), by name and scope. */
  customCalls: CustomCallRow[];
  /** Op time that fell outside every step, in total (not per step). */
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
  /** Peak TFLOP/s from the XSpace plane stats, when known. */
  peakTflops: number | undefined;
  /** Op self time on this device over the whole trace. */
  opMs: number;
  /** Busy time (union of top-level ops) on this device over the whole trace. */
  busyMs: number;
}

export interface StepSummary {
  detector: StepDetector;
  /** What the detector found, in one line. */
  detail: string;
  /** Steps per device. */
  count: number;
  /** Steps summed over devices: every per-step number is a total divided by this. */
  deviceSteps: number;
  /** The dominant program (full module name) when `detector` is `dominant-program`. */
  program: string | undefined;
  /** Step length statistics; null when only op time is known (GPU without marked executions). */
  timeMs: { mean: number; median: number; min: number; max: number } | null;
  /** Device busy time per step: the union of top-level op intervals. */
  busyMs: number;
  /** Mean step time minus busy time; null when step time is unknown. */
  idleMs: number | null;
  /** Op self time per step (the sum of the ops table). */
  opMs: number;
}

export interface OpRow {
  /** Op name without the `.N` suffix, e.g. `convolution_add_fusion`. */
  name: string;
  /** The category with the most time among its variants. */
  category: string;
  /** The scope with the most time among its variants ('' when unknown). */
  scope: string;
  /** Programs it ran in. */
  programs: string[];
  /** Distinct instructions merged into this row (`fusion.1`, `fusion.2`, …). */
  variants: number;
  /** Self time per step. */
  timeMs: number;
  /** Occurrences per step. */
  occurrences: number;
  /** Percent of op time per step. */
  shareOfOps: number;
  /** Percent of mean step time; null when step time is unknown. */
  shareOfStep: number | null;
  /** Cost-model FLOPs per step; null when the trace has none (or for custom calls). */
  flops: number | null;
  /** Bytes accessed per step; null when the trace has none. */
  bytes: number | null;
  /** Achieved TFLOP/s from cost-model FLOPs; null without FLOPs. */
  tflops: number | null;
  customCall: boolean;
  /** A custom call, or (in a trace that has FLOPs) an op with zero/absent FLOPs: no cost-model FLOPs. */
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
  /** Kernel name without the `.N` suffix (from `pallas_call(name=…)`). */
  name: string;
  scope: string;
  /** Launches per step. */
  launches: number;
  timeMs: number;
  shareOfOps: number;
  /** Always true for custom calls: XLA reports no FLOPs for them. */
  noCostModel: true;
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
  /** Per op (name without `.N`), sorted by |Δ time|. */
  ops: DiffRow[];
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
  category: string;
  status: DiffStatus;
  /** Occurrences per step, before and after. */
  countBefore: number;
  countAfter: number;
}
