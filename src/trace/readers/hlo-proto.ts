/**
 * A decoder for the HLO modules an XSpace carries (`/host:metadata` plane, stat "Hlo Proto"): just the
 * parts a cost model needs (xla/service/hlo.proto, xla/xla_data.proto at openxla/xla):
 *
 *   HloProto            { hlo_module=1 HloModuleProto }
 *   HloModuleProto      { name=1, entry_computation_name=2, computations=3, id=5, entry_computation_id=6 }
 *   HloComputationProto { name=1, instructions=2, id=5, root_id=6, is_fusion_computation=7 }
 *   HloInstructionProto { name=1, opcode=2, shape=3, metadata=7 (OpMetadata op_name=2), fusion_kind=11,
 *                         dimensions=14, window=15, convolution_dimension_numbers=16, custom_call_target=28,
 *                         dot_dimension_numbers=30, id=35, operand_ids=36, called_computation_ids=38,
 *                         backend_config=43, feature_group_count=50, batch_group_count=58 }
 *   ShapeProto          { element_type=2, dimensions=3, tuple_shapes=4 }
 *   Window              { dimensions=1 WindowDimension { size=1, stride=2, padding_low=3, padding_high=4,
 *                         window_dilation=5, base_dilation=6 } }
 *   ConvolutionDimensionNumbers { kernel_input_feature=3, kernel_output_feature=4, kernel_spatial=6,
 *                         input_batch=7, input_feature=8, output_batch=9, output_feature=10,
 *                         input_spatial=11, output_spatial=12 }
 *   DotDimensionNumbers { lhs_contracting=1, rhs_contracting=2, lhs_batch=3, rhs_batch=4 }
 *
 * Everything else is skipped. Malformed bytes throw WireError (offsets are within the blob).
 */
import {
  readString,
  readVarint,
  readVarint64String,
  skipField,
  WIRE_LEN,
  WIRE_VARINT,
  WireError,
  wirePos,
} from './wire.js';

/** XLA PrimitiveType numbers (xla_data.proto) and their widths in bits. */
const ELEMENT_BITS: Record<number, number> = {
  1: 8, // PRED
  2: 8, // S8
  3: 16, // S16
  4: 32, // S32
  5: 64, // S64
  6: 8, // U8
  7: 16, // U16
  8: 32, // U32
  9: 64, // U64
  10: 16, // F16
  11: 32, // F32
  12: 64, // F64
  15: 64, // C64
  16: 16, // BF16
  18: 128, // C128
  19: 8, // F8E5M2
  20: 8, // F8E4M3FN
  21: 4, // S4
  22: 4, // U4
  23: 8, // F8E4M3B11FNUZ
  24: 8, // F8E5M2FNUZ
  25: 8, // F8E4M3FNUZ
  26: 2, // S2
  27: 2, // U2
  28: 8, // F8E4M3
  29: 8, // F8E3M4
  30: 1, // S1
  31: 1, // U1
  32: 4, // F4E2M1FN
  33: 8, // F8E8M0FNU
};

const ELEMENT_NAMES: Record<number, string> = {
  1: 'pred',
  2: 's8',
  3: 's16',
  4: 's32',
  5: 's64',
  6: 'u8',
  7: 'u16',
  8: 'u32',
  9: 'u64',
  10: 'f16',
  11: 'f32',
  12: 'f64',
  13: 'tuple',
  14: 'opaque',
  15: 'c64',
  16: 'bf16',
  17: 'token',
  18: 'c128',
  19: 'f8e5m2',
  20: 'f8e4m3fn',
  21: 's4',
  22: 'u4',
  23: 'f8e4m3b11fnuz',
  24: 'f8e5m2fnuz',
  25: 'f8e4m3fnuz',
  28: 'f8e4m3',
  29: 'f8e3m4',
  32: 'f4e2m1fn',
  33: 'f8e8m0fnu',
};

const TUPLE = 13;

export interface HloShape {
  /** Element type name (`bf16`, `f32`, …; `tuple` for tuples). */
  type: string;
  dims: number[];
  tuple: HloShape[];
}

export interface HloWindowDim {
  size: number;
  stride: number;
  padLow: number;
  padHigh: number;
  windowDilation: number;
  baseDilation: number;
}

