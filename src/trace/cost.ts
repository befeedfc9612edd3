/**
 * A cost model for HLO instructions, from the HLO modules an XSpace carries: FLOPs and HBM bytes per
 * execution, as XLA's HloCostAnalysis counts them (xla/service/hlo_cost_analysis.cc), which is what
 * xprof reports per op:
 *
 * - dot: 2 FLOPs per multiply-add, i.e. 2 × output elements × contracting size;
 * - convolution (and cuDNN/MIOpen convolution custom calls): 2 × the multiply-adds whose input index falls
 *   inside the (padded, dilated) input, counted per spatial dimension, × input features per group ×
 *   output features × batch per group;
 * - cuBLAS/hipBLASLt GEMM custom calls: as a dot, with the dimension numbers from the backend config;
 * - elementwise ops: one FLOP per output element (transcendentals, e.g. exp, count as none);
 * - reduce: (input elements − output elements) × the reducer's FLOPs;
 * - reduce-window: (window elements − 1) × output elements × the reducer's FLOPs (HandleReduceWindow,
 *   with its special case of a window that reduces one dimension and broadcasts it back);
 * - scatter: update elements × the combiner's FLOPs (HandleScatter);
 * - all-reduce (and all-reduce-start): one FLOP per result element, as if two replicas were summed
 *   (HandleAllReduce; XLA does not count the replicas either);
 * - fusion: the sum over the fused computation;
 * - everything else (data movement): no FLOPs.
 * Bytes are what the instruction reads and writes: its operands plus its result (scratch buffers of
 * library calls left out). Other custom calls (Pallas/Mosaic, Triton, TE FFI, …) have no cost model.
 */

import { type CustomCallKind, customCallKind } from './ops.js';
import {
  elementCount,
  type HloInstruction,
  type HloModule,
  type HloShape,
  shapeBytes,
} from './readers/hlo-proto.js';

export interface OpCost {
  /** FLOPs per execution; undefined when there is no cost model (most custom calls). */
  flops: number | undefined;
  /** Bytes read and written per execution. */
  bytes: number;
  /** Element type of the inputs that set the peak (dot and convolution operands), else of the result. */
  dtype: string | undefined;
  opcode: string;
  /** `loop`, `input`, `output`, `custom` for fusions. */
  fusionKind: string;
  /** For custom calls: whose kernel it is. */
  customCall: CustomCallKind | undefined;
  /** The custom call's target, when it is one. */
  target: string | undefined;
}

const FMA_FLOPS = 2;

const ELEMENTWISE = new Set([
  'abs',
  'add',
  'and',
  'ceil',
  'clamp',
  'clz',
  'compare',
  'complex',
  'convert',
  'divide',
  'floor',
  'imag',
  'is-finite',
  'maximum',
  'minimum',
  'multiply',
  'negate',
  'not',
  'or',
  'popcnt',
  'real',
  'reduce-precision',
  'remainder',
  'round-nearest-afz',
  'round-nearest-even',
  'select',
  'shift-left',
  'shift-right-arithmetic',
  'shift-right-logical',
  'sign',
  'stochastic-convert',
  'subtract',
  'xor',
]);

const CONV_TARGETS = /^__cudnn\$conv/;
const GEMM_TARGETS = /^__cublas\$(gemm|lt\$matmul)/;

/** The cost of one execution of `inst`. */
export function instructionCost(module: HloModule, inst: HloInstruction): OpCost {
  const target = inst.opcode === 'custom-call' ? inst.customCallTarget : undefined;
  const base: OpCost = {
    flops: 0,
    bytes: ioBytes(module, inst),
    dtype: dtypeOf(module, inst),
    opcode: inst.opcode,
    fusionKind: inst.fusionKind,
    customCall: target === undefined ? undefined : customCallKind(target),
    target,
  };
  return { ...base, flops: flopsOf(module, inst, new Set()) };
}

function flopsOf(module: HloModule, inst: HloInstruction, visiting: Set<string>): number | undefined {
  switch (inst.opcode) {
    case 'dot':
      return dotFlops(module, inst, inst.dotDims?.lhsContracting ?? []);
    case 'convolution':
      return convolutionFlops(module, inst, inst.shape);
    case 'custom-call':
      return customCallFlops(module, inst);
    case 'reduce':
      return reduceFlops(module, inst, visiting);
    case 'reduce-window':
      return reduceWindowFlops(module, inst, visiting);
    case 'scatter':
      return scatterFlops(module, inst, visiting);
    case 'all-reduce':
    case 'all-reduce-start':
      return arrayElements(inst.shape);
    case 'fusion':
    case 'call':
      return calledFlops(module, inst, visiting);
    default:
      return ELEMENTWISE.has(inst.opcode) ? elementCount(resultArray(inst.shape)) : 0;
  }
}

