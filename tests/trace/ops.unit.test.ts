import { describe, expect, it } from 'vitest';
import type { OpInfo } from '../../src/trace/collect.js';
import {
  baseOpName,
  customCallKind,
  deriveCategory,
  isCustomCall,
  laneRole,
  profilerStepNumber,
  scopeOf,
} from '../../src/trace/ops.js';
import { type DeviceKind, deviceKindOf, type TraceLane } from '../../src/trace/readers/model.js';
import { disagreement, executionsOf, modalExecutions } from '../../src/trace/steps.js';

function lane(kind: DeviceKind, name: string): TraceLane {
  return { index: 0, name, rawId: '1', device: { index: 0, name: 'd', rawId: '1', kind, stats: {} } };
}

describe('op naming and classification', () => {
  it('strips the trailing instruction numbers, also of clones (cudnn-conv.1.0)', () => {
    expect(baseOpName('fusion.12')).toBe('fusion');
    expect(baseOpName('cudnn-conv.1.0')).toBe('cudnn-conv');
    expect(baseOpName('copy-start.3')).toBe('copy-start');
    expect(baseOpName('convolution_add_fusion')).toBe('convolution_add_fusion');
    expect(baseOpName('gemm_fusion_dot_general_1.kd')).toBe('gemm_fusion_dot_general_1.kd');
    expect(baseOpName('stream1_dense_linear.20')).toBe('stream1_dense_linear');
    expect(baseOpName('.5')).toBe('.5');
  });

  it('derives categories for ops without hlo_category (XLA:CPU, GPU)', () => {
    expect(deriveCategory('ynn_fusion.3')).toBe('ynn fusion');
    expect(deriveCategory('broadcast_divide_fusion')).toBe('fusion');
    expect(deriveCategory('gemm_fusion_dot_general.1')).toBe('gemm fusion');
    expect(deriveCategory('wrapped_reduce-window.2')).toBe('reduce-window');
    expect(deriveCategory('while.10')).toBe('while');
    expect(deriveCategory('copy.16')).toBe('copy');
    expect(deriveCategory('all-reduce-start.1')).toBe('all-reduce');
    expect(deriveCategory('custom-call.1')).toBe('custom-call');
    expect(deriveCategory('void cutlass::Kernel<x>(Params)', 'kernel')).toBe('kernel');
    expect(deriveCategory('Memcpy HtoD (Pinned -> Device)', 'gpu_memcpy')).toBe('gpu_memcpy');
    // Library and typed-FFI custom calls are custom calls, not plain kernels.
    expect(deriveCategory('cudnn-conv.1.0')).toBe('custom-call');
    expect(deriveCategory('te_fused_attn_backward_ffi.18')).toBe('custom-call');
    // xprof's streaming trace viewer files every kernel under `gpu_launch`: that says nothing.
    expect(deriveCategory('Im3d2Col.kd', 'gpu_launch')).toBe('kernel');
  });

  it('names who wrote a custom call from its target', () => {
    expect(customCallKind('tpu_custom_call')).toBe('pallas');
    expect(customCallKind('mosaic_gpu')).toBe('pallas');
    expect(customCallKind('__gpu$xla.gpu.triton')).toBe('pallas');
    expect(customCallKind('te_fused_attn_forward_ffi')).toBe('te-ffi');
    expect(customCallKind('__cudnn$convForward')).toBe('cudnn');
    expect(customCallKind('__cublas$gemm')).toBe('cublas');
    expect(customCallKind('__cublas$lt$matmul')).toBe('cublas');
    expect(customCallKind('my_kernel')).toBe('other');
  });

  it('recognises custom calls by category, custom_call_target or name', () => {
    expect(isCustomCall('custom-call', undefined, 'gdn_chunk_fwd.3')).toBe(true);
    expect(
      isCustomCall('loop fusion', '%k = f32[8] custom-call(), custom_call_target="tpu_custom_call"', 'k'),
    ).toBe(true);
    expect(isCustomCall('kernel', undefined, 'custom-call.1')).toBe(true);
    expect(isCustomCall('loop fusion', '%fusion.1 = f32[8] fusion()', 'fusion.1')).toBe(false);
    expect(isCustomCall('kernel', undefined, 'te_fused_attn_forward_ffi.10')).toBe(true);
  });

  it('takes the scope from tf_op, or from the GPU name stack when tf_op is only XlaModule', () => {
    expect(scopeOf('jit(train_step)/jit(main)/mlp/dot_general:')).toBe('jit(train_step)/jit(main)/mlp');
    expect(scopeOf('jit(f)/add')).toBe('jit(f)');
    expect(scopeOf('jit(f)')).toBe('jit(f)');
    expect(scopeOf('XlaModule:', 'jit(dot)/dot_general')).toBe('jit(dot)');
    expect(scopeOf(undefined)).toBe('');
    expect(scopeOf('plain')).toBe('');
  });

  it('parses Kineto step names', () => {
    expect(profilerStepNumber('ProfilerStep#1009')).toBe(1009);
    expect(profilerStepNumber('ProfilerStep')).toBeUndefined();
  });

  it('assigns lane roles from device kind and line name', () => {
    expect(laneRole(lane('tpu', 'XLA Ops'))).toBe('ops');
    expect(laneRole(lane('tpu', 'XLA Modules'))).toBe('modules');
    expect(laneRole(lane('tpu', 'Steps'))).toBe('steps');
    expect(laneRole(lane('tpu', 'Async XLA Ops'))).toBe('ignore');
    expect(laneRole(lane('tpu', 'XLA TraceMe'))).toBe('ignore');
    expect(laneRole(lane('gpu', 'Stream #16(Kernel)'))).toBe('ops');
    expect(laneRole(lane('gpu', 'stream 7 '))).toBe('ops');
    expect(laneRole(lane('gpu', 'Framework Name Scope'))).toBe('ignore');
    expect(laneRole(lane('host', 'main/3116817'))).toBe('host');
    expect(laneRole(lane('unknown', 'XLA Ops'))).toBe('ignore');
    // Lines xprof's trace viewer derives from the GPU streams are never counted as op lines.
    expect(laneRole(lane('gpu', 'XLA Ops - from #16'))).toBe('ignore');
    expect(laneRole(lane('gpu', 'XLA Modules - from #16'))).toBe('ignore');
    expect(laneRole(lane('gpu', 'Framework Ops - from #16'))).toBe('ignore');
    expect(laneRole(lane('gpu', 'Source code - from #16'))).toBe('ignore');
  });

  it('recognises device planes with a host prefix (xprof trace_viewer@)', () => {
    expect(deviceKindOf('tw003 /device:GPU:0')).toBe('gpu');
    expect(deviceKindOf('host /device:TPU:3')).toBe('tpu');
    expect(deviceKindOf('tw003 /host:CPU')).toBe('host');
    expect(deviceKindOf('/device:GPU:7')).toBe('gpu');
    expect(deviceKindOf('mydevice:GPU:0')).toBe('unknown');
  });
});

