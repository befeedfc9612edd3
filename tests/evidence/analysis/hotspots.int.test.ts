import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { writeSyntheticJson } from '../../../bench/traces/synthetic.js';
import {
  eventJson,
  JSON_HEAD,
  JSON_TAIL,
  metadataJson,
  type TslEvent,
  tslToJson,
  xspaceToTsl,
} from '../../../bench/traces/tsl-json.js';
import { summarizeTrace } from '../../../src/evidence/analysis/hotspots.js';
import type { TraceSummary } from '../../../src/evidence/analysis/types.js';
import { ChromeJsonSource } from '../../../src/evidence/trace/chrome-json.js';
import { openTrace } from '../../../src/evidence/trace/open.js';
import { XplaneSource } from '../../../src/evidence/trace/xplane.js';
import { InputError } from '../../../src/util/errors.js';
import { FIXTURES, REAL_TRACES, tempDir } from '../../helpers/paths.js';
import { decodeWithProtobufjs } from '../trace/xplane-proto.js';

const TPU = join(REAL_TRACES, 'xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb');
const MI300X = join(REAL_TRACES, 'TraceLens/tests/traces/mi300/jax08_gemm/tw003.xplane.pb');
const HTA = join(REAL_TRACES, 'HolisticTraceAnalysis/tests/data/trace_diff');
const CPU_STEPS = join(FIXTURES, 'jax-cpu/steps');
const CPU_NO_STEPS = join(FIXTURES, 'jax-cpu/no-steps');

/** The parts of a summary that do not depend on the file format or how many passes it took. */
function analysis(s: TraceSummary): unknown {
  const { source: _source, notes, devices, ...rest } = s;
  return {
    ...rest,
    // Whole-trace device sums (about 1e14 ps) may differ in the last bit with summation order.
    devices: devices.map(({ type: _t, peakTflops: _p, ...d }) => ({
      ...d,
      opMs: Math.round(d.opMs * 1e3),
      busyMs: Math.round(d.busyMs * 1e3),
    })),
    notes: notes.filter((n) => !n.startsWith('read ')),
  };
}

describe('trace summary on the real TPU v6e fixture', () => {
  it('finds 4 TPU devices and 100 executions of the dominant program on each', async () => {
    const s = await summarizeTrace(new XplaneSource(TPU));
    expect(s.platform).toBe('tpu');
    expect(s.devices.map((d) => [d.name, d.type, d.peakTflops])).toEqual([
      ['/device:TPU:0', 'TPU v6 Lite', 918],
      ['/device:TPU:1', 'TPU v6 Lite', 918],
      ['/device:TPU:2', 'TPU v6 Lite', 918],
      ['/device:TPU:3', 'TPU v6 Lite', 918],
    ]);
    expect(s.steps.detector).toBe('dominant-program');
    expect(s.steps.program).toBe('jit_f(12190760917235803885)');
    expect(s.steps.count).toBe(100);
    expect(s.steps.deviceSteps).toBe(400);
    expect(s.ops.map((o) => o.name)).toEqual(['copy-done', 'broadcast_add_fusion', 'copy-start']);
    expect(s.customCalls).toEqual([]);
    expect(s.ops.reduce((t, o) => t + o.shareOfOps, 0)).toBeCloseTo(100, 2);
  });

  it('per-step op times equal sums computed independently from a protobufjs decode', async () => {
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
    for (const op of s.ops) expect(op.timeMs).toBeCloseTo(totals.get(op.name)! / steps.length / 1e9, 5);
    const meanModule = steps.reduce((t, m) => t + m.durPs, 0) / steps.length / 1e9;
    expect(s.steps.timeMs!.mean).toBeCloseTo(meanModule, 5);
    // FLOPs come from the cost model in the XSpace: 3 fusions × 1342177280 per step.
    const fusion = s.ops.find((o) => o.name === 'broadcast_add_fusion')!;
    expect(fusion.flops).toBe(3 * 1342177280);
    expect(fusion.category).toBe('loop fusion');
    expect(fusion.variants).toBe(3);
    expect(fusion.tflops).toBeCloseTo(fusion.flops! / (fusion.timeMs / 1e3) / 1e12, 2);
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
      // tsl drops flops and bytes_accessed from the JSON; the rest must match exactly.
      const strip = (s: TraceSummary) => ({
        ...(analysis(s) as object),
        ops: s.ops.map(({ flops: _f, bytes: _b, tflops: _t, noCostModel: _n, ...o }) => o),
      });
      expect(strip(fromJson)).toEqual(strip(fromXplane));
    } finally {
      t.cleanup();
    }
  });
});

describe('trace summary on GPU and CPU traces', () => {
  it('MI300X XSpace: kernels grouped by HLO op, programs by module and program id, executions estimated', async () => {
    const s = await summarizeTrace(new XplaneSource(MI300X));
    expect(s.platform).toBe('gpu');
    expect(s.devices.map((d) => d.name)).toEqual(['/device:GPU:0']);
    expect(s.steps.detector).toBe('dominant-program');
    // jit_dot was compiled for several shapes; the heaviest compilation ran its rocBLAS GEMM 3 times.
    expect(s.steps.program).toBe('jit_dot(49)');
    expect(s.steps.count).toBe(3);
    expect(s.steps.timeMs).toBeNull();
    expect(s.ops.map((o) => [o.name, o.occurrences, o.customCall])).toEqual([['custom-call', 1, true]]);
    expect(s.customCalls.map((c) => c.name)).toEqual(['custom-call']);
    expect(s.outsideSteps.ops).toBeGreaterThan(1); // the other compilations and programs
  });

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
    // XLA:CPU traces carry no FLOPs at all, so no op is singled out as lacking a cost model.
    expect(s.ops.every((o) => o.flops === null && !o.noCostModel)).toBe(true);
  });

  it('JAX on CPU: the XSpace, trace.json.gz and perfetto_trace.json.gz give the same analysis', async () => {
    const run = join(CPU_STEPS, 'plugins/profile/run');
    const a = analysis(await summarizeTrace(new XplaneSource(join(run, 'cpu.xplane.pb'))));
    expect(analysis(await summarizeTrace(new ChromeJsonSource(join(run, 'cpu.trace.json.gz'))))).toEqual(a);
    expect(analysis(await summarizeTrace(new ChromeJsonSource(join(run, 'perfetto_trace.json.gz'))))).toEqual(
      a,
    );
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
      { name: 'gdn', scope: '', launches: 1, timeMs: 0.003, shareOfOps: 42.8571, noCostModel: true },
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
