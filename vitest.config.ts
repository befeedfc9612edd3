import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';
import LongFirstSequencer from './tests/helpers/sequencer.js';

export default defineConfig({
  test: {
    environment: 'node',
    include: ['tests/**/*.test.ts'],
    // The workflows under nektos/act run apart: npm run test:workflows (vitest.workflows.config.ts).
    exclude: [...configDefaults.exclude, 'tests/workflows/act/**'],
    globalSetup: ['tests/global-setup.ts'],
    clearMocks: true,
    // Integration tests spawn real processes (git, python, ray); give them room on 2 cores.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Most of the suite's time is spent waiting on the processes it starts (git, python, the CLI), so
    // files run one per core and at least two at once; vitest's default (cores - 1) ran a 2-core
    // machine's suite one file at a time. The demo's file takes minutes: it starts first (sequencer.ts).
    maxWorkers: Math.max(2, availableParallelism()),
    sequence: { sequencer: LongFirstSequencer },
    reporters: ['default', './tests/helpers/summary-reporter.ts'],
  },
});
