import { configDefaults, defineConfig } from 'vitest/config';

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
    reporters: ['default', './tests/helpers/summary-reporter.ts'],
  },
});
