import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { instructionCost } from '../../src/trace/cost.js';
import {
  decodeHloProto,
  type HloComputation,
  type HloInstruction,
  type HloModule,
  type HloShape,
} from '../../src/trace/readers/hlo-proto.js';
import { XplaneSource } from '../../src/trace/readers/xplane.js';
import { FIXTURES, REAL_TRACES } from '../helpers/paths.js';

const shape = (type: string, dims: number[]): HloShape => ({ type, dims, tuple: [] });

function inst(id: string, opcode: string, s: HloShape, extra: Partial<HloInstruction> = {}): HloInstruction {
  return {
    id,
    name: `${opcode}.${id}`,
    opcode,
    shape: s,
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
    ...extra,
  };
}

function moduleOf(computations: HloComputation[]): HloModule {
  const m: HloModule = {
    name: 'm',
    entryComputationId: computations.at(-1)!.id,
    computations: new Map(computations.map((c) => [c.id, c])),
    byId: new Map(),
    byName: new Map(),
  };
  for (const c of computations) for (const i of c.instructions) m.byId.set(i.id, i);
  return m;
}

const comp = (id: string, instructions: HloInstruction[], isFusion = false): HloComputation => ({
  id,
  name: `c${id}`,
  instructions,
  rootId: instructions.at(-1)!.id,
  isFusion,
});

describe('the HLO cost model', () => {
  it('dot: 2 FLOPs per multiply-add; bytes are operands plus result', () => {
    const a = inst('1', 'parameter', shape('bf16', [64, 128]));
    const b = inst('2', 'parameter', shape('bf16', [128, 32]));
    const dot = inst('3', 'dot', shape('f32', [64, 32]), {
      operandIds: ['1', '2'],
      dotDims: { lhsContracting: [1], rhsContracting: [0], lhsBatch: [], rhsBatch: [] },
    });
    const c = instructionCost(moduleOf([comp('1', [a, b, dot])]), dot);
    expect(c.flops).toBe(2 * 64 * 32 * 128);
    expect(c.bytes).toBe(64 * 128 * 2 + 128 * 32 * 2 + 64 * 32 * 4);
    expect(c.dtype).toBe('bf16');
  });

  it('convolution: only kernel positions over real input count (padding and base dilation excluded)', () => {
    // 1-D: input 5, kernel 3, stride 1, padding 1 on both sides → output 5; of the 15 (output, kernel)
    // pairs, the two at the padded edges do not touch the input: 13 valid.
    const lhs = inst('1', 'parameter', shape('f32', [2, 4, 5])); // b f 0
    const rhs = inst('2', 'parameter', shape('f32', [6, 4, 3])); // o i 0
    const convDims = {
      inputBatch: 0,
      inputFeature: 1,
      inputSpatial: [2],
      kernelInputFeature: 1,
      kernelOutputFeature: 0,
      kernelSpatial: [2],
      outputBatch: 0,
      outputFeature: 1,
      outputSpatial: [2],
    };
    const window = [{ size: 3, stride: 1, padLow: 1, padHigh: 1, windowDilation: 1, baseDilation: 1 }];
    const conv = inst('3', 'convolution', shape('f32', [2, 6, 5]), {
      operandIds: ['1', '2'],
      convDims,
      window,
    });
    const m = moduleOf([comp('1', [lhs, rhs, conv])]);
    expect(instructionCost(m, conv).flops).toBe(2 * 13 * 4 * 6 * 2);
    // Feature groups divide the input features.
    const grouped = { ...conv, featureGroupCount: 2 };
    expect(instructionCost(m, grouped).flops).toBe(2 * 13 * 2 * 6 * 2);
    // Base dilation 2 (a transposed convolution's holes): input 5 dilates to 9; output 9 positions.
    const dilated = inst('4', 'convolution', shape('f32', [2, 6, 9]), {
      operandIds: ['1', '2'],
      convDims,
      window: [{ ...window[0]!, baseDilation: 2 }],
    });
    // Per output o, kernel k: index o - 1 + k must be even (a real element) and < 9, i.e. 0..8.
    let valid = 0;
    for (let o = 0; o < 9; o++)
      for (let k = 0; k < 3; k++) {
        const d = o - 1 + k;
        if (d >= 0 && d % 2 === 0 && d / 2 < 5) valid++;
      }
    expect(instructionCost(moduleOf([comp('1', [lhs, rhs, dilated])]), dilated).flops).toBe(
      2 * valid * 4 * 6 * 2,
    );
  });

  it('fusion: the sum of its elementwise ops and reductions; data movement is free; transcendentals are not FLOPs', () => {
    const p = inst('10', 'parameter', shape('f32', [8, 16]));
    const mul = inst('11', 'multiply', shape('f32', [8, 16]), { operandIds: ['10', '10'] });
    const exp = inst('12', 'exponential', shape('f32', [8, 16]), { operandIds: ['11'] });
    const tr = inst('13', 'transpose', shape('f32', [16, 8]), { operandIds: ['12'] });
    const x = inst('20', 'parameter', shape('f32', []));
    const y = inst('21', 'parameter', shape('f32', []));
    const add = inst('22', 'add', shape('f32', []), { operandIds: ['20', '21'] });
    const init = inst('14', 'constant', shape('f32', []));
    const red = inst('15', 'reduce', shape('f32', [16]), {
      operandIds: ['13', '14'],
      calledComputationIds: ['3'],
    });
    const outer = inst('30', 'parameter', shape('f32', [8, 16]));
    const fusion = inst('31', 'fusion', shape('f32', [16]), {
      operandIds: ['30'],
      calledComputationIds: ['2'],
      fusionKind: 'kInput',
    });
    const m = moduleOf([
      comp('3', [x, y, add]),
      comp('2', [p, mul, exp, tr, init, red], true),
      comp('1', [outer, fusion]),
    ]);
    // multiply 128, exponential 0, transpose 0, reduce (128 − 16) × 1 add.
    expect(instructionCost(m, fusion).flops).toBe(128 + (128 - 16));
    expect(instructionCost(m, fusion).bytes).toBe(8 * 16 * 4 + 16 * 4);
  });

  it('custom calls: cuDNN convolutions and cuBLAS GEMMs are costed; other targets have no model', () => {
    const a = inst('1', 'parameter', shape('bf16', [64, 128]));
    const b = inst('2', 'parameter', shape('bf16', [128, 32]));
    const out: HloShape = { type: 'tuple', dims: [], tuple: [shape('bf16', [64, 32]), shape('s8', [1024])] };
    const gemm = inst('3', 'custom-call', out, {
      operandIds: ['1', '2'],
      customCallTarget: '__cublas$gemm',
      backendConfig: JSON.stringify({
        gemm_backend_config: { dot_dimension_numbers: { lhs_contracting_dimensions: ['1'] } },
      }),
    });
    const pallas = inst('4', 'custom-call', shape('bf16', [64, 32]), {
      operandIds: ['1', '2'],
      customCallTarget: 'tpu_custom_call',
    });
    const m = moduleOf([comp('1', [a, b, gemm, pallas])]);
    const g = instructionCost(m, gemm);
    expect(g).toMatchObject({ flops: 2 * 64 * 32 * 128, customCall: 'cublas', target: '__cublas$gemm' });
    // The workspace (the s8 tuple element) is scratch, not traffic.
    expect(g.bytes).toBe(64 * 128 * 2 + 128 * 32 * 2 + 64 * 32 * 2);
    expect(instructionCost(m, pallas)).toMatchObject({ flops: undefined, customCall: 'pallas' });
  });
});

