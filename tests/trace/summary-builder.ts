/** Trace summaries built by hand, for tests of the diff, the tables and the reports. */
import { type OpRow, TRACE_SUMMARY_SCHEMA, type TraceSummary } from '../../src/trace/types.js';

/** [name, category, time per step (ms), occurrences per step], optionally the program. */
export type OpSpec = [name: string, category: string, timeMs: number, occurrences: number, program?: string];

/** An op row as the analysis writes it, for ops that run only inside steps of `steps` steps. */
export function opRow(spec: OpSpec, opMs: number, steps = 10): OpRow {
  const [name, category, timeMs, occurrences, program = 'jit_f(1)'] = spec;
  const custom = category === 'custom-call';
  return {
    name,
    program,
    category,
    scope: '',
    programs: [program],
    variants: 1,
    timeMs,
    occurrences,
    shareOfOps: opMs === 0 ? 0 : (100 * timeMs) / opMs,
    shareOfStep: null,
    totalMs: timeMs * steps,
    totalCount: occurrences * steps,
    executions: occurrences * steps,
    flopsPerExecution: null,
    bytesPerExecution: null,
    shareOfDevice: opMs === 0 ? 0 : (100 * timeMs) / opMs,
    flops: null,
    bytes: null,
    tflops: null,
    gbps: null,
    intensity: null,
    roofline: null,
    costSource: null,
    dtype: null,
    customCall: custom,
    customCallKind: custom ? 'pallas' : null,
    noCostModel: custom,
    longName: undefined,
  };
}

/** A TPU summary of `ops`, every op inside steps of one program. */
export function summaryOf(ops: OpSpec[], steps: Partial<TraceSummary['steps']> = {}): TraceSummary {
  const opMs = ops.reduce((t, o) => t + o[2], 0);
  const count = steps.count ?? 10;
  const programs = [...new Set(ops.map((o) => o[4] ?? 'jit_f(1)'))];
  return {
    schema: TRACE_SUMMARY_SCHEMA,
    source: { path: 'x.xplane.pb', format: 'xplane', bytes: 1, events: 1, passes: 1, capped: false },
    platform: 'tpu',
    devices: [
      {
        name: '/device:TPU:0',
        kind: 'tpu',
        type: 'TPU v5 lite',
        peakTflops: 197,
        compute: true,
        opMs: opMs * count,
        busyMs: opMs * count,
      },
    ],
    steps: {
      detector: 'dominant-program',
      confidence: 'high',
      detail: '',
      estimates: [{ detector: 'dominant-program', perDevice: count, confidence: 'high', detail: '' }],
      count,
      deviceSteps: count,
      program: 'jit_f(1)',
      timeMs: { mean: opMs + 1, median: opMs + 1, min: opMs, max: opMs + 2 },
      annotations: [],
      busyMs: opMs,
      idleMs: 1,
      opMs,
      ...steps,
    },
    total: { deviceMs: opMs * count, inStepsMs: opMs * count, outsideMs: 0 },
    programs: programs.map((p) => ({
      name: p,
      module: p.replace(/\(\d+\)$/, ''),
      deviceMs: opMs * count,
      inStepsMs: opMs * count,
      shareOfDevice: 100 / programs.length,
      executions: count,
      devices: 1,
      ops: ops.filter((o) => (o[4] ?? 'jit_f(1)') === p).length,
    })),
    ops: ops.map((o) => opRow(o, opMs, count)),
    roofline: { peak: null, source: 'none' },
    categories: [...new Set(ops.map((o) => o[1]))].map((c) => {
      const mine = ops.filter((o) => o[1] === c);
      return {
        name: c,
        timeMs: mine.reduce((t, o) => t + o[2], 0),
        occurrences: mine.reduce((t, o) => t + o[3], 0),
        shareOfOps: 0,
        ops: mine.length,
      };
    }),
    scopes: [],
    customCalls: ops
      .filter((o) => o[1] === 'custom-call')
      .map(([name, , timeMs, launches, program = 'jit_f(1)']) => ({
        name,
        program,
        scope: '',
        kind: 'pallas' as const,
        launches,
        timeMs,
        shareOfOps: 0,
        totalMs: timeMs * count,
        noCostModel: true,
      })),
    outsideSteps: { opMs: 0, ops: 0 },
    warnings: [],
    notes: [],
  };
}