export interface HloConvDims {
  inputBatch: number;
  inputFeature: number;
  inputSpatial: number[];
  kernelInputFeature: number;
  kernelOutputFeature: number;
  kernelSpatial: number[];
  outputBatch: number;
  outputFeature: number;
  outputSpatial: number[];
}

export interface HloDotDims {
  lhsContracting: number[];
  rhsContracting: number[];
  lhsBatch: number[];
  rhsBatch: number[];
}

export interface HloInstruction {
  id: string;
  name: string;
  opcode: string;
  shape: HloShape;
  operandIds: string[];
  calledComputationIds: string[];
  /** `dimensions` (reduce, broadcast, transpose, …). */
  dimensions: number[];
  window: HloWindowDim[] | undefined;
  convDims: HloConvDims | undefined;
  dotDims: HloDotDims | undefined;
  featureGroupCount: number;
  batchGroupCount: number;
  fusionKind: string;
  customCallTarget: string;
  /** The backend config as text (JSON on GPU), when it decodes as UTF-8. */
  backendConfig: string;
  /** `metadata.op_name`: the JAX name stack. */
  opName: string;
}

export interface HloComputation {
  id: string;
  name: string;
  instructions: HloInstruction[];
  rootId: string;
  isFusion: boolean;
}

export interface HloModule {
  name: string;
  entryComputationId: string;
  computations: Map<string, HloComputation>;
  /** Every instruction by id (ids are unique within a module). */
  byId: Map<string, HloInstruction>;
  /** Instructions of non-fusion computations by name: what profiler events are named after. */
  byName: Map<string, HloInstruction>;
}

/** Bits per element of a type name; undefined for tuples, tokens and unknown types. */
export function elementBits(type: string): number | undefined {
  return BITS_BY_NAME.get(type);
}

const BITS_BY_NAME = new Map(
  Object.entries(ELEMENT_NAMES).map(([code, name]) => [name, ELEMENT_BITS[Number(code)]] as const),
);

/** Elements of an array shape (1 for a scalar); 0 for tuples. */
export function elementCount(shape: HloShape): number {
  if (shape.type === 'tuple') return 0;
  let n = 1;
  for (const d of shape.dims) n *= d;
  return n;
}

/** Bytes of a shape: arrays by element width (sub-byte types rounded up), tuples summed. */
export function shapeBytes(shape: HloShape): number {
  if (shape.type === 'tuple') return shape.tuple.reduce((s, t) => s + shapeBytes(t), 0);
  const bits = elementBits(shape.type);
  return bits === undefined ? 0 : Math.ceil((elementCount(shape) * bits) / 8);
}

/** Decode a serialized `xla.HloProto`. @throws WireError on malformed bytes. */
export function decodeHloProto(buf: Uint8Array): HloModule {
  let module: HloModule | undefined;
  walk(buf, 0, buf.length, (field, wt, i, end) => {
    if (field === 1 && wt === WIRE_LEN) module = decodeModule(buf, i, end);
  });
  if (module === undefined) throw new WireError(0, 'HloProto without hlo_module');
  return module;
}

function decodeModule(buf: Uint8Array, start: number, end: number): HloModule {
  const m: HloModule = {
    name: '',
    entryComputationId: '',
    computations: new Map(),
    byId: new Map(),
    byName: new Map(),
  };
  walk(buf, start, end, (field, wt, i, e) => {
    if (field === 1 && wt === WIRE_LEN) m.name = readString(buf, i, e);
    else if (field === 3 && wt === WIRE_LEN) {
      const c = decodeComputation(buf, i, e);
      m.computations.set(c.id, c);
    } else if (field === 6 && wt === WIRE_VARINT) m.entryComputationId = readVarint64String(buf, i, e, true);
  });
  for (const c of m.computations.values()) {
    for (const inst of c.instructions) {
      m.byId.set(inst.id, inst);
      if (!c.isFusion && !m.byName.has(inst.name)) m.byName.set(inst.name, inst);
    }
  }
  return m;
}

function decodeComputation(buf: Uint8Array, start: number, end: number): HloComputation {
  const c: HloComputation = { id: '', name: '', instructions: [], rootId: '', isFusion: false };
  walk(buf, start, end, (field, wt, i, e) => {
    if (field === 1 && wt === WIRE_LEN) c.name = readString(buf, i, e);
    else if (field === 2 && wt === WIRE_LEN) c.instructions.push(decodeInstruction(buf, i, e));
    else if (field === 5 && wt === WIRE_VARINT) c.id = readVarint64String(buf, i, e, true);
    else if (field === 6 && wt === WIRE_VARINT) c.rootId = readVarint64String(buf, i, e, true);
    else if (field === 7 && wt === WIRE_VARINT) c.isFusion = readVarint(buf, i, e) !== 0;
  });
  return c;
}