describe('reduce-window, scatter and all-reduce, as HloCostAnalysis counts them', () => {
  const win = (size: number, padLow = 0, padHigh = padLow, stride = 1) => ({
    size,
    stride,
    padLow,
    padHigh,
    windowDilation: 1,
    baseDilation: 1,
  });
  const adder = () =>
    comp('9', [
      inst('90', 'parameter', shape('f32', [])),
      inst('91', 'parameter', shape('f32', [])),
      inst('92', 'add', shape('f32', []), { operandIds: ['90', '91'] }),
    ]);

  it('reduce-window: (window − 1) reductions per output element, each the reducer’s FLOPs', () => {
    const x = inst('1', 'parameter', shape('f32', [64, 64]));
    const init = inst('2', 'constant', shape('f32', []));
    const rw = inst('3', 'reduce-window', shape('f32', [61, 64]), {
      operandIds: ['1', '2'],
      calledComputationIds: ['9'],
      window: [win(4), win(1)],
    });
    const m = moduleOf([adder(), comp('1', [x, init, rw])]);
    expect(instructionCost(m, rw).flops).toBe(3 * 61 * 64);
  });

  it('reduce-window that reduces one dimension and broadcasts it back: one reduction per row plus the window', () => {
    // A cumulative-sum-like window over all 8 elements of a dimension, padded by 7 on both sides.
    const x = inst('1', 'parameter', shape('f32', [4, 8]));
    const init = inst('2', 'constant', shape('f32', []));
    const rw = inst('3', 'reduce-window', shape('f32', [4, 8]), {
      operandIds: ['1', '2'],
      calledComputationIds: ['9'],
      window: [win(1), win(15, 7)],
    });
    const m = moduleOf([adder(), comp('1', [x, init, rw])]);
    expect(instructionCost(m, rw).flops).toBe(32 / 8 + (8 - 1));
  });

  it('scatter: the combiner once per update element; a plain set (no FLOPs in the combiner) is free', () => {
    const operandX = inst('1', 'parameter', shape('f32', [64, 64]));
    const indices = inst('2', 'parameter', shape('s32', [8, 1]));
    const updates = inst('3', 'parameter', shape('f32', [8, 64]));
    const add = inst('4', 'scatter', shape('f32', [64, 64]), {
      operandIds: ['1', '2', '3'],
      calledComputationIds: ['9'],
    });
    const keep = comp('8', [
      inst('80', 'parameter', shape('f32', [])),
      inst('81', 'parameter', shape('f32', [])),
    ]);
    const set = inst('5', 'scatter', shape('f32', [64, 64]), {
      operandIds: ['1', '2', '3'],
      calledComputationIds: ['8'],
    });
    const m = moduleOf([adder(), keep, comp('1', [operandX, indices, updates, add, set])]);
    expect(instructionCost(m, add).flops).toBe(8 * 64);
    expect(instructionCost(m, set).flops).toBe(0);
  });

  it('all-reduce: one FLOP per result element (XLA assumes two replicas), tuple results summed', () => {
    const a = inst('1', 'parameter', shape('f32', [64]));
    const b = inst('2', 'parameter', shape('bf16', [8, 4]));
    const one = inst('3', 'all-reduce', shape('f32', [64]), {
      operandIds: ['1'],
      calledComputationIds: ['9'],
    });
    const both = inst(
      '4',
      'all-reduce',
      { type: 'tuple', dims: [], tuple: [shape('f32', [64]), shape('bf16', [8, 4])] },
      { operandIds: ['1', '2'], calledComputationIds: ['9'] },
    );
    const m = moduleOf([adder(), comp('1', [a, b, one, both])]);
    expect(instructionCost(m, one).flops).toBe(64);
    expect(instructionCost(m, both).flops).toBe(64 + 32);
  });
});

