// `npm run test:workflows`: the real workflow files run by nektos/act (tests/workflows/act/). Apart from
// `npm test` because they take minutes (each act run sets up every job's Python environment and runs
// the toy target's real gates and measurements); .ci/run runs both.
import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    environment: 'node',
    include: ['tests/workflows/act/**/*.act.test.ts'],
    globalSetup: ['tests/workflows/act/global-setup.ts'],
    testTimeout: 60_000,
    // beforeAll runs the workflows (several act runs per file).
    hookTimeout: 1_200_000,
    pool: 'forks',
    // The files run side by side (vitest's default, cores - 1, ran them one at a time on 2 cores).
    maxWorkers: Math.max(2, availableParallelism()),
    reporters: ['default', './tests/helpers/summary-reporter.ts'],
  },
});
