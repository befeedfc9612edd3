import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { writeSyntheticJson } from '../../bench/traces/synthetic.js';
import {
  eventJson,
  JSON_HEAD,
  JSON_TAIL,
  metadataJson,
  type TslEvent,
  tslToJson,
  xspaceToTsl,
} from '../../bench/traces/tsl-json.js';
import { formatSummary } from '../../src/report/trace-tables.js';
import { diffSummaries } from '../../src/trace/diff.js';
import { ChromeJsonSource } from '../../src/trace/readers/chrome-json.js';
import { openTrace } from '../../src/trace/readers/open.js';
import { XplaneSource } from '../../src/trace/readers/xplane.js';
import { summarizeTrace } from '../../src/trace/summarize.js';
import type { TraceSummary } from '../../src/trace/types.js';
import { InputError } from '../../src/util/errors.js';
import { FIXTURES, REAL_TRACES, tempDir } from '../helpers/paths.js';
import { decodeWithProtobufjs } from './readers/xplane-proto.js';

const TPU = join(REAL_TRACES, 'xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb');
const MI300X = join(REAL_TRACES, 'TraceLens/tests/traces/mi300/jax08_gemm/tw003.xplane.pb');
const CONV8 = join(REAL_TRACES, 'TraceLens/tests/traces/mi300/jax_conv_minimal_08/tw003.xplane.pb');
const CONV_LEGACY = join(
  REAL_TRACES,
  'TraceLens/tests/traces/mi300/jax_conv_minimal_legacy/chi-mi300x-013.ord.vultr.cpe.ice.amd.com.xplane.pb',
);
const ATTENTION = join(REAL_TRACES, 'TraceLens/tests/traces/mi300/jax08_attention/tw003.xplane.pb');
const ELEMENTWISE = join(REAL_TRACES, 'TraceLens/tests/traces/mi300/jax08_elementwise/tw003.xplane.pb');
const TE_FFI = join(
  REAL_TRACES,
  'TraceLens/tests/test_data_jax_te_fused_attn_categorization/934987a2fc2f.xplane.pb',
);
const TRACE_VIEWER = join(FIXTURES, 'xprof-trace-viewer');
const HTA = join(REAL_TRACES, 'HolisticTraceAnalysis/tests/data/trace_diff');
const CPU_STEPS = join(FIXTURES, 'jax-cpu/steps');
const CPU_NO_STEPS = join(FIXTURES, 'jax-cpu/no-steps');

/** The parts of a summary that do not depend on the file format or how many passes it took. */
function analysis(s: TraceSummary): unknown {
  const { source: _source, notes, devices, total, programs, ...rest } = s;
  // Whole-trace sums (about 1e14 ps) may differ in the last bit with summation order.
  const us = (x: number) => Math.round(x * 1e3);
  return {
    ...rest,
    total: { deviceMs: us(total.deviceMs), inStepsMs: us(total.inStepsMs), outsideMs: us(total.outsideMs) },
    programs: programs.map((p) => ({ ...p, deviceMs: us(p.deviceMs), inStepsMs: us(p.inStepsMs) })),
    ops: s.ops.map((o) => ({ ...o, totalMs: us(o.totalMs) })),
    customCalls: s.customCalls.map((c) => ({ ...c, totalMs: us(c.totalMs) })),
    // Whole-trace device sums (about 1e14 ps) may differ in the last bit with summation order.
    devices: devices.map(({ type: _t, peakTflops: _p, ...d }) => ({
      ...d,
      opMs: Math.round(d.opMs * 1e3),
      busyMs: Math.round(d.busyMs * 1e3),
    })),
    notes: notes.filter((n) => !n.startsWith('read ')),
  };
}

/** The analysis without what only an XSpace's HLO can supply (FLOPs, bytes, dtype, roofline). */
function timesOnly(s: TraceSummary): unknown {
  const costless = {
    flops: null,
    flopsPerExecution: null,
    bytes: null,
    bytesPerExecution: null,
    costSource: null,
    dtype: null,
    tflops: null,
    gbps: null,
    intensity: null,
    roofline: null,
    variantsWithoutFlops: undefined,
  };
  return analysis({
    ...s,
    ops: s.ops.map((o) => ({ ...o, ...costless })),
    notes: s.notes.filter((n) => !n.includes('from the HLO in the XSpace')),
  });
}

