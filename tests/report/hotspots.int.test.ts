/**
 * The PR comment's hotspot table on a real trace pair whose steps are unreliable: the MI300X
 * elementwise trace (one small program per op; its dominant program holds 15% of the device time)
 * before, the MI300X attention trace after. The diff leads with the whole trace, and so must the comment.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { hotspotSection } from '../../src/report/hotspots.js';
import { diffSummaries } from '../../src/trace/diff.js';
import { XplaneSource } from '../../src/trace/readers/xplane.js';
import { summarizeTrace } from '../../src/trace/summarize.js';
import type { TraceDiff, TraceSummary } from '../../src/trace/types.js';
import { REAL_TRACES } from '../helpers/paths.js';

const ELEMENTWISE = join(REAL_TRACES, 'TraceLens/tests/traces/mi300/jax08_elementwise/tw003.xplane.pb');
const ATTENTION = join(REAL_TRACES, 'TraceLens/tests/traces/mi300/jax08_attention/tw003.xplane.pb');
const TE_FFI = join(
  REAL_TRACES,
  'TraceLens/tests/test_data_jax_te_fused_attn_categorization/934987a2fc2f.xplane.pb',
);

describe('hotspots in the PR comment when the diff leads with the whole trace', () => {
  let champion: TraceSummary;
  let candidate: TraceSummary;
  let diff: TraceDiff;
  beforeAll(async () => {
    champion = await summarizeTrace(new XplaneSource(ELEMENTWISE));
    candidate = await summarizeTrace(new XplaneSource(ATTENTION));
    diff = diffSummaries(champion, candidate);
  });

  it('compares the whole-trace rows and says so', () => {
    expect(diff.basis).toBe('whole-trace');
    const text = hotspotSection({ status: 'done', summary: candidate, championSummary: champion, diff }, 5)!;
    expect(text).toContain(`#### Hotspots (whole trace, top 5 of ${diff.wholeTrace!.length} ops by |Δ|)`);
    expect(text).toContain('_Whole trace, all devices:');
    expect(text).toContain(
      `Whole trace (all devices), champion → candidate: device op time ${diff.deviceMs.before.toFixed(3)} ms → ${diff.deviceMs.after.toFixed(3)} ms`,
    );
    // The rows are the whole-trace ones: the elementwise programs that ran outside its steps are there.
    const byDelta = [...diff.wholeTrace!].sort((x, y) => Math.abs(y.delta) - Math.abs(x.delta));
    for (const row of byDelta.slice(0, 5)) expect(text).toContain(`| \`${row.name}\` | \`${row.program}\` |`);
    expect(
      byDelta.slice(0, 5).some((r) => !diff.ops.some((o) => o.name === r.name && o.program === r.program)),
    ).toBe(true);
    expect(text).not.toContain('Per step, champion → candidate');
  });

  it('a profiler-inflated trace compares shares of the whole-trace device time', () => {
    const agreement = {
      agrees: false,
      champion: { ratio: 3, tracedMs: 3, measuredMs: 1 },
      candidate: { ratio: 3, tracedMs: 3, measuredMs: 1 },
    };
    const text = hotspotSection(
      { status: 'done', summary: candidate, championSummary: champion, diff, agreement } as never,
      5,
    )!;
    expect(text).toContain('shares of device op time over the whole trace');
    expect(text).toContain('_Whole trace, all devices:');
  });

  it('a diff with reliable steps keeps the per-step rows (the TE trace, all its op time in steps)', async () => {
    const te = await summarizeTrace(new XplaneSource(TE_FFI));
    const same = diffSummaries(te, te);
    expect(same.basis).toBe('per-step');
    const text = hotspotSection({ status: 'done', summary: te, championSummary: te, diff: same }, 5)!;
    expect(text).toContain('#### Hotspots (time per step,');
    expect(text).toContain('Per step, champion → candidate');
  });
});
