/**
 * How trace lanes and events map onto XLA concepts: which lanes hold ops, modules or step markers, and
 * how an op is named, categorised and scoped. Pure functions; see reference/traces.md §3–§6.
 */
import type { TraceLane } from './readers/model.js';

/** What a lane contributes to the analysis. */
export type LaneRole = 'ops' | 'modules' | 'steps' | 'host' | 'ignore';

/** The role of a lane, from its device kind and name. */
export function laneRole(lane: TraceLane): LaneRole {
  const kind = lane.device.kind;
  const name = lane.name.trim();
  if (kind === 'host') return 'host';
  if (kind !== 'tpu' && kind !== 'gpu') return 'ignore';
  if (name === 'XLA Modules') return 'modules';
  if (name === 'Steps') return 'steps';
  if (kind === 'tpu') return name === 'XLA Ops' ? 'ops' : 'ignore';
  // GPU: kernels and copies are on the stream lines. xprof's trace viewer adds lines it derives from them
  // (`XLA Ops - from #16`, `XLA Modules - from #16`, `Framework Ops`, `Source code`, …); counting those
  // too would count every kernel again, and their module events span many executions.
  if (isDerivedGpuLane(name)) return 'ignore';
  return 'ops';
}

/** A GPU line xprof derives from the stream lines (never a line the device wrote). */
export function isDerivedGpuLane(name: string): boolean {
  return (
    /^(XLA Ops|XLA Modules|Steps)( - from #\d+)?$/.test(name) ||
    /Name Scope|Framework|TensorFlow|Source code|Async/i.test(name)
  );
}

/**
 * An op name without its trailing instruction numbers: `fusion.12` → `fusion`, `cudnn-conv.1.0` →
 * `cudnn-conv` (XLA numbers clones of a numbered instruction again).
 */
export function baseOpName(name: string): string {
  const m = /^(.*?)(\.\d+)+$/.exec(name);
  return m?.[1] !== undefined && m[1] !== '' ? m[1] : name;
}

const COLLECTIVES =
  /^(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute|collective-broadcast)/;

/**
 * The category of an op without an `hlo_category` (CPU and GPU traces): an HLO opcode family derived
 * from the HLO op name, or from the Chrome `cat` / lane for kernels without one.
 */
export function deriveCategory(opName: string, chromeCat?: string, laneName = ''): string {
  const base = baseOpName(opName).replace(/^wrapped_/, '');
  if (customCallKindOfName(base) !== undefined) return 'custom-call';
  if (COLLECTIVES.test(base)) return base.replace(/-(start|done)$/, '');
  if (/fusion/.test(base)) {
    if (/^(gemm|cublas|dot)/.test(base)) return 'gemm fusion';
    if (/^(convolution|conv)/.test(base)) return 'convolution fusion';
    if (/^ynn/.test(base)) return 'ynn fusion';
    return 'fusion';
  }
  if (/^(copy|copy-start|copy-done)$/.test(base)) return 'copy';
  if (/^(while|conditional|call)$/.test(base)) return base;
  // xprof's streaming trace viewer files every kernel under `gpu_launch`: no category at all.
  if (chromeCat !== undefined && chromeCat !== '' && chromeCat !== 'gpu_launch') return chromeCat;
  if (/memcpy/i.test(laneName) || /memcpy|copyBuffer/i.test(base)) return 'memcpy';
  if (/memset/i.test(base)) return 'memset';
  if (/^[a-z][a-z-]*$/.test(base)) return base;
  return 'kernel';
}

/** Whether an op is a custom call (a Pallas/Mosaic or other hand-written kernel XLA has no cost model for). */
export function isCustomCall(category: string, longName: string | undefined, opName: string): boolean {
  if (category === 'custom-call') return true;
  if (longName !== undefined && /custom_call_target=/.test(longName)) return true;
  return customCallKindOfName(baseOpName(opName)) !== undefined;
}

/**
 * Who wrote a custom call's kernel, from its `custom_call_target`:
 * - `pallas`: Pallas/Mosaic (`tpu_custom_call`, `mosaic_gpu`) and Triton (`__gpu$xla.gpu.triton`);
 * - `te-ffi`: TransformerEngine's typed-FFI calls (`te_fused_attn_forward_ffi`, …);
 * - `cudnn`, `cublas`: library calls XLA emits for convolutions and GEMMs (`__cudnn$convForward`,
 *   `__cublas$gemm`, `__cublas$lt$matmul`; ROCm uses the same names for MIOpen and rocBLAS/hipBLASLt);
 * - `other`: anything else.
 */
export type CustomCallKind = 'pallas' | 'te-ffi' | 'cudnn' | 'cublas' | 'other';

export function customCallKind(target: string): CustomCallKind {
  if (/^(tpu_custom_call|mosaic|__gpu\$xla\.gpu\.triton)|triton|mosaic/i.test(target)) return 'pallas';
  if (/^te_.*_ffi$|^te_/.test(target)) return 'te-ffi';
  if (/^__cudnn\$|^cudnn/i.test(target)) return 'cudnn';
  if (/^__cublas|^cublas|hipblas|rocblas/i.test(target)) return 'cublas';
  return 'other';
}

/**
 * The custom-call kind an op's name gives away when no HLO is at hand (XLA names library calls
 * `cudnn-conv.N`, `cublas-gemm.N`, typed-FFI calls after their target, generic ones `custom-call.N`).
 */
export function customCallKindOfName(base: string): CustomCallKind | undefined {
  if (/^custom[-_]call$|tpu_custom_call|mosaic|triton/i.test(base)) return customCallKind(base);
  if (/^cudnn-|^cublas|^te_.*_ffi$/.test(base)) return customCallKind(base);
  return undefined;
}

/**
 * The model scope of an op from its JAX name stack (`tf_op`, or the GPU `name` stat):
 * `jit(train_step)/jit(main)/mlp/dot_general:` → `jit(train_step)/jit(main)/mlp`. Empty when unknown.
 */
export function scopeOf(tfOp: string | undefined, nameStack?: string): string {
  let stack = (tfOp ?? '').replace(/:$/, '').trim();
  if (stack === '' || stack === 'XlaModule') stack = (nameStack ?? '').trim();
  if (stack === '' || (!stack.includes('(') && !stack.includes('/'))) return '';
  const cut = stack.lastIndexOf('/');
  return cut > 0 ? stack.slice(0, cut) : stack;
}

/** Parse a non-negative decimal string (an arg value) to a number; undefined when absent or not numeric. */
export function numberArg(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  return Number.isFinite(n) ? n : undefined;
}

/** A Kineto step annotation name (`ProfilerStep#12`) → its number. */
export function profilerStepNumber(name: string): number | undefined {
  const m = /^ProfilerStep#(\d+)$/.exec(name);
  return m === null ? undefined : Number(m[1]);
}