describe('trace summary on the real TPU v6e fixture', () => {
  it('finds 4 TPU devices and 100 executions of the dominant program on each; every program itemised', async () => {
    const s = await summarizeTrace(new XplaneSource(TPU));
    expect(s.platform).toBe('tpu');
    expect(s.devices.map((d) => [d.name, d.type, d.peakTflops, d.compute])).toEqual([
      ['/device:TPU:0', 'TPU v6 Lite', 918, true],
      ['/device:TPU:1', 'TPU v6 Lite', 918, true],
      ['/device:TPU:2', 'TPU v6 Lite', 918, true],
      ['/device:TPU:3', 'TPU v6 Lite', 918, true],
    ]);
    expect(s.steps.detector).toBe('dominant-program');
    expect(s.steps.confidence).toBe('high');
    expect(s.steps.program).toBe('jit_f(12190760917235803885)');
    expect(s.steps.count).toBe(100);
    expect(s.steps.deviceSteps).toBe(400);
    // The op repetition cross-check agrees, so there is no warning.
    expect(s.steps.estimates.map((e) => [e.detector, e.perDevice])).toEqual([
      ['dominant-program', 100],
      ['kernel-repetition', 100],
    ]);
    expect(s.warnings).toEqual([]);
    // Every op of every program, by device time; the ones outside steps have no per-step time.
    expect(s.ops.map((o) => [o.name, o.program.replace(/\(\d+\)$/, ''), o.timeMs > 0])).toEqual([
      ['copy-done', 'jit_f', true],
      ['broadcast_add_fusion', 'jit_f', true],
      ['all-reduce', 'jit__psum', false],
      ['broadcast', 'jit_broadcast_in_dim', false],
      ['copy-start', 'jit_f', true],
    ]);
    expect(s.programs.map((p) => [p.module, p.executions, p.devices])).toEqual([
      ['jit_f', 400, 4],
      ['jit__psum', 12, 4],
      ['jit_broadcast_in_dim', 1, 1],
    ]);
    expect(s.ops.reduce((t, o) => t + o.totalMs, 0)).toBeCloseTo(s.total.deviceMs, 3);
    expect(s.total.inStepsMs + s.total.outsideMs).toBeCloseTo(s.total.deviceMs, 3);
    expect(s.customCalls).toEqual([]);
    expect(s.ops.reduce((t, o) => t + o.shareOfOps, 0)).toBeCloseTo(100, 2);
    expect(s.roofline.peak?.name).toBe('TPU v6e (Trillium)');
  });

  it('per-step op times equal sums computed independently from a protobufjs decode; FLOPs and roofline', async () => {
    const s = await summarizeTrace(new XplaneSource(TPU));
    const events = decodeWithProtobufjs(TPU);
    const steps = events.filter((e) => e.line === 'XLA Modules' && e.name === 'jit_f(12190760917235803885)');
    const inStep = (e: { plane: string; startPs: number }) =>
      steps.some((m) => m.plane === e.plane && e.startPs >= m.startPs && e.startPs < m.startPs + m.durPs);
    const totals = new Map<string, number>();
    for (const e of events) {
      if (e.line !== 'XLA Ops' || !inStep(e)) continue;
      const base = e.name.replace(/\.\d+$/, '');
      // Op time is the device's own measurement (as in xprof), when the event carries it.
      const dur = e.args.device_duration_ps === undefined ? e.durPs : Number(e.args.device_duration_ps);
      totals.set(base, (totals.get(base) ?? 0) + dur);
    }
    for (const op of s.ops.filter((o) => o.timeMs > 0))
      expect(op.timeMs).toBeCloseTo(totals.get(op.name)! / steps.length / 1e9, 5);
    // Each step lasts as long as its slowest TPU (the k-th execution on each device); the mean over
    // devices, 7.8% less, is the device mean beside it.
    const meanModule = steps.reduce((t, m) => t + m.durPs, 0) / steps.length / 1e9;
    const byDevice = new Map<string, number[]>();
    for (const m of [...steps].sort((a, b) => a.startPs - b.startPs))
      byDevice.set(m.plane, [...(byDevice.get(m.plane) ?? []), m.durPs]);
    const runs = [...byDevice.values()];
    const slowest = runs[0]!.map((_, k) => Math.max(...runs.map((r) => r[k]!)));
    const fastest = runs[0]!.map((_, k) => Math.min(...runs.map((r) => r[k]!)));
    expect(s.steps.timeMs!.mean).toBeCloseTo(slowest.reduce((t, d) => t + d, 0) / slowest.length / 1e9, 5);
    expect(s.steps.timeMs!.max).toBeCloseTo(Math.max(...slowest) / 1e9, 5);
    expect(s.steps.deviceSpread).toMatchObject({ devices: 4, slowest: '/device:TPU:2', slowestSteps: 55 });
    expect(s.steps.deviceSpread!.meanMs).toBeCloseTo(meanModule, 5);
    const spread = slowest.reduce((t, d, k) => t + d - fastest[k]!, 0) / slowest.length / 1e9;
    expect(s.steps.deviceSpread!.spreadMs).toBeCloseTo(spread, 5);
    expect(s.steps.timeMs!.mean / s.steps.deviceSpread!.meanMs).toBeCloseTo(1.084, 3);
    expect(formatSummary(s)).toContain(
      'step time is the slowest of 4 devices each step (mostly /device:TPU:2, 55 of 100 steps); device mean 784.145 ms, slowest − fastest 125.775 ms (16.0%) on average',
    );
    // FLOPs come from the cost model in the XSpace: 3 fusions × 1342177280 per step.
    const fusion = s.ops.find((o) => o.name === 'broadcast_add_fusion')!;
    expect(fusion.flops).toBe(3 * 1342177280);
    expect(fusion.costSource).toBe('trace');
    expect(fusion.category).toBe('loop fusion');
    expect(fusion.variants).toBe(3);
    expect(fusion.tflops).toBeCloseTo(fusion.flops! / (fusion.timeMs / 1e3) / 1e12, 2);
    expect(fusion.intensity).toBeCloseTo(fusion.flops! / fusion.bytes!, 2);
    // 0.125 FLOP/byte is far below the v6e ridge (918 TFLOP/s / 1638 GB/s = 560): memory-bound.
    expect(fusion.roofline).toMatchObject({ bound: 'memory', peak: 'bf16' });
    expect(fusion.roofline!.attainableTflops).toBeCloseTo((fusion.intensity! * 1638e9) / 1e12, 3);
    expect(fusion.roofline!.fraction).toBeCloseTo(fusion.tflops! / fusion.roofline!.attainableTflops, 2);
    // An async start only issues its copy: no bandwidth, no roofline position.
    const start = s.ops.find((o) => o.name === 'copy-start')!;
    expect(start.bytesPerExecution).toBeGreaterThan(1e6); // the copy's bytes, kept
    expect([start.gbps, start.tflops, start.roofline]).toEqual([null, null, null]);
  });

  it('the tsl trace.json.gz of the same profile gives the same analysis in one pass', async () => {
    const t = tempDir();
    try {
      const path = join(t.dir, 'host.trace.json.gz');
      writeFileSync(path, gzipSync(tslToJson(await xspaceToTsl(TPU))));
      const fromJson = await summarizeTrace(new ChromeJsonSource(path));
      const fromXplane = await summarizeTrace(new XplaneSource(TPU));
      expect(fromJson.source.passes).toBe(1);
      expect(fromXplane.source.passes).toBe(2);
      // tsl drops flops and bytes_accessed from the JSON, and the device stats the roofline needs.
      const strip = (s: TraceSummary) => ({
        ...(analysis(s) as object),
        roofline: undefined,
        warnings: undefined,
        ops: (analysis(s) as TraceSummary).ops.map(
          ({
            flops: _f,
            bytes: _b,
            tflops: _t,
            gbps: _g,
            intensity: _i,
            roofline: _r,
            costSource: _c,
            noCostModel: _n,
            ...o
          }) => o,
        ),
      });
      expect(strip(fromJson)).toEqual(strip(fromXplane));
      // Naming the device gives the JSON its roofline back.
      const named = await summarizeTrace(new ChromeJsonSource(path), { deviceKind: 'TPU v6 lite' });
      expect(named.roofline.peak?.name).toBe('TPU v6e (Trillium)');
      expect(named.roofline.source).toBe('device kind "TPU v6 lite"');
      const unknown = await summarizeTrace(new ChromeJsonSource(path), { deviceKind: 'TPU v9 hyper' });
      expect(unknown.roofline.peak).toBeNull();
      expect(unknown.warnings).toContain(
        'device kind "TPU v9 hyper" is not in schemas/device-peaks.json: no roofline (add its peaks to the table)',
      );
    } finally {
      t.cleanup();
    }
  });
});

