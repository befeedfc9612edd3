import { describe, expect, it } from 'vitest';
import { diffSummaries } from '../../../src/evidence/analysis/diff.js';
import { formatDiff, formatMs, formatSummary, textTable } from '../../../src/evidence/analysis/format.js';
import {
  TRACE_DIFF_SCHEMA,
  TRACE_SUMMARY_SCHEMA,
  type TraceSummary,
} from '../../../src/evidence/analysis/types.js';

function summary(
  ops: [name: string, category: string, timeMs: number, occurrences: number][],
  extra: Partial<TraceSummary['steps']> = {},
): TraceSummary {
  const opMs = ops.reduce((t, o) => t + o[2], 0);
  return {
    schema: TRACE_SUMMARY_SCHEMA,
    source: { path: 'x.xplane.pb', format: 'xplane', bytes: 1, events: 1, passes: 1, capped: false },
    platform: 'tpu',
    devices: [],
    steps: {
      detector: 'dominant-program',
      detail: '',
      count: 10,
      deviceSteps: 10,
      program: 'jit_f(1)',
      timeMs: { mean: opMs + 1, median: opMs + 1, min: opMs, max: opMs + 2 },
      busyMs: opMs,
      idleMs: 1,
      opMs,
      ...extra,
    },
    ops: ops.map(([name, category, timeMs, occurrences]) => ({
      name,
      category,
      scope: '',
      programs: [],
      variants: 1,
      timeMs,
      occurrences,
      shareOfOps: (100 * timeMs) / opMs,
      shareOfStep: null,
      flops: null,
      bytes: null,
      tflops: null,
      customCall: category === 'custom-call',
      noCostModel: category === 'custom-call',
      longName: undefined,
    })),
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
      .map(([name, , timeMs, launches]) => ({
        name,
        scope: '',
        launches,
        timeMs,
        shareOfOps: 0,
        noCostModel: true as const,
      })),
    outsideSteps: { opMs: 0, ops: 0 },
    warnings: [],
    notes: [],
  };
}

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

  it('warns when the two sides are not comparable, and reports null step time when one side has none', () => {
    const gpu: TraceSummary = {
      ...summary([['k', 'kernel', 1, 1]], { timeMs: null, detector: 'whole-trace' }),
      platform: 'gpu',
    };
    gpu.source = { ...gpu.source, capped: true };
    const d = diffSummaries(before, gpu);
    expect(d.stepTimeMs).toBeNull();
    expect(d.warnings.join('\n')).toMatch(/different platforms \(tpu → gpu\)/);
    expect(d.warnings.join('\n')).toMatch(/steps were found differently \(dominant-program → whole-trace\)/);
    expect(d.warnings.join('\n')).toMatch(/after trace hit the profiler's event cap/);
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

  it('a summary lists top ops, categories and custom calls with the no-cost-model flag', () => {
    const text = formatSummary(before, 2);
    expect(text).toMatch(/Top 2 of 5 ops by time per step/);
    expect(text).toMatch(/convolution_fusion\s+convolution fusion\s+10\.000 ms/);
    expect(text).toMatch(/gdn_chunk_fwd .* custom call, no cost model/);
    expect(text).not.toMatch(/\bsteady\b/);
    expect(text).toMatch(/Custom calls \(no cost model/);
  });

  it('a diff shows totals and rows with signs', () => {
    const text = formatDiff(diffSummaries(before, after), 3);
    expect(text).toMatch(/op time 21\.000 ms → 18\.910 ms \(−10\.0%\)/);
    expect(text).toMatch(
      /gdn_chunk_fwd\s+custom-call\s+5\.000 ms\s+3\.000 ms\s+−2\.000 ms\s+−40\.0%\s+1 → 2\s+decreased/,
    );
    expect(text).toMatch(/old_op .* removed/);
  });
});
