import { describe, expect, it } from 'vitest';
import { formatDiff, formatMs, formatSummary, textTable } from '../../src/report/trace-tables.js';
import { diffSummaries } from '../../src/trace/diff.js';
import { TRACE_DIFF_SCHEMA, type TraceSummary } from '../../src/trace/types.js';
import { summaryOf as summary } from './summary-builder.js';

const before = summary([
  ['convolution_fusion', 'convolution fusion', 10, 2],
  ['gdn_chunk_fwd', 'custom-call', 5, 1],
  ['copy', 'data formatting', 2, 4],
  ['old_op', 'loop fusion', 1, 1],
  ['steady', 'loop fusion', 3, 1],
]);
const after = summary([
  ['convolution_fusion', 'convolution fusion', 10.01, 2],
  ['gdn_chunk_fwd', 'custom-call', 3, 2],
  ['copy', 'data formatting', 2.5, 4],
  ['new_op', 'loop fusion', 0.4, 1],
  ['steady', 'loop fusion', 3, 1],
]);

describe('diffSummaries', () => {
  it('rows per op with before/after, Δ, Δ%, counts and HTA-style status, sorted by |Δ|', () => {
    const d = diffSummaries(before, after);
    expect(d.schema).toBe(TRACE_DIFF_SCHEMA);
    expect(d.ops.map((r) => [r.name, r.status])).toEqual([
      ['gdn_chunk_fwd', 'decreased'],
      ['old_op', 'removed'],
      ['copy', 'increased'],
      ['new_op', 'added'],
      ['convolution_fusion', 'unchanged'], // 0.01 ms is below 0.5% of op time per step
      ['steady', 'unchanged'],
    ]);
    expect(d.ops[0]).toEqual({
      name: 'gdn_chunk_fwd',
      program: 'jit_f',
      category: 'custom-call',
      status: 'decreased',
      before: 5,
      after: 3,
      delta: -2,
      deltaPct: -40,
      countBefore: 1,
      countAfter: 2,
    });
    expect(d.ops.find((r) => r.name === 'new_op')).toMatchObject({
      before: 0,
      after: 0.4,
      deltaPct: null,
      countBefore: 0,
    });
    expect(d.opTimeMs).toEqual({ before: 21, after: 18.91, delta: -2.09, deltaPct: -9.9524 });
    expect(d.stepTimeMs).toMatchObject({ before: 22, after: 19.91 });
    expect(d.customCalls.map((r) => [r.name, r.countBefore, r.countAfter])).toEqual([
      ['gdn_chunk_fwd', 1, 2],
    ]);
    expect(d.categories.map((r) => r.name)).toEqual([
      'custom-call',
      'loop fusion',
      'data formatting',
      'convolution fusion',
    ]);
    expect(d.warnings).toEqual([]);
  });

  it('matches ops by program module and name: compilations of one module (different ids) are summed', () => {
    const b = summary([
      ['fusion', 'loop fusion', 2, 1, 'jit_step(11)'],
      ['fusion', 'loop fusion', 1, 1, 'jit_other(12)'],
    ]);
    const a = summary([
      ['fusion', 'loop fusion', 1.5, 1, 'jit_step(31)'],
      ['fusion', 'loop fusion', 0.5, 1, 'jit_step(32)'],
      ['fusion', 'loop fusion', 1, 1, 'jit_other(33)'],
    ]);
    const d = diffSummaries(b, a);
    expect(d.ops.map((r) => [r.program, r.name, r.before, r.after, r.status])).toEqual([
      ['jit_other', 'fusion', 1, 1, 'unchanged'],
      ['jit_step', 'fusion', 2, 2, 'unchanged'],
    ]);
    expect(d.warnings).toEqual([]);
  });

  it('says when the traces ran different programs, device counts or device kinds', () => {
    const b = summary([['fusion', 'loop fusion', 2, 1, 'jit_step(1)']]);
    const a = summary([
      ['fusion', 'loop fusion', 2, 1, 'jit_step(1)'],
      ['k', 'custom-call', 1, 1, 'jit_new(2)'],
    ]);
    a.devices = [
      { ...a.devices[0]!, type: 'TPU v6 Lite' },
      { ...a.devices[0]!, name: '/device:TPU:1', type: 'TPU v6 Lite' },
    ];
    a.steps = { ...a.steps, program: 'jit_new(2)' };
    const text = diffSummaries(b, a).warnings.join('\n');
    expect(text).toMatch(/different programs \(only after: jit_new\)/);
    expect(text).toMatch(/different numbers of devices \(1 → 2\)/);
    expect(text).toMatch(/different devices \(TPU v5 lite → TPU v6 Lite\)/);
    expect(text).toMatch(/steps are executions of different programs \(jit_f → jit_new\)/);
  });

  it('warns when the two sides are not comparable, and reports null step time when one side has none', () => {
    const gpu: TraceSummary = {
      ...summary([['k', 'kernel', 1, 1]], { timeMs: null, detector: 'whole-trace', confidence: 'low' }),
      platform: 'gpu',
    };
    gpu.source = { ...gpu.source, capped: true };
    const d = diffSummaries(before, gpu);
    expect(d.stepTimeMs).toBeNull();
    expect(d.warnings.join('\n')).toMatch(/different platforms \(tpu → gpu\)/);
    expect(d.warnings.join('\n')).toMatch(/steps were found differently \(dominant-program → whole-trace\)/);
    expect(d.warnings.join('\n')).toMatch(/after trace hit the profiler's event cap/);
    expect(d.warnings.join('\n')).toMatch(
      /after trace's steps were found with low confidence \(whole-trace\)/,
    );
  });
});

describe('human tables', () => {
  it('formats durations with a readable unit', () => {
    expect(formatMs(784.14497)).toBe('784.145 ms');
    expect(formatMs(0.0082)).toBe('8.200 µs');
    expect(formatMs(0.00035)).toBe('350 ns');
    expect(formatMs(0)).toBe('0.000 ms');
  });

  it('aligns columns', () => {
    expect(
      textTable(
        ['a', 'num'],
        [
          ['xx', '1'],
          ['y', '123'],
        ],
        [false, true],
      ),
    ).toBe('a   num\n--  ---\nxx    1\ny   123');
  });

  it('a summary lists top ops with their program, categories and custom calls with the no-cost-model flag', () => {
    const text = formatSummary(before, 2);
    expect(text).toMatch(/Top 2 of 5 ops by device time/);
    expect(text).toMatch(
      /convolution_fusion\s+jit_f\(1\)\s+convolution fusion\s+100\.000 ms\s+47\.6%\s+10\.000 ms/,
    );
    expect(text).toMatch(/gdn_chunk_fwd .* custom call \(Pallas\/Mosaic\), no cost model/);
    expect(text).not.toMatch(/\bsteady\b/);
    expect(text).toMatch(/Custom calls\n.*cost model/);
    // Executions of the dominant program are inferred steps, not markers: the whole trace leads.
    expect(text).toMatch(
      /Whole trace: .*\nSteps: none marked in the trace; inferred 10 per device by dominant-program \(high confidence, 100% of device op time in them\)/,
    );
  });

  it('a diff shows totals and rows with signs', () => {
    const text = formatDiff(diffSummaries(before, after), 3);
    expect(text).toMatch(/op time 21\.000 ms → 18\.910 ms \(−10\.0%\)/);
    expect(text).toMatch(
      /gdn_chunk_fwd\s+jit_f\s+custom-call\s+5\.000 ms\s+3\.000 ms\s+−2\.000 ms\s+−40\.0%\s+1 → 2\s+decreased/,
    );
    expect(text).toMatch(/Whole trace: device op time 210\.000 ms → 189\.100 ms/);
    expect(text).toMatch(/old_op .* removed/);
  });
});