describe('trace summary on real MI300X, gfx950 and TransformerEngine XSpaces', () => {
  it('the 8-GPU convolution: 5 steps per device from the host launches, not 40× too few (a GCD gave 1)', async () => {
    const s = await summarizeTrace(new XplaneSource(CONV8));
    expect(s.platform).toBe('gpu');
    expect(s.devices).toHaveLength(8);
    expect(s.devices.every((d) => d.compute)).toBe(true);
    expect(s.steps).toMatchObject({
      detector: 'host-launches',
      confidence: 'high',
      program: 'jit_forward_3d_conv(15)',
      count: 5,
      deviceSteps: 40,
      opMs: 0.688767,
    });
    expect(s.steps.estimates.map((e) => [e.detector, e.perDevice])).toEqual([
      ['host-launches', 5],
      ['kernel-repetition', 5],
    ]);
    expect(s.warnings).toEqual([]);
    // The two untagged kernels and the copies are itemised outside steps, not lost.
    expect(s.total).toEqual({ deviceMs: 28.137077, inStepsMs: 27.550676, outsideMs: 0.586401 });
    const conv = s.ops.find((o) => o.name === 'cudnn-conv')!;
    expect(conv).toMatchObject({
      program: 'jit_forward_3d_conv(15)',
      category: 'custom-call',
      customCall: true,
      customCallKind: 'cudnn',
      costSource: 'hlo',
      dtype: 'bf16',
      noCostModel: false,
    });
    // XLA's convolution FLOPs (xprof's hlo_stats gives the same 32.7 GFLOP per execution): one
    // execution per step, though each execution launches two kernels (im2col and a GEMM).
    expect(conv.flops).toBe(32_715_571_200);
    expect(conv.occurrences).toBe(1.975);
    expect(conv.intensity).toBeCloseTo(56.497, 3);
    expect(s.roofline.peak?.name).toBe('AMD Instinct MI300X');
    expect(conv.roofline).toMatchObject({ bound: 'memory', peak: 'bf16' });
    expect(conv.roofline!.attainableTflops).toBeCloseTo((56.497 * 5.3e12) / 1e12, 0);
    expect(s.customCalls.map((c) => [c.name, c.kind, c.noCostModel])).toEqual([
      ['cudnn-conv', 'cudnn', false],
    ]);
  });

  it('the legacy convolution: devices that only copied are not counted; launches the devices never ran are reported', async () => {
    const s = await summarizeTrace(new XplaneSource(CONV_LEGACY));
    expect(s.devices.map((d) => [d.name, d.compute])).toEqual([
      ['/device:GPU:0', false],
      ['/device:GPU:7', true],
    ]);
    expect(s.steps).toMatchObject({ detector: 'kernel-repetition', count: 5, deviceSteps: 5 });
    expect(s.ops.map((o) => o.name)).toContain('cudnn-conv');
    expect(s.warnings).toEqual([
      'step detectors disagree: kernel-repetition found 5 per device, host-launches 10 (high: 80 launches of jit_forward_3d_conv from 8 host thread(s))',
    ]);
    expect(s.notes.join('\n')).toMatch(/device events of the other launches are missing/);
    expect(s.notes.join('\n')).toMatch(/1 device\(s\) ran only memory copies .*\/device:GPU:0/);
  });

  it('TransformerEngine FFI calls are custom calls without a cost model, in their own table', async () => {
    const s = await summarizeTrace(new XplaneSource(TE_FFI));
    expect(s.steps).toMatchObject({ detector: 'host-launches', count: 5 });
    expect(s.customCalls.map((c) => [c.name, c.kind, c.noCostModel, c.launches])).toEqual([
      ['te_fused_attn_backward_ffi', 'te-ffi', true, 10],
      ['te_fused_attn_forward_ffi', 'te-ffi', true, 4],
      ['custom-call', 'cublas', false, 1],
    ]);
    const backward = s.ops.find((o) => o.name === 'te_fused_attn_backward_ffi')!;
    expect(backward).toMatchObject({ category: 'custom-call', noCostModel: true, flops: null, tflops: null });
    // Its two instructions (.12, .18) each launch 2 buffer fills and 3 attention kernels per execution
    // (25 launches in 5 runs of jit_loss_fn): 10 executions, not the 20 the fills' launches suggest,
    // so the bytes XLA gives per execution move at 362 GB/s, not 725.
    expect(backward).toMatchObject({ variants: 2, totalCount: 50, executions: 10 });
    expect(backward.gbps).toBeCloseTo((backward.bytesPerExecution! * 10) / (backward.totalMs / 1e3) / 1e9, 1);
    expect(backward.gbps).toBeCloseTo(362.267, 3);
    // The forward call launches an RNG-state kernel and its attention kernel once each per execution.
    expect(s.ops.find((o) => o.name === 'te_fused_attn_forward_ffi')).toMatchObject({ executions: 10 });
    // A gfx950 (compute capability 9.5) is not in the peak table: said, not guessed.
    expect(s.roofline.peak).toBeNull();
    expect(s.warnings).toContain(
      'AMD GPU, compute capability 9.5, 256 cores, 309 GB is not in schemas/device-peaks.json: no roofline (add its peaks to the table)',
    );
  });

  it('many small programs: the whole trace is itemised per program and op, not one "outside steps" line', async () => {
    const s = await summarizeTrace(new XplaneSource(ELEMENTWISE));
    expect(s.steps.program).toBe('jit_multiply(17)');
    expect(s.total.outsideMs / s.total.deviceMs).toBeGreaterThan(0.8);
    expect(s.notes.join('\n')).toMatch(/85% of device op time is outside steps/);
    expect(s.programs.length).toBeGreaterThanOrEqual(12);
    // Every program's ops are rows, with their program, sorted by device time.
    const programs = new Set(s.ops.map((o) => o.program));
    for (const p of s.programs.filter((x) => x.name !== '(unknown)')) expect(programs.has(p.name)).toBe(true);
    const totals = s.ops.map((o) => o.totalMs);
    expect(totals).toEqual([...totals].sort((a, b) => b - a));
    expect(s.ops.filter((o) => o.timeMs === 0 && o.totalMs > 0).length).toBeGreaterThan(8);
  });

  it('rocBLAS GEMMs get FLOPs from the HLO and a roofline position', async () => {
    const s = await summarizeTrace(new XplaneSource(MI300X));
    expect(s.steps).toMatchObject({ detector: 'kernel-repetition', program: 'jit_dot(49)', count: 3 });
    expect(s.steps.timeMs).toBeNull();
    const gemm = s.ops[0]!;
    expect(gemm).toMatchObject({ name: 'custom-call', program: 'jit_dot(49)', customCallKind: 'cublas' });
    // 2 × 8192 × 8192 × 4096 FLOPs per execution (bf16[8192,8192] = [8192,4096] × [4096,8192]).
    expect(gemm.flops).toBe(2 * 8192 * 8192 * 4096);
    expect(gemm.roofline).toMatchObject({ bound: 'compute', attainableTflops: 1307.4, peak: 'bf16' });
    expect(s.programs.filter((p) => p.module === 'jit_dot')).toHaveLength(6);
    // ROCm keeps XLA's CUDA names for its library calls; the tables say what ran on the AMD device.
    const text = formatSummary(s);
    expect(text).toContain('custom call (rocBLAS/hipBLASLt)');
    expect(text).not.toContain('cuBLAS');
  });

  it('MIOpen convolutions on an AMD device are labelled MIOpen, not cuDNN', async () => {
    const text = formatSummary(await summarizeTrace(new XplaneSource(CONV8)));
    expect(text).toContain('MIOpen');
    expect(text).not.toContain('cuDNN');
  });

  it('a diff across GPU models warns: the planes name vendor, compute capability, cores and memory', async () => {
    const mi300x = await summarizeTrace(new XplaneSource(MI300X));
    const other = await summarizeTrace(new XplaneSource(TE_FFI));
    expect(mi300x.devices[0]!.hardware).toBe('AMD GPU, compute capability 9.4, 304 cores, 206 GB');
    const warnings = diffSummaries(mi300x, other).warnings;
    expect(warnings).toContain(
      'the traces ran on different devices (AMD GPU, compute capability 9.4, 304 cores, 206 GB → AMD GPU, compute capability 9.5, 256 cores, 309 GB); times are not comparable',
    );
    // The same device on both sides: no such warning.
    expect(diffSummaries(mi300x, mi300x).warnings.join('\n')).not.toContain('different devices');
  });

  it("an AMD device the peak table lacks is known by its plane's vendor: its GEMM is rocBLAS/hipBLASLt", async () => {
    const s = await summarizeTrace(new XplaneSource(TE_FFI));
    expect(s.roofline.peak).toBeNull();
    expect(s.devices[0]!.vendor).toBe('AMD');
    const text = formatSummary(s);
    expect(text).toContain('custom call (rocBLAS/hipBLASLt)');
    expect(text).not.toContain('cuBLAS');
  });
});

