// The history row of an iteration (src/loop/state/history.ts): what `hillclimb history --json` prints.
import { describe, expect, it } from 'vitest';
import { summarizeLevels } from '../../../src/evidence/levels.js';
import { historyRow } from '../../../src/loop/state/history.js';
import { IMPROVED, measured, withLevels } from '../../report/builders.js';

describe('historyRow', () => {
  it('carries no levels for a target that measured none (an RMSNorm: no fwd_bwd, no train step)', () => {
    const ev = measured(IMPROVED);
    const m = ev.measurement!;
    m.metric = { ...m.metric, path: 'measurements.rmsnorm.median_ms', label: 'run time' };
    // What the measure step summarizes from runs whose metrics hold neither level.
    m.levels = summarizeLevels(
      m.runs,
      { verdict: { path: m.metric.path, comparison: m.comparison } },
      {
        confidence: 0.95,
        resamples: 200,
        seed: 1,
      },
    );
    const row = historyRow(ev, ev.base.commit);
    expect(row).not.toHaveProperty('levels');
    expect(row.a).toBe(m.comparison!.a.median);
  });

  it('keeps the levels a GDN target measured', () => {
    const ev = withLevels(measured(IMPROVED));
    const row = historyRow(ev, ev.base.commit);
    expect(row.levels?.kernelMs.b).toBe(ev.measurement!.levels!.kernel.time.b);
    expect(row.levels?.modelMfu.a).not.toBeNull();
  });
});
