import type { Command } from 'commander';
import { setupPython } from '../../project/index.js';
import type { CliContext } from '../context.js';

export function registerSetup(program: Command, ctx: () => CliContext, done: (code: number) => void): void {
  program
    .command('setup')
    .description('create the project venv (.venv) and install the pinned kernel requirements; idempotent')
    .option('--dev', 'also install development requirements (linters, Ray for the backend tests)')
    .action(async (opts: { dev?: boolean }) => {
      const c = ctx();
      await setupPython(c.root, { dev: Boolean(opts.dev), logger: c.logger });
      done(0);
    });
}