describe('trace diff warnings on real traces', () => {
  it('device counts: the 8-GPU convolution against the legacy one that ran on 1 of 8 MI300X', async () => {
    const eight = await summarizeTrace(new XplaneSource(CONV8));
    const one = await summarizeTrace(new XplaneSource(CONV_LEGACY));
    const warnings = diffSummaries(eight, one).warnings;
    expect(warnings).toContain(
      'the traces ran on different numbers of devices (8 → 1); per-step times are per device',
    );
    expect(warnings.join('\n')).not.toContain('different devices (');
    expect(diffSummaries(eight, eight).warnings.join('\n')).not.toContain('numbers of devices');
  });

  it('program sets: the MI300X GEMM and attention traces ran different programs', async () => {
    const gemm = await summarizeTrace(new XplaneSource(MI300X));
    const attention = await summarizeTrace(new XplaneSource(ATTENTION));
    expect(diffSummaries(gemm, attention).warnings).toContain(
      'the traces ran different programs (only before: jit_broadcast_in_dim, jit_dot; only after: jit__reduce_max, jit__reduce_sum, jit_add, jit_exp (+8)); ops of those programs show as added or removed',
    );
    expect(diffSummaries(gemm, gemm).warnings.join('\n')).not.toContain('different programs');
  });

  it('program fingerprints: the same TPU module compiled to another program (the real v6e trace, its id altered in the test)', async () => {
    const before = await summarizeTrace(new XplaneSource(TPU));
    const other = 'jit_f(98765432109876543210)';
    const rename = (p: string) => (p === 'jit_f(12190760917235803885)' ? other : p);
    const after: TraceSummary = {
      ...before,
      programs: before.programs.map((p) => ({ ...p, name: rename(p.name) })),
      ops: before.ops.map((o) => ({ ...o, program: rename(o.program) })),
    };
    expect(diffSummaries(before, after).warnings).toContain(
      'the same module names ran different compiled programs (program fingerprints jit_f 1219076091… → 9876543210…): ops may differ beyond the code change (shapes, flags, XLA version)',
    );
    expect(diffSummaries(before, before).warnings.join('\n')).not.toContain('compiled programs');
    // Short GPU ids number compilations within one process: no fingerprint, no warning.
    const gemm = await summarizeTrace(new XplaneSource(MI300X));
    const renumbered: TraceSummary = {
      ...gemm,
      programs: gemm.programs.map((p) => ({ ...p, name: p.name.replace(/\((\d+)\)$/, '(1$1)') })),
    };
    expect(diffSummaries(gemm, renumbered).warnings.join('\n')).not.toContain('compiled programs');
  });

  it('element types of the main ops: from the HLO (gfx950 TE trace) and from the HLO text (TPU), each altered in the test', async () => {
    const te = await summarizeTrace(new XplaneSource(TE_FFI));
    expect(te.ops.find((o) => o.name === 'gemm_fusion_dot')!.dtype).toBe('bf16');
    const f32: TraceSummary = {
      ...te,
      ops: te.ops.map((o) => (o.name === 'gemm_fusion_dot' ? { ...o, dtype: 'f32' } : o)),
    };
    expect(diffSummaries(te, f32).warnings).toContain(
      'main ops ran in different element types (gemm_fusion_dot bf16 → f32): their FLOP rates, bytes and roofline peaks differ with the type, not only with the code',
    );
    expect(diffSummaries(te, te).warnings.join('\n')).not.toContain('element types');
    // TPU ops carry no HLO cost model here: the type is the result's in the op's HLO text.
    const tpu = await summarizeTrace(new XplaneSource(TPU));
    const fusion = tpu.ops.find((o) => o.name === 'broadcast_add_fusion')!;
    expect([fusion.dtype, fusion.longName]).toEqual([
      null,
      expect.stringMatching(/ = f32\[5,1024,1024,256\]/),
    ]);
    const bf16: TraceSummary = {
      ...tpu,
      ops: tpu.ops.map((o) =>
        o === fusion ? { ...o, longName: o.longName!.replace(' = f32[', ' = bf16[') } : o,
      ),
    };
    expect(diffSummaries(tpu, bf16).warnings.join('\n')).toContain(
      'main ops ran in different element types (broadcast_add_fusion f32 → bf16)',
    );
  });
});

