import { describe, expect, it } from 'vitest';
import { gcdOfCounts } from '../../../src/evidence/analysis/hotspots.js';
import {
  baseOpName,
  deriveCategory,
  isCustomCall,
  laneRole,
  profilerStepNumber,
  scopeOf,
} from '../../../src/evidence/analysis/ops.js';
import type { DeviceKind, TraceLane } from '../../../src/evidence/trace/model.js';

function lane(kind: DeviceKind, name: string): TraceLane {
  return { index: 0, name, rawId: '1', device: { index: 0, name: 'd', rawId: '1', kind, stats: {} } };
}

describe('op naming and classification', () => {
  it('strips only a trailing instruction number', () => {
    expect(baseOpName('fusion.12')).toBe('fusion');
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
  });

  it('recognises custom calls by category, custom_call_target or name', () => {
    expect(isCustomCall('custom-call', undefined, 'gdn_chunk_fwd.3')).toBe(true);
    expect(
      isCustomCall('loop fusion', '%k = f32[8] custom-call(), custom_call_target="tpu_custom_call"', 'k'),
    ).toBe(true);
    expect(isCustomCall('kernel', undefined, 'custom-call.1')).toBe(true);
    expect(isCustomCall('loop fusion', '%fusion.1 = f32[8] fusion()', 'fusion.1')).toBe(false);
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
  });

  it('counts executions from kernel repetition with a gcd', () => {
    expect(gcdOfCounts([6, 9, 3, 12])).toBe(3);
    expect(gcdOfCounts([7])).toBe(7);
    expect(gcdOfCounts([])).toBe(0);
  });
});