/** The sum over the called computations (fusions, calls); undefined when any part has no model. */
function calledFlops(module: HloModule, inst: HloInstruction, visiting: Set<string>): number | undefined {
  let total = 0;
  for (const id of inst.calledComputationIds) {
    if (visiting.has(id)) continue;
    const comp = module.computations.get(id);
    if (comp === undefined) continue;
    visiting.add(id);
    for (const inner of comp.instructions) {
      const f = flopsOf(module, inner, visiting);
      if (f === undefined) return undefined;
      total += f;
    }
    visiting.delete(id);
  }
  return total;
}

function reduceFlops(module: HloModule, inst: HloInstruction, visiting: Set<string>): number {
  const input = operand(module, inst, 0);
  if (input === undefined) return 0;
  const reduced = elementCount(input.shape) - elementCount(resultArray(inst.shape));
  const reducer = calledFlops(module, inst, visiting) ?? 0;
  return Math.max(0, reduced) * Math.max(1, reducer);
}

/**
 * HloCostAnalysis::HandleReduceWindow: each output element applies the reducer window size − 1 times,
 * except a window over one padded dimension that spans it entirely (a reduce broadcast back along that
 * dimension), which XLA counts as one reduction per output row plus the window.
 */
function reduceWindowFlops(module: HloModule, inst: HloInstruction, visiting: Set<string>): number {
  const window = inst.window ?? [];
  const out = resultArray(inst.shape);
  const outputElements = elementCount(out);
  let windowElements = 1;
  for (const d of window) windowElements *= d.size;
  let reductions = (windowElements - 1) * outputElements;
  const reducing = window.filter((d) => d.size !== 1);
  const padded = window.filter((d) => d.padLow !== 0 || d.padHigh !== 0);
  if (reducing.length === 1 && padded.length === 1 && inst.shape.type !== 'tuple') {
    const k = window.findIndex(
      (d) => d.size !== 1 && d.padLow !== 0 && d.padLow === d.padHigh && d.size === 2 * d.padLow + 1,
    );
    const span = k < 0 ? undefined : out.dims[k];
    if (span !== undefined && window[k]!.padLow === span - 1) reductions = outputElements / span + (span - 1);
  }
  return reductions * (calledFlops(module, inst, visiting) ?? 0);
}

/** HloCostAnalysis::HandleScatter: the combiner runs once per element of the (first) updates operand. */
function scatterFlops(module: HloModule, inst: HloInstruction, visiting: Set<string>): number {
  // Operands are N inputs, the indices, then N updates.
  const inputs = (inst.operandIds.length - 1) / 2;
  const updates = operand(module, inst, inputs + 1);
  if (!Number.isInteger(inputs) || updates === undefined) return 0;
  return elementCount(resultArray(updates.shape)) * (calledFlops(module, inst, visiting) ?? 0);
}

/** Elements of every array in a (possibly tuple) shape. */
function arrayElements(shape: HloShape): number {
  if (shape.type !== 'tuple') return elementCount(shape);
  let n = 0;
  for (const s of shape.tuple) n += arrayElements(s);
  return n;
}

function dotFlops(module: HloModule, inst: HloInstruction, lhsContracting: readonly number[]): number {
  const lhs = operand(module, inst, 0);
  if (lhs === undefined) return 0;
  let contracting = 1;
  for (const d of lhsContracting) contracting *= lhs.shape.dims[d] ?? 1;
  return FMA_FLOPS * elementCount(resultArray(inst.shape)) * contracting;
}

function customCallFlops(module: HloModule, inst: HloInstruction): number | undefined {
  const target = inst.customCallTarget;
  if (CONV_TARGETS.test(target)) return convolutionFlops(module, inst, resultArray(inst.shape));
  if (GEMM_TARGETS.test(target)) {
    const dims = gemmContracting(inst.backendConfig);
    return dims === undefined ? undefined : dotFlops(module, inst, dims);
  }
  return undefined;
}

/** `lhs_contracting_dimensions` of a GEMM custom call's backend config (XLA GPU writes it as JSON). */
function gemmContracting(config: string): number[] | undefined {
  if (config === '') return undefined;
  try {
    const parsed = JSON.parse(config) as {
      gemm_backend_config?: { dot_dimension_numbers?: { lhs_contracting_dimensions?: (string | number)[] } };
    };
    const dims = parsed.gemm_backend_config?.dot_dimension_numbers?.lhs_contracting_dimensions;
    return dims?.map(Number);
  } catch {
    return undefined;
  }
}