describe("xprof's trace-viewer JSON of real XSpaces", () => {
  it('the current format: derived lines are not counted again; steps, ops and totals match the XSpace', async () => {
    for (const [name, xplane] of [
      ['conv08', CONV8],
      ['te-ffi', TE_FFI],
    ] as const) {
      const fromXplane = await summarizeTrace(new XplaneSource(xplane));
      const json = await summarizeTrace(
        new ChromeJsonSource(join(TRACE_VIEWER, `${name}.trace_viewer.json.gz`)),
      );
      expect(json.total.deviceMs, name).toBeCloseTo(fromXplane.total.deviceMs, 3);
      expect(json.steps.count, name).toBe(fromXplane.steps.count);
      expect(json.steps.opMs, name).toBeCloseTo(fromXplane.steps.opMs, 5);
      // The JSON has no program ids: programs are module names.
      const rows = (s: TraceSummary) =>
        s.ops.map((o) => [o.program.replace(/\(\d+\)$/, ''), o.name, Math.round(o.totalMs * 1e3)]);
      expect(rows(json), name).toEqual(rows(fromXplane));
      expect(json.notes.join('\n')).toMatch(/lines xprof derives from the kernels .* are not counted again/);
    }
  });

  it('the streaming (@) format: host-prefixed device names are read; kernels are the ops', async () => {
    const fromXplane = await summarizeTrace(new XplaneSource(CONV8));
    const s = await summarizeTrace(new ChromeJsonSource(join(TRACE_VIEWER, 'conv08.trace_viewer@.json.gz')));
    expect(s.platform).toBe('gpu');
    expect(s.devices.map((d) => d.name)).toContain('tw003 /device:GPU:7');
    // Before: the derived XLA Ops / XLA Modules lines counted as op lines (30× the device time).
    expect(s.total.deviceMs).toBeCloseTo(fromXplane.total.deviceMs, 3);
    expect(s.ops[0]!.name).toBe('input_transpose_fusion.kd');
    expect(s.categories.map((c) => c.name)).not.toContain('gpu_launch');
    expect(s.notes.join('\n')).toMatch(/streaming trace-viewer JSON: its kernels carry no HLO op or program/);
  });
});

