import { describe, expect, it } from 'vitest';
import { toolsBudget } from '../../../src/loop/steps/prepare.js';

describe('the tools budget', () => {
  const cfg = { enabled: true, max_calls: 24, max_seconds: 1800, screen_rounds: 3 };

  it('is the whole iteration budget for one candidate', () => {
    expect(toolsBudget(cfg, undefined)).toEqual({ calls: 24, seconds: 1800 });
  });

  it("is split equally among a search's candidates, never more than the iteration's in all", () => {
    expect(toolsBudget(cfg, { index: 2, of: 3 })).toEqual({ calls: 8, seconds: 600 });
    const odd = toolsBudget({ ...cfg, max_calls: 10, max_seconds: 100 }, { index: 1, of: 4 });
    expect(odd).toEqual({ calls: 2, seconds: 25 });
    expect(odd.calls * 4).toBeLessThanOrEqual(10);
  });
});
