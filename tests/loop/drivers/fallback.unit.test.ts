// When a search's winner ends, which verdicts let the next survivor of the screen be measured in full
// (src/loop/drivers/search.ts fallsThrough): only an end before the sequential rule's first look.
import { describe, expect, it } from 'vitest';
import { fallsThrough } from '../../../src/loop/drivers/search.js';
import { IMPROVED, invalidByGuard, measured } from '../../report/builders.js';

describe('fallsThrough', () => {
  it('an invalid, error or no-op winner with no look yet: the next survivor is measured', () => {
    for (const verdict of ['invalid', 'error', 'no-op'] as const) {
      expect(fallsThrough({ ...invalidByGuard(), verdict }), verdict).toBe(true);
    }
    // A measurement that ended before its first look (programs refused in session 1).
    const noLook = measured(IMPROVED);
    noLook.measurement = { ...noLook.measurement!, looks: [] };
    delete noLook.measurement.comparison;
    expect(fallsThrough({ ...noLook, verdict: 'invalid' })).toBe(true);
  });

  it('an answer ends the search: a look was taken, or the verdict is about the effect', () => {
    const looked = measured(IMPROVED);
    expect(looked.measurement!.looks.length).toBeGreaterThan(0);
    // A later session failed, or the profile failed after the comparison: still an answer.
    for (const verdict of ['invalid', 'error', 'no-op'] as const) {
      expect(fallsThrough({ ...looked, verdict }), verdict).toBe(false);
    }
    for (const verdict of ['improved', 'no-change', 'regressed', 'needs-human'] as const) {
      expect(fallsThrough({ ...invalidByGuard(), verdict }), verdict).toBe(false);
    }
  });
});
