import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../../config/index.js';
import {
  CONFIG_FILE,
  DEFAULT_REQUIREMENTS,
  type RequirementPaths,
  setupPython,
} from '../../project/index.js';
import type { CliContext } from '../context.js';

export function registerSetup(program: Command, ctx: () => CliContext, done: (code: number) => void): void {
  program
    .command('setup')
    .description(
      'create the project venv (.venv) and install paths.requirements of hillclimb.yml ' +
        `(default ${DEFAULT_REQUIREMENTS.runtime}); idempotent`,
    )
    .option('--dev', 'also install paths.dev_requirements (linters, Ray for the backend tests)')
    .action(async (opts: { dev?: boolean }) => {
      const c = ctx();
      await setupPython(c.root, {
        dev: Boolean(opts.dev),
        logger: c.logger,
        requirements: requirementPaths(c.root),
      });
      done(0);
    });
}

/** The requirement files hillclimb.yml names; the defaults where there is no hillclimb.yml yet. */
export function requirementPaths(root: string): RequirementPaths {
  const file = join(root, CONFIG_FILE);
  if (!existsSync(file)) return DEFAULT_REQUIREMENTS;
  const { paths } = loadConfig(file);
  return { runtime: paths.requirements, dev: paths.dev_requirements };
}
