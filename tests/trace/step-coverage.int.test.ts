// Issue 23: steps where xprof finds none. The MI300X XSpaces carry no step marker (xprof 2.24.2:
// "No step marker observed"); hillclimb infers steps, and these tests hold it to what it can know.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatDiff, formatSummary } from '../../src/report/trace-tables.js';
import { diffSummaries } from '../../src/trace/diff.js';
import type { TraceSource, TraceVisitor } from '../../src/trace/readers/model.js';
import { XplaneSource } from '../../src/trace/readers/xplane.js';
import { coverageConfidence } from '../../src/trace/steps.js';
import { derivedLanesNote, summarizeTrace } from '../../src/trace/summarize.js';
import type { TraceSummary } from '../../src/trace/types.js';
import { REAL_TRACES } from '../helpers/paths.js';

const MI300X = join(REAL_TRACES, 'TraceLens/tests/traces/mi300');
/** Twelve one-op programs run 5 times each: the dominant one holds 15% of the device time. */
const ELEMENTWISE = join(MI300X, 'jax08_elementwise/tw003.xplane.pb');
/** One 3-D convolution program run 5 times on each of 8 GPUs: 98% of the device time. */
const CONV8 = join(MI300X, 'jax_conv_minimal_08/tw003.xplane.pb');
const TE_FFI = join(
  REAL_TRACES,
  'TraceLens/tests/test_data_jax_te_fused_attn_categorization/934987a2fc2f.xplane.pb',
);

const summaries = new Map<string, Promise<TraceSummary>>();
function summaryOf(path: string): Promise<TraceSummary> {
  let s = summaries.get(path);
  if (s === undefined) {
    s = summarizeTrace(new XplaneSource(path));
    summaries.set(path, s);
  }
  return s;
}

describe('step confidence follows the share of device time inside the steps', () => {
  it('thresholds: 80% keeps the detector confidence, 50–80% is at most medium, under 50% is low', () => {
    expect(coverageConfidence('high', 0.8)).toBe('high');
    expect(coverageConfidence('high', 0.79)).toBe('medium');
    expect(coverageConfidence('medium', 0.6)).toBe('medium');
    expect(coverageConfidence('high', 0.49)).toBe('low');
    expect(coverageConfidence('low', 1)).toBe('low');
  });

  it('host launches of one of twelve programs (15% of device time) are not high confidence', async () => {
    const s = await summaryOf(ELEMENTWISE);
    expect(s.steps.detector).toBe('host-launches');
    expect(s.total.inStepsMs / s.total.deviceMs).toBeLessThan(0.2);
    expect(s.steps.confidence).toBe('low');
    expect(s.steps.estimates[0]).toMatchObject({ detector: 'host-launches', confidence: 'low' });
  });

  it('host launches of the one program that holds 98% of device time stay high confidence', async () => {
    const s = await summaryOf(CONV8);
    expect(s.steps).toMatchObject({ detector: 'host-launches', confidence: 'high' });
  });

  it('without step markers the summary says so first and leads with the whole trace', async () => {
    const s = await summaryOf(ELEMENTWISE);
    expect(s.notes[0]).toMatch(
      /^no step markers in the trace \(xprof reports no step time for it\): steps are inferred by host-launches and hold 15% of device op time \(low confidence\)/,
    );
    const lines = formatSummary(s).split('\n');
    const whole = lines.findIndex((l) => l.startsWith('Whole trace:'));
    const steps = lines.findIndex((l) => l.startsWith('Steps:'));
    expect(whole).toBeGreaterThan(0);
    expect(whole).toBeLessThan(steps);
    expect(lines[steps]).toMatch(
      /^Steps: none marked in the trace; inferred 5 per device by host-launches \(low confidence, 15% of device op time in them\)/,
    );
  });
});

