import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withPartialCost } from '../../src/report/trace-tables.js';
import { TraceCollector } from '../../src/trace/collect.js';
import { opCosts } from '../../src/trace/op-costs.js';
import { XplaneSource } from '../../src/trace/readers/xplane.js';
import { type Counted, opRows } from '../../src/trace/rows.js';
import { FIXTURES } from '../helpers/paths.js';

const PMAP4 = join(FIXTURES, 'jax-cpu-pmap/pmap4/plugins/profile/run/cpu.xplane.pb');

/** Every XLA:CPU op of the real pmap trace, counted over the whole trace, with its HLO cost. */
async function countedOps(): Promise<Counted[]> {
  const source = new XplaneSource(PMAP4);
  const c = new TraceCollector({ structure: false, ops: 'program' });
  await source.read(c);
  c.finish();
  const costs = await opCosts(source, c, 'host');
  const counted: Counted[] = [];
  for (const ops of c.opsByProgram.values())
    for (const op of ops.values())
      if (op.where === 'host')
        counted.push({
          op,
          count: op.countIn,
          selfPs: op.selfInPs,
          totalCount: op.countIn,
          totalPs: op.selfInPs,
          cost: costs.byOp.get(op),
        });
  return counted;
}

describe('op rows that merge variants', () => {
  it('one variant without an HLO match keeps the cost of the others and says how many lack it', async () => {
    const counted = await countedOps();
    const ctx = { steps: 3, opPsPerStepTotal: 1, devicePs: 1, meanStepPs: undefined, peak: undefined };
    const row = (all: Counted[]) => opRows(all, ctx).find((r) => r.name === 'wrapped_reduce-window')!;
    const whole = row(counted);
    expect(whole.variants).toBe(2);
    expect(whole.variantsWithoutFlops).toBe(0);

    // `wrapped_reduce-window.1` as if the HLO had no instruction of that name.
    const unmatched = counted.map((c) =>
      c.op.name === 'wrapped_reduce-window.1' ? { ...c, cost: undefined } : c,
    );
    const partial = row(unmatched);
    expect(partial.noCostModel).toBe(false);
    expect(partial.variantsWithoutFlops).toBe(1);
    // Only `wrapped_reduce-window` is costed: 3 adds per element of its [61, 64] output.
    expect(partial.flopsPerExecution).toBe(3 * 61 * 64);
    const first = counted.find((c) => c.op.name === 'wrapped_reduce-window')!;
    expect(partial.flops).toBe((3 * 61 * 64 * first.count) / 3);
    expect(partial.tflops).not.toBeNull();
    expect(partial.intensity).not.toBeNull();
    expect(withPartialCost('', partial)).toBe('no FLOPs for 1 of 2 variants');
    expect(withPartialCost('', whole)).toBe('');
  });
});
