import type { Command } from 'commander';
import { formatDiff, formatSummary } from '../../report/index.js';
import { diffSummaries, summarizeTracePath, type TraceSummary } from '../../trace/index.js';
import { InputError } from '../../util/index.js';
import type { CliContext } from '../context.js';

const DEFAULT_TOP = 15;

export function registerTrace(program: Command, ctx: () => CliContext, done: (code: number) => void): void {
  const trace = program
    .command('trace')
    .description('analyse profiler traces: steps, hotspots, custom calls, and before/after diffs');

  trace
    .command('summary')
    .description(
      'steps, programs, op hotspots with FLOP rates and roofline position, categories, scopes and custom calls of one trace',
    )
    .argument('<path>', 'a trace file (.xplane.pb, .trace.json.gz, .json) or a profile directory')
    .option('--json', 'print the full summary as JSON (every op, not only the top ones)')
    .option('--top <n>', `rows per table (default ${DEFAULT_TOP})`, parseTop)
    .option('--device-kind <kind>', DEVICE_KIND_HELP)
    .action(async (path: string, opts: { json?: boolean; top?: number; deviceKind?: string }) => {
      const c = ctx();
      const summary = await summarize(path, c, opts.deviceKind);
      c.stdout(
        opts.json ? JSON.stringify(summary, null, 2) : formatSummary(summary, opts.top ?? DEFAULT_TOP),
      );
      done(0);
    });

  trace
    .command('diff')
    .description('per-op and per-category time per step before → after, sorted by |Δ| (HTA TraceDiff style)')
    .argument('<before>', 'a trace, a profile directory, or a summary written by `trace summary --json`')
    .argument('<after>', 'the same, for the changed version')
    .option('--json', 'print the full diff as JSON')
    .option('--top <n>', `rows per table (default ${DEFAULT_TOP})`, parseTop)
    .option('--device-kind <kind>', DEVICE_KIND_HELP)
    .action(
      async (before: string, after: string, opts: { json?: boolean; top?: number; deviceKind?: string }) => {
        const c = ctx();
        const diff = diffSummaries(
          await summarize(before, c, opts.deviceKind),
          await summarize(after, c, opts.deviceKind),
        );
        c.stdout(opts.json ? JSON.stringify(diff, null, 2) : formatDiff(diff, opts.top ?? DEFAULT_TOP));
        done(0);
      },
    );
}

const DEVICE_KIND_HELP =
  'the JAX device_kind the trace ran on (e.g. "TPU v6 lite"), for the roofline of traces that do not say (JSON); see schemas/device-peaks.json';

function parseTop(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new InputError('--top', `expected a positive integer, got "${value}"`);
  return n;
}

/** Summarise a trace, or load a summary saved by `trace summary --json`. */
function summarize(path: string, c: CliContext, deviceKind: string | undefined): Promise<TraceSummary> {
  return summarizeTracePath(path, (l) => c.logger.debug(l), deviceKind === undefined ? {} : { deviceKind });
}