describe('the outside-steps count matches the op table', () => {
  it('counts op rows (program and op), as the table shows them', async () => {
    const s = await summaryOf(ELEMENTWISE);
    // Rows with time outside steps: the whole-trace count exceeds the one inside steps.
    const withOutside = s.ops.filter((o) => o.totalCount > Math.round(o.occurrences * s.steps.deviceSteps));
    expect(withOutside.length).toBe(12);
    expect(s.outsideSteps.ops).toBe(withOutside.length);
    expect(formatSummary(s)).toMatch(
      /Outside steps: 3\.297 ms of op time, in 12 of the 13 op rows \(12 of them only outside steps: "outside" in time\/step\)/,
    );
  });
});

describe('trace diff keeps the ops outside steps', () => {
  it('steps holding 15% of the device time: every op is compared over the whole trace, and that leads', async () => {
    const s = await summaryOf(ELEMENTWISE);
    const d = diffSummaries(s, s);
    expect(d.basis).toBe('whole-trace');
    // All 13 op rows, not only the one inside steps (jit_add's two compilations are one module).
    expect(d.ops).toHaveLength(1);
    expect(d.wholeTrace).toHaveLength(12);
    expect(d.wholeTrace!.find((r) => r.program === 'jit_sin')).toMatchObject({
      name: 'loop_convert_fusion',
      before: 0.489521,
      countBefore: 5,
      status: 'unchanged',
    });
    expect(d.warnings.join('\n')).toMatch(
      /the before trace's steps are unreliable \(host-launches, low confidence: 15% of device op time in steps\)/,
    );
    const text = formatDiff(d, 20);
    expect(text.indexOf('Ops over the whole trace (all devices): top 12 of 12')).toBeGreaterThan(0);
    expect(text.indexOf('Ops over the whole trace')).toBeLessThan(text.indexOf('Ops in steps'));
  });

  it('reliable steps: ops that ran only outside them get a whole-trace table of their own', async () => {
    const s = await summaryOf(CONV8);
    const d = diffSummaries(s, s);
    expect(d.basis).toBe('per-step');
    expect(d.outsideMs).toMatchObject({ before: 0.586401, after: 0.586401 });
    const outsideOnly = s.ops.filter((o) => o.timeMs === 0 && o.occurrences === 0).map((o) => o.name);
    expect(outsideOnly.length).toBeGreaterThan(0);
    for (const name of outsideOnly) expect(d.wholeTrace!.map((r) => r.name)).toContain(name);
    expect(formatDiff(d)).toMatch(/Ops only outside steps \(whole trace, all devices\): top \d+ of \d+/);
  });
});

/**
 * A real XSpace that also carries a GPU line xprof derives from the kernels (an `XLA Modules` line, as
 * xprof adds when it processes the XSpace): the line is offered next to the stream lines.
 */
function withDerivedLine(path: string): TraceSource {
  const inner = new XplaneSource(path);
  return {
    path: inner.path,
    format: inner.format,
    cheapLaneSkip: inner.cheapLaneSkip,
    read(visitor: TraceVisitor, opts) {
      let offered = false;
      return inner.read(
        {
          wantLane(lane) {
            if (!offered && lane.device.kind === 'gpu') {
              offered = true;
              visitor.wantLane({ index: 1e6, device: lane.device, name: 'XLA Modules', rawId: 'derived' });
            }
            return visitor.wantLane(lane);
          },
          onEvent: (lane, ev) => visitor.onEvent(lane, ev),
        },
        opts,
      );
    },
  };
}

describe('the note on derived GPU lines names the format that was read', () => {
  it('an XSpace is never called trace-viewer JSON, streaming or not', async () => {
    const s = await summarizeTrace(withDerivedLine(TE_FFI));
    const notes = s.notes.join('\n');
    expect(notes).not.toMatch(/trace-viewer JSON/);
    expect(notes).toMatch(/XSpace: the lines derived from the kernels .* are not counted again/);
    expect(derivedLanesNote('xplane', false)).not.toMatch(/streaming|trace-viewer/);
    expect(derivedLanesNote('chrome-json', false)).toMatch(/streaming trace-viewer JSON/);
  });
});