function decodeInstruction(buf: Uint8Array, start: number, end: number): HloInstruction {
  const inst: HloInstruction = {
    id: '',
    name: '',
    opcode: '',
    shape: { type: 'invalid', dims: [], tuple: [] },
    operandIds: [],
    calledComputationIds: [],
    dimensions: [],
    window: undefined,
    convDims: undefined,
    dotDims: undefined,
    featureGroupCount: 1,
    batchGroupCount: 1,
    fusionKind: '',
    customCallTarget: '',
    backendConfig: '',
    opName: '',
  };
  walk(buf, start, end, (field, wt, i, e) => {
    switch (field) {
      case 1:
        if (wt === WIRE_LEN) inst.name = readString(buf, i, e);
        break;
      case 2:
        if (wt === WIRE_LEN) inst.opcode = readString(buf, i, e);
        break;
      case 3:
        if (wt === WIRE_LEN) inst.shape = decodeShape(buf, i, e);
        break;
      case 7:
        if (wt === WIRE_LEN) inst.opName = decodeOpName(buf, i, e);
        break;
      case 11:
        if (wt === WIRE_LEN) inst.fusionKind = readString(buf, i, e);
        break;
      case 14:
        inst.dimensions.push(...intList(buf, wt, i, e));
        break;
      case 15:
        if (wt === WIRE_LEN) inst.window = decodeWindow(buf, i, e);
        break;
      case 16:
        if (wt === WIRE_LEN) inst.convDims = decodeConvDims(buf, i, e);
        break;
      case 28:
        if (wt === WIRE_LEN) inst.customCallTarget = readString(buf, i, e);
        break;
      case 30:
        if (wt === WIRE_LEN) inst.dotDims = decodeDotDims(buf, i, e);
        break;
      case 35:
        if (wt === WIRE_VARINT) inst.id = readVarint64String(buf, i, e, true);
        break;
      case 36:
        inst.operandIds.push(...idList(buf, wt, i, e));
        break;
      case 38:
        inst.calledComputationIds.push(...idList(buf, wt, i, e));
        break;
      case 43:
        if (wt === WIRE_LEN) inst.backendConfig = readString(buf, i, e);
        break;
      case 50:
        if (wt === WIRE_VARINT) inst.featureGroupCount = Math.max(1, readVarint(buf, i, e));
        break;
      case 58:
        if (wt === WIRE_VARINT) inst.batchGroupCount = Math.max(1, readVarint(buf, i, e));
        break;
    }
  });
  return inst;
}

function decodeShape(buf: Uint8Array, start: number, end: number): HloShape {
  let code = 0;
  const dims: number[] = [];
  const tuple: HloShape[] = [];
  walk(buf, start, end, (field, wt, i, e) => {
    if (field === 2 && wt === WIRE_VARINT) code = readVarint(buf, i, e);
    else if (field === 3) dims.push(...intList(buf, wt, i, e));
    else if (field === 4 && wt === WIRE_LEN) tuple.push(decodeShape(buf, i, e));
  });
  const type = code === TUPLE ? 'tuple' : (ELEMENT_NAMES[code] ?? `type${code}`);
  return { type, dims, tuple };
}

function decodeOpName(buf: Uint8Array, start: number, end: number): string {
  let name = '';
  walk(buf, start, end, (field, wt, i, e) => {
    if (field === 2 && wt === WIRE_LEN) name = readString(buf, i, e);
  });
  return name;
}

function decodeWindow(buf: Uint8Array, start: number, end: number): HloWindowDim[] {
  const dims: HloWindowDim[] = [];
  walk(buf, start, end, (field, wt, i, e) => {
    if (field !== 1 || wt !== WIRE_LEN) return;
    const d: HloWindowDim = { size: 1, stride: 1, padLow: 0, padHigh: 0, windowDilation: 1, baseDilation: 1 };
    walk(buf, i, e, (f, w, j, k) => {
      if (w !== WIRE_VARINT) return;
      const v = signedVarint(buf, j, k);
      if (f === 1) d.size = v;
      else if (f === 2) d.stride = v;
      else if (f === 3) d.padLow = v;
      else if (f === 4) d.padHigh = v;
      else if (f === 5) d.windowDilation = v;
      else if (f === 6) d.baseDilation = v;
    });
    // proto3 omits zeros; a stride or dilation of 0 means "unset", i.e. 1.
    d.stride ||= 1;
    d.windowDilation ||= 1;
    d.baseDilation ||= 1;
    dims.push(d);
  });
  return dims;
}

