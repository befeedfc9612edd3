// The suite's file order (tests/helpers/sequencer.ts): the files that take minutes start first, so on
// two workers the rest of the suite runs beside them.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import config from '../../vitest.config.js';
import { REPO_ROOT } from '../helpers/paths.js';
import LongFirstSequencer, { LONG_FILES, longFirst } from '../helpers/sequencer.js';

describe('the test sequencer', () => {
  it('names test files that exist (a renamed demo test would quietly start last again)', () => {
    expect(LONG_FILES.length).toBeGreaterThan(0);
    for (const f of LONG_FILES) {
      expect(f).toMatch(/\.test\.ts$/);
      expect(existsSync(join(REPO_ROOT, f)), f).toBe(true);
    }
  });

  it('puts the long files first, in their order, and keeps the order of the rest', () => {
    const files = ['a.test.ts', 'tests/loop/demo.int.test.ts', 'b.test.ts', 'c.test.ts'];
    expect(longFirst(files, (f) => f)).toEqual([
      'tests/loop/demo.int.test.ts',
      'a.test.ts',
      'b.test.ts',
      'c.test.ts',
    ]);
    expect(longFirst(['b', 'a'], (f) => f)).toEqual(['b', 'a']);
  });

  it('is the suite’s sequencer, with at least two files at once', () => {
    const test = config.test!;
    expect(test.sequence?.sequencer).toBe(LongFirstSequencer);
    expect(test.maxWorkers).toBeGreaterThanOrEqual(2);
  });
});