describe('trace summary on Kineto and XLA:CPU traces', () => {
  it('HTA Kineto pair: GPU kernels per ProfilerStep annotation', async () => {
    const s = await summarizeTrace(new ChromeJsonSource(join(HTA, 'control/control.json.gz')));
    expect(s.platform).toBe('gpu');
    expect(s.steps.detector).toBe('host-annotations');
    expect(s.steps.count).toBe(6);
    expect(s.categories.map((c) => c.name)).toEqual(['kernel', 'gpu_memcpy', 'gpu_memset']);
    expect(s.ops[0]!.name).toMatch(/^ncclKernel_SendRecv/);
  });

  it('JAX on CPU with step annotations: XLA:CPU ops from host threads, nested while loops by self time', async () => {
    const { source } = openTrace(CPU_STEPS);
    const s = await summarizeTrace(source);
    expect(s.platform).toBe('cpu');
    expect(s.source.format).toBe('xplane');
    expect(s.steps.detector).toBe('host-annotations');
    expect(s.steps.count).toBe(3);
    expect(s.steps.timeMs!.mean).toBeGreaterThan(s.steps.busyMs);
    const names = s.ops.map((o) => o.name);
    expect(names).toContain('ynn_fusion');
    expect(names).toContain('while');
    // The scan body runs 16 times per step inside the while loop; the while keeps only its self time.
    const whileOp = s.ops.find((o) => o.name === 'while')!;
    const body = s.ops.find((o) => o.name === 'bitcast_add_fusion')!;
    expect(body.occurrences).toBe(16);
    expect(whileOp.occurrences).toBe(1);
    expect(whileOp.timeMs).toBeLessThan(s.steps.opMs);
    expect(s.ops.reduce((t, o) => t + o.timeMs, 0)).toBeCloseTo(s.steps.opMs, 5);
    // XLA:CPU events carry no FLOPs; the XSpace's HLO (matched by program_id) supplies them,
    // and a fusion XLA gives no FLOPs to is not singled out as lacking a cost model.
    const fused = s.ops.find((o) => o.name === 'ynn_fusion')!;
    expect(fused.costSource).toBe('hlo');
    expect(fused.flops).toBeGreaterThan(0);
    expect(s.ops.every((o) => !o.noCostModel)).toBe(true);
  });

  it('JAX on CPU: the XSpace, trace.json.gz and perfetto_trace.json.gz give the same analysis', async () => {
    const run = join(CPU_STEPS, 'plugins/profile/run');
    // Only the XSpace holds the HLO, so the JSON exports have times without FLOPs and bytes.
    const a = timesOnly(await summarizeTrace(new XplaneSource(join(run, 'cpu.xplane.pb'))));
    expect(timesOnly(await summarizeTrace(new ChromeJsonSource(join(run, 'cpu.trace.json.gz'))))).toEqual(a);
    expect(
      timesOnly(await summarizeTrace(new ChromeJsonSource(join(run, 'perfetto_trace.json.gz')))),
    ).toEqual(a);
  });

  it('JAX on CPU without annotations: steps are the run_id executions of the dominant program', async () => {
    const s = await summarizeTrace(openTrace(CPU_NO_STEPS).source);
    expect(s.steps.detector).toBe('dominant-program');
    expect(s.steps.program).toBe('jit_step');
    expect(s.steps.count).toBe(3);
    expect(s.steps.idleMs).not.toBeNull();
  });
});

