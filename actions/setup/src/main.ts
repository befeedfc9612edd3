/**
 * setup: `hillclimb setup` as a step. Creates .venv in the working directory and installs the
 * requirement files hillclimb.yml names; hillclimb-bench, when a requirements line names it without a
 * source, comes from this action's own download of the pinned hillclimb release.
 */
import { dirname, resolve } from 'node:path';
import { flag, optionalText, runAction, setOutputs } from '../../../src/actions/index.js';
import { loadConfig } from '../../../src/config/index.js';
import { setupPython } from '../../../src/project/index.js';

await runAction(async ({ logger }) => {
  const configFile = resolve(optionalText('config') ?? 'hillclimb.yml');
  const { paths } = loadConfig(configFile);
  const result = await logger.group('hillclimb: Python environment', () =>
    setupPython(dirname(configFile), {
      dev: flag('dev', false),
      logger,
      requirements: { runtime: paths.requirements, dev: paths.dev_requirements },
    }),
  );
  setOutputs({ python: result.python });
});
