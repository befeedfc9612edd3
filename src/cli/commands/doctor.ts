import type { Command } from 'commander';
import { defaultChecks, formatChecks, runChecks } from '../../doctor/index.js';
import type { CliContext } from '../context.js';

export function registerDoctor(program: Command, ctx: () => CliContext, done: (code: number) => void): void {
  program
    .command('doctor')
    .description(
      'check node, git, the Python venv with JAX, hillclimb.yml and the tools it names; say what is missing',
    )
    .option('--json', 'print the results as JSON')
    .action(async (opts: { json?: boolean }) => {
      const c = ctx();
      const results = await runChecks(defaultChecks(c.root));
      c.stdout(opts.json ? JSON.stringify(results, null, 2) : formatChecks(results));
      done(results.some((r) => r.required && !r.ok) ? 1 : 0);
    });
}