/** A small tsl-shaped TPU trace built event by event. */
function tpuJson(events: TslEvent[], hostSteps: TslEvent[] = []): string {
  const devices = [
    { pid: 701, name: '/host:CPU', resources: [{ tid: 1, name: 'main/1', sortIndex: 1 }] },
    {
      pid: 3,
      name: '/device:TPU:0',
      resources: [
        { tid: 2, name: 'XLA Modules', sortIndex: 2 },
        { tid: 3, name: 'XLA Ops', sortIndex: 3 },
      ],
    },
  ];
  return JSON_HEAD + metadataJson(devices) + [...hostSteps, ...events].map(eventJson).join('') + JSON_TAIL;
}

const US = 1_000_000;
function mod(start: number, dur: number, name = 'jit_step(42)'): TslEvent {
  return { pid: 3, tid: 2, tsPs: start * US, durPs: dur * US, name, args: {} };
}
function op(start: number, dur: number, name: string, args: Record<string, string> = {}): TslEvent {
  return {
    pid: 3,
    tid: 3,
    tsPs: start * US,
    durPs: dur * US,
    name,
    args: { hlo_category: 'loop fusion', ...args },
  };
}
function hostStep(start: number, dur: number, n: number): TslEvent {
  return {
    pid: 701,
    tid: 1,
    tsPs: start * US,
    durPs: dur * US,
    name: 'train',
    args: { step_num: String(n) },
  };
}

