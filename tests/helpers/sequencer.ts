// The order vitest starts test files in. Two workers share the machine's cores (vitest.config.ts); a
// file that takes minutes must start first, so the other worker runs the rest of the suite beside it
// instead of the suite ending on it alone. vitest's own order (the last run's durations, else file size)
// is kept for everything else: a clean clone has no durations, and the demo's file is small.
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The files that take minutes on a 2-core machine, longest first (paths from the repository root). */
export const LONG_FILES = ['tests/loop/demo.int.test.ts'];

/** `files` with LONG_FILES first, in that order; the others keep their relative order. */
export function longFirst<T>(files: readonly T[], path: (f: T) => string): T[] {
  const rank = (f: T) => {
    const i = LONG_FILES.indexOf(path(f));
    return i < 0 ? LONG_FILES.length : i;
  };
  // Array.prototype.sort is stable: equal ranks keep the base order.
  return [...files].sort((a, b) => rank(a) - rank(b));
}

export default class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    return longFirst(sorted, (f) => relative(f.project.config.root, f.moduleId).replaceAll('\\', '/'));
  }
}