function opWith(count: number, kernels?: Record<string, number>): OpInfo {
  return {
    countIn: count,
    countOut: 0,
    kernels: kernels === undefined ? undefined : new Map(Object.entries(kernels)),
  } as OpInfo;
}

describe('execution counts from op repetition', () => {
  it('counts an op that launches two kernels per execution once per execution', () => {
    expect(executionsOf(opWith(79, { 'Im3d2Col.kd': 39, 'Cijk_gemm.kd': 40 }))).toBe(40);
    expect(executionsOf(opWith(40, { 'input_transpose_fusion.kd': 40 }))).toBe(40);
    expect(executionsOf(opWith(7))).toBe(7);
  });

  it('counts an op that launches one kernel twice per execution once (TransformerEngine backward)', () => {
    // te_fused_attn_backward_ffi.12 of the real gfx950 trace: 2 fills and 3 attention kernels, 5 runs.
    const backward = { fill: 10, dot_do: 5, dq_dk_dv: 5, convert_dq: 5 };
    expect(executionsOf(opWith(25, backward))).toBe(5);
    expect(executionsOf(opWith(25, backward), 5)).toBe(5);
    // Inside a loop that runs it 3 times per program execution.
    expect(executionsOf(opWith(75, { fill: 30, dot_do: 15, dq_dk_dv: 15, convert_dq: 15 }), 5)).toBe(15);
    // A kernel launched in only one of 5 executions lowers nothing when the program's executions are known.
    expect(executionsOf(opWith(11, { init: 1, a: 5, b: 5 }), 5)).toBe(5);
  });

  it('takes the modal count, so one kernel that lost its tag cannot make it 1 (a GCD would)', () => {
    // The 8-GPU convolution: 40, 39 (one kernel untagged), 79 kernels = 40 executions, 40.
    const conv = [opWith(40), opWith(39), opWith(79, { 'Im3d2Col.kd': 39, 'Cijk_gemm.kd': 40 }), opWith(40)];
    expect(modalExecutions(conv)).toEqual({ count: 40, share: 0.75 });
    expect(modalExecutions([opWith(3), opWith(5)])).toEqual({ count: 5, share: 0.5 });
    expect(modalExecutions([])).toEqual({ count: 0, share: 0 });
  });

  it('reports detectors that disagree with the chosen one, naming each', () => {
    expect(
      disagreement([
        { detector: 'kernel-repetition', perDevice: 5, confidence: 'medium', detail: '5 executions' },
        { detector: 'host-launches', perDevice: 10, confidence: 'high', detail: '80 launches' },
      ]),
    ).toBe(
      'step detectors disagree: kernel-repetition found 5 per device, host-launches 10 (high: 80 launches)',
    );
    expect(
      disagreement([
        { detector: 'host-launches', perDevice: 5, confidence: 'high', detail: 'a' },
        { detector: 'kernel-repetition', perDevice: 5, confidence: 'medium', detail: 'b' },
      ]),
    ).toBeUndefined();
  });
});