describe('trace summary on constructed traces', () => {
  async function summaryOf(text: string): Promise<TraceSummary> {
    const t = tempDir();
    try {
      const path = join(t.dir, 'trace.json');
      writeFileSync(path, text);
      return await summarizeTrace(new ChromeJsonSource(path));
    } finally {
      t.cleanup();
    }
  }

  const steps = [
    mod(0, 10),
    op(1, 4, 'fusion.1'),
    op(6, 3, 'gdn.2', { hlo_category: 'custom-call' }),
    mod(20, 10),
    op(21, 4, 'fusion.1'),
    op(26, 3, 'gdn.2', { hlo_category: 'custom-call' }),
  ];

  it('custom calls are counted per step and flagged as having no cost model', async () => {
    const s = await summaryOf(tpuJson(steps));
    expect(s.steps).toMatchObject({
      detector: 'dominant-program',
      count: 2,
      opMs: 0.007,
      busyMs: 0.007,
      idleMs: 0.003,
    });
    expect(s.customCalls).toEqual([
      {
        name: 'gdn',
        program: 'jit_step(42)',
        scope: '',
        kind: 'other',
        launches: 1,
        timeMs: 0.003,
        shareOfOps: 42.8571,
        totalMs: 0.006,
        noCostModel: true,
      },
    ]);
    expect(s.ops.find((o) => o.name === 'gdn')).toMatchObject({
      customCall: true,
      noCostModel: true,
      flops: null,
    });
  });

  it('events out of time order and modules after their ops give the same numbers (another pass)', async () => {
    const sorted = await summaryOf(tpuJson(steps));
    const shuffled = await summaryOf(
      tpuJson([steps[5]!, steps[1]!, steps[4]!, steps[2]!, steps[3]!, steps[0]!]),
    );
    expect(shuffled.source.passes).toBeGreaterThan(1);
    expect(analysis(shuffled)).toEqual(analysis(sorted));
  });

  it('host annotations that split a program across steps trigger a windowed second pass', async () => {
    // Step 0 covers only the first execution; the second runs outside any step.
    const s = await summaryOf(tpuJson(steps, [hostStep(0, 12, 0)]));
    expect(s.steps.detector).toBe('host-annotations');
    expect(s.source.passes).toBe(2);
    expect(s.steps.count).toBe(1);
    expect(s.steps.opMs).toBe(0.007);
    expect(s.outsideSteps.opMs).toBe(0.007);
    // Annotations covering both executions: exact in one pass.
    const both = await summaryOf(tpuJson(steps, [hostStep(0, 15, 0), hostStep(19, 15, 1)]));
    expect(both.source.passes).toBe(1);
    expect(both.steps).toMatchObject({ count: 2, opMs: 0.007, timeMs: { mean: 0.015 } });
  });

  it('a synthetic tsl trace: scopes, FLOP rates and Pallas launches per step', async () => {
    const t = tempDir();
    try {
      const path = join(t.dir, 'synthetic.trace.json.gz');
      const written = await writeSyntheticJson(path, 2e6, { opsPerStep: 60 });
      const s = await summarizeTrace(new ChromeJsonSource(path));
      expect(s.steps.detector).toBe('host-annotations');
      expect(s.steps.count).toBe(written.steps);
      expect(s.devices).toHaveLength(4);
      expect(s.scopes[0]!.name).toMatch(/^jit\(train_step\)\/jit\(main\)\//);
      expect(s.customCalls.length).toBeGreaterThan(0);
      for (const c of s.customCalls) expect(Number.isInteger(c.launches)).toBe(true);
      expect(s.ops.find((o) => !o.customCall)!.tflops).toBeGreaterThan(0);
    } finally {
      t.cleanup();
    }
  });
});

describe('trace summary on unusable input', () => {
  async function failure(text: string): Promise<string> {
    const t = tempDir();
    try {
      const path = join(t.dir, 'bad.json');
      writeFileSync(path, text);
      await summarizeTrace(new ChromeJsonSource(path));
    } catch (err) {
      expect(err).toBeInstanceOf(InputError);
      return (err as Error).message;
    } finally {
      t.cleanup();
    }
    throw new Error('no error');
  }

  it('an empty trace and unknown device kinds are refused, naming what was found', async () => {
    expect(await failure('{"traceEvents":[{}]}')).toMatch(/bad\.json: the trace holds no events$/);
    const foreign =
      '{"traceEvents":[{"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:FOO:0"}},' +
      '{"ph":"X","pid":1,"tid":1,"ts":0,"dur":1,"name":"k"}]}';
    expect(await failure(foreign)).toMatch(
      /no TPU, GPU or XLA:CPU op events found \(devices: \/device:FOO:0\)$/,
    );
  });
});