function decodeConvDims(buf: Uint8Array, start: number, end: number): HloConvDims {
  const c: HloConvDims = {
    inputBatch: 0,
    inputFeature: 0,
    inputSpatial: [],
    kernelInputFeature: 0,
    kernelOutputFeature: 0,
    kernelSpatial: [],
    outputBatch: 0,
    outputFeature: 0,
    outputSpatial: [],
  };
  walk(buf, start, end, (field, wt, i, e) => {
    if (wt === WIRE_VARINT) {
      const v = readVarint(buf, i, e);
      if (field === 3) c.kernelInputFeature = v;
      else if (field === 4) c.kernelOutputFeature = v;
      else if (field === 7) c.inputBatch = v;
      else if (field === 8) c.inputFeature = v;
      else if (field === 9) c.outputBatch = v;
      else if (field === 10) c.outputFeature = v;
      else if (field === 6) c.kernelSpatial.push(v);
      else if (field === 11) c.inputSpatial.push(v);
      else if (field === 12) c.outputSpatial.push(v);
    } else if (wt === WIRE_LEN) {
      const list = intList(buf, wt, i, e);
      if (field === 6) c.kernelSpatial.push(...list);
      else if (field === 11) c.inputSpatial.push(...list);
      else if (field === 12) c.outputSpatial.push(...list);
    }
  });
  return c;
}

function decodeDotDims(buf: Uint8Array, start: number, end: number): HloDotDims {
  const d: HloDotDims = { lhsContracting: [], rhsContracting: [], lhsBatch: [], rhsBatch: [] };
  walk(buf, start, end, (field, wt, i, e) => {
    const list = intList(buf, wt, i, e);
    if (field === 1) d.lhsContracting.push(...list);
    else if (field === 2) d.rhsContracting.push(...list);
    else if (field === 3) d.lhsBatch.push(...list);
    else if (field === 4) d.rhsBatch.push(...list);
  });
  return d;
}

/** A repeated int64 field: packed (LEN) or one unpacked varint. */
function intList(buf: Uint8Array, wt: number, i: number, end: number): number[] {
  if (wt === WIRE_VARINT) return [signedVarint(buf, i, end)];
  if (wt !== WIRE_LEN) return [];
  const out: number[] = [];
  let p = i;
  while (p < end) {
    out.push(signedVarint(buf, p, end));
    p = wirePos;
  }
  return out;
}

/** A repeated int64 id field as decimal strings. */
function idList(buf: Uint8Array, wt: number, i: number, end: number): string[] {
  if (wt === WIRE_VARINT) return [readVarint64String(buf, i, end, true)];
  if (wt !== WIRE_LEN) return [];
  const out: string[] = [];
  let p = i;
  while (p < end) {
    out.push(readVarint64String(buf, p, end, true));
    p = wirePos;
  }
  return out;
}

/** An int64 varint as a JS number (negative values are ten-byte two's complement). */
function signedVarint(buf: Uint8Array, i: number, end: number): number {
  const s = readVarint64String(buf, i, end, true);
  return Number(s);
}

/**
 * Call `fn(field, wireType, valueStart, valueEnd)` for each field of the message in buf[start, end).
 * For LEN fields the value range is the payload; for others it runs to the message end.
 */
function walk(
  buf: Uint8Array,
  start: number,
  end: number,
  fn: (field: number, wt: number, i: number, e: number) => void,
): void {
  let i = start;
  while (i < end) {
    const tag = readVarint(buf, i, end);
    const at = wirePos;
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 0) throw new WireError(i, 'invalid field number 0');
    if (wt === WIRE_LEN) {
      const len = readVarint(buf, at, end);
      const s = wirePos;
      if (s + len > end) throw new WireError(i, `field ${field} runs past its message`);
      fn(field, wt, s, s + len);
      i = s + len;
    } else {
      fn(field, wt, at, end);
      i = skipField(buf, at, end, wt);
    }
  }
}