describe('HLO modules from a real XSpace', () => {
  it("decodes the MI300X convolution's module and costs its cuDNN call", async () => {
    const path = join(REAL_TRACES, 'TraceLens/tests/traces/mi300/jax_conv_minimal_08/tw003.xplane.pb');
    const { modules, skipped } = await new XplaneSource(path).hloProtos();
    expect(skipped).toEqual([]);
    expect([...modules.values()].map((m) => m.name)).toContain('jit_forward_3d_conv(15)');
    const wanted = await new XplaneSource(path).hloProtos(new Set(['15']));
    expect([...wanted.modules.keys()]).toEqual(['15']);
    const m = decodeHloProto(wanted.modules.get('15')!.bytes);
    const conv = m.byName.get('cudnn-conv.1')!;
    expect(conv.customCallTarget).toBe('__cudnn$convForward');
    expect(conv.window!.map((w) => [w.size, w.stride, w.padLow])).toEqual([
      [1, 1, 1],
      [2, 2, 1],
      [2, 2, 1],
    ]);
    // 16 in × 5120 out features × (32 · 60 · 104) valid positions × 2: what xprof reports too.
    expect(instructionCost(m, conv).flops).toBe(2 * 16 * 5120 * 32 * 60 * 104);
  });

  it('costs the scatter, reduce-window and psum of a real XLA:CPU pmap (tests/fixtures/jax-cpu-pmap)', async () => {
    const path = join(FIXTURES, 'jax-cpu-pmap/pmap4/plugins/profile/run/cpu.xplane.pb');
    const { modules } = await new XplaneSource(path).hloProtos();
    const step = [...modules.values()]
      .map((p) => decodeHloProto(p.bytes))
      .find((m) => m.name === 'jit__fun')!;
    const flops = (name: string) => instructionCost(step, step.byName.get(name)!).flops;
    // h.at[idx].add(1.0): 8 rows of 64 updates, one add each.
    expect(flops('wrapped_scatter')).toBe(8 * 64);
    // reduce_window of 4 rows over [64, 64] → [61, 64]: 3 adds per output element.
    expect(flops('wrapped_reduce-window')).toBe(3 * 61 * 64);
    // psum of 64 elements: an all-reduce.
    expect(step.byName.get('psum.7')!.opcode).toBe('all-reduce');
    expect(flops('psum.7')).toBe(64);
  });
});
