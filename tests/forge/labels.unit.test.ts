import { describe, expect, it } from 'vitest';
import { isManagedLabel, labelStyle, planLabels } from '../../src/forge/labels.js';

describe('planLabels', () => {
  it('adds wanted labels and removes only stale hillclimb: ones', () => {
    const plan = planLabels(
      ['hillclimb:improved', 'needs-review', 'hillclimb:loop'],
      ['hillclimb:regressed', 'hillclimb:loop'],
    );
    expect(plan.add).toEqual(['hillclimb:regressed']);
    expect(plan.remove).toEqual(['hillclimb:improved']);
    expect(plan.result).toEqual(['hillclimb:loop', 'hillclimb:regressed', 'needs-review']);
  });

  it('never removes labels without the prefix, even when not wanted', () => {
    expect(planLabels(['perf', 'wip'], []).remove).toEqual([]);
  });

  it('compares names case-insensitively, as GitHub does', () => {
    const plan = planLabels(['HillClimb:Improved'], ['hillclimb:improved', 'hillclimb:improved']);
    expect(plan).toEqual({ add: [], remove: [], result: ['HillClimb:Improved'] });
  });
});

describe('label styles', () => {
  it('colours verdicts distinctly and gives other managed labels a default', () => {
    expect(isManagedLabel('hillclimb:improved')).toBe(true);
    expect(isManagedLabel('perf')).toBe(false);
    const improved = labelStyle('hillclimb:improved');
    const regressed = labelStyle('hillclimb:regressed');
    expect(improved.color).toMatch(/^[0-9a-f]{6}$/);
    expect(improved.color).not.toBe(regressed.color);
    expect(labelStyle('hillclimb:gdn').color).toBe(labelStyle('hillclimb:other').color);
  });
});