/**
 * FLOPs of a convolution with `result` as its output array: per spatial dimension, the number of
 * (output position, kernel position) pairs that land on a real input element (not padding, not a hole
 * of base dilation), multiplied over dimensions, times features and batch, times 2.
 */
function convolutionFlops(module: HloModule, inst: HloInstruction, result: HloShape): number {
  const dn = inst.convDims;
  const lhs = operand(module, inst, 0);
  const rhs = operand(module, inst, 1);
  if (dn === undefined || lhs === undefined || rhs === undefined) return 0;
  const window = inst.window ?? [];
  let positions = 1;
  for (let s = 0; s < dn.inputSpatial.length; s++) {
    const inputSize = lhs.shape.dims[dn.inputSpatial[s]!] ?? 1;
    const kernelSize = rhs.shape.dims[dn.kernelSpatial[s]!] ?? 1;
    const outputSize = result.dims[dn.outputSpatial[s]!] ?? 1;
    const w = window[s] ?? {
      size: kernelSize,
      stride: 1,
      padLow: 0,
      padHigh: 0,
      windowDilation: 1,
      baseDilation: 1,
    };
    positions *= validPositions(inputSize, kernelSize, outputSize, w);
  }
  const inputFeatures = lhs.shape.dims[dn.inputFeature] ?? 1;
  const outputFeatures = result.dims[dn.outputFeature] ?? 1;
  const batch = lhs.shape.dims[dn.inputBatch] ?? 1;
  const fmas =
    (inputFeatures / inst.featureGroupCount) * outputFeatures * (batch / inst.batchGroupCount) * positions;
  return FMA_FLOPS * fmas;
}

function validPositions(
  inputSize: number,
  kernelSize: number,
  outputSize: number,
  w: { stride: number; padLow: number; windowDilation: number; baseDilation: number },
): number {
  let valid = 0;
  for (let k = 0; k < kernelSize; k++) {
    for (let o = 0; o < outputSize; o++) {
      const dilated = o * w.stride - w.padLow + k * w.windowDilation;
      if (dilated < 0) continue;
      if (dilated % w.baseDilation !== 0) continue;
      const index = dilated / w.baseDilation;
      if (index < inputSize) valid++;
    }
  }
  return valid;
}

/** Operand bytes plus result bytes; for library custom calls, their scratch outputs are left out. */
function ioBytes(module: HloModule, inst: HloInstruction): number {
  let bytes = 0;
  for (let k = 0; k < inst.operandIds.length; k++) {
    const op = operand(module, inst, k);
    if (op !== undefined) bytes += shapeBytes(op.shape);
  }
  const library =
    inst.opcode === 'custom-call' &&
    (CONV_TARGETS.test(inst.customCallTarget) || GEMM_TARGETS.test(inst.customCallTarget));
  return bytes + shapeBytes(library ? resultArray(inst.shape) : inst.shape);
}

/** The element type that decides which peak applies. */
function dtypeOf(module: HloModule, inst: HloInstruction): string | undefined {
  const first = operand(module, inst, 0);
  const matmul =
    inst.opcode === 'dot' ||
    inst.opcode === 'convolution' ||
    (inst.opcode === 'custom-call' &&
      (CONV_TARGETS.test(inst.customCallTarget) || GEMM_TARGETS.test(inst.customCallTarget)));
  if (matmul && first !== undefined && first.shape.type !== 'tuple') return first.shape.type;
  if (inst.opcode === 'fusion') {
    const inner = fusedMatmul(module, inst);
    if (inner !== undefined) return dtypeOf(module, inner);
  }
  const out = resultArray(inst.shape);
  return out.type === 'tuple' ? undefined : out.type;
}

/** The first dot or convolution inside a fusion, if any (its operands set the fusion's peak). */
function fusedMatmul(module: HloModule, inst: HloInstruction): HloInstruction | undefined {
  for (const id of inst.calledComputationIds) {
    for (const inner of module.computations.get(id)?.instructions ?? []) {
      if (inner.opcode === 'dot' || inner.opcode === 'convolution') return inner;
    }
  }
  return undefined;
}

function operand(module: HloModule, inst: HloInstruction, k: number): HloInstruction | undefined {
  const id = inst.operandIds[k];
  return id === undefined ? undefined : module.byId.get(id);
}

/** The first array of a (possibly tuple) shape: a library call's real result. */
function resultArray(shape: HloShape): HloShape {
  let s = shape;
  while (s.type === 'tuple' && s.tuple.length > 0) s = s.tuple[0]!;
  return s;
}
