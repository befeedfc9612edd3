/**
 * `hillclimb check`: the target module checked once, before any loop — HEAD's programs asked for,
 * exported and verified on this machine's CPU (loop's checkTarget); one line per check, then what to
 * change for the first that failed.
 */
import type { Command } from 'commander';
import { checkTarget, resolveConfigFile, type TargetCheck } from '../../loop/index.js';
import type { CliContext } from '../context.js';
import { withInterrupts } from './loop.js';

const MARKS: Record<TargetCheck['status'], string> = { passed: '✓', failed: '✗', 'not-run': '-' };

/** One line per check, then the first failure's hint. */
export function formatTargetChecks(checks: readonly TargetCheck[]): string {
  const width = Math.max(...checks.map((c) => c.name.length));
  const lines = checks.map((c) => `${MARKS[c.status]} ${c.name.padEnd(width)}  ${c.detail}`);
  const failed = checks.find((c) => c.status === 'failed');
  if (failed?.hint) lines.push('', `hint: ${failed.hint}`);
  lines.push(
    '',
    failed
      ? `check: ${failed.name} failed`
      : 'check: the target module is ready (next: hillclimb test runs the CPU gate with your test suite)',
  );
  return lines.join('\n');
}

export function registerCheck(program: Command, ctx: () => CliContext, done: (code: number) => void): void {
  program
    .command('check')
    .description(
      "check the target module once: HEAD's programs asked for, exported and verified on this machine's CPU " +
        'by the steps the gates use; say what to change',
    )
    .option('-c, --config <file>', 'config file (default: hillclimb.yml in the project root)')
    .option('-t, --target <name>', 'target (default: loop.target or the only target)')
    .option('--ref <commit>', 'commit to check', 'HEAD')
    .option('--json', 'print the checks as JSON')
    .action(async (flags: { config?: string; target?: string; ref: string; json?: boolean }) => {
      const c = ctx();
      const report = await withInterrupts((signal) =>
        checkTarget({
          configFile: resolveConfigFile(c.root, flags.config),
          ...(flags.target ? { target: flags.target } : {}),
          ref: flags.ref,
          logger: c.logger,
          progress: (line) => c.stderr(line),
          signal,
        }),
      );
      c.stdout(flags.json ? JSON.stringify(report, null, 2) : formatTargetChecks(report.checks));
      done(report.exitCode);
    });
}
