/** `hillclimb history` and `hillclimb pr list|show`: read what the loop left on disk. */
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { loadConfig } from '../../config/index.js';
import { type HistoryRow, VERDICT_SYMBOLS } from '../../evidence/index.js';
import { formatPull, formatPullList, listLocalPulls, showLocalPull } from '../../forge/index.js';
import { readHistory, resolveConfigFile, stateDirOf } from '../../loop/index.js';
import { baselineSection, historyCharts } from '../../report/index.js';
import { ExitCode, HillclimbError, readJsonLines } from '../../util/index.js';
import type { CliContext } from '../context.js';

function stateDir(c: CliContext, config?: string): string {
  return stateDirOf(loadConfig(resolveConfigFile(c.root, config)));
}

/** One line per row: when, run/iteration, verdict, metric A → B, ratio with CI, subject. */
export function formatHistory(rows: readonly HistoryRow[]): string {
  if (rows.length === 0) return '(no history yet: run hillclimb loop)';
  const lines = rows.map((r) => {
    const unit = r.metric.unit ? ` ${r.metric.unit}` : '';
    const measured =
      r.a !== null && r.b !== null
        ? `${r.a.toPrecision(4)} → ${r.b.toPrecision(4)}${unit}` +
          (r.ratio !== null && r.ciLow !== null && r.ciHigh !== null
            ? `  ×${r.ratio.toFixed(3)} [${r.ciLow.toFixed(3)}, ${r.ciHigh.toFixed(3)}]`
            : '')
        : '';
    const verdict = `${VERDICT_SYMBOLS[r.verdict]} ${r.verdict}`;
    return [
      r.at.slice(0, 16).replace('T', ' '),
      `${r.runId} i${r.iteration}${r.slot ? `-c${r.slot}` : ''}`,
      verdict.padEnd(13),
      measured.padEnd(40),
      r.subject ?? '',
    ].join('  ');
  });
  return lines.join('\n');
}

export function registerHistory(program: Command, ctx: () => CliContext, done: (code: number) => void): void {
  program
    .command('history')
    .description('print the append-only history: one row per iteration, with the harness-measured numbers')
    .option('-c, --config <file>', 'config file')
    .option('-t, --target <name>', 'only this target')
    .option('--json', 'print the rows as JSON lines')
    .option('--chart', 'print the trajectory charts (mermaid, as in the sticky comment) instead of the rows')
    .option(
      '--baseline <file>',
      "with --chart: chart main over time from a baseline series (the store's baselines/<target>.jsonl)",
    )
    .action(
      (flags: { config?: string; target?: string; json?: boolean; chart?: boolean; baseline?: string }) => {
        const c = ctx();
        if (flags.baseline !== undefined) {
          if (!existsSync(flags.baseline)) {
            throw new HillclimbError(`no baseline series at ${flags.baseline}`, {
              hint: 'download it from the store: baselines/<target>.jsonl (the baseline workflow writes it)',
              exitCode: ExitCode.badInput,
            });
          }
          const series = readJsonLines<HistoryRow>(flags.baseline).rows.filter(
            (r) => flags.target === undefined || r.target === flags.target,
          );
          c.stdout(baselineSection(series) ?? `(no measured rows in ${flags.baseline})`);
          done(0);
          return;
        }
        const rows = readHistory(stateDir(c, flags.config), flags.target);
        if (flags.chart) {
          c.stdout(historyCharts(rows) ?? '(no history yet: run hillclimb loop)');
          done(0);
          return;
        }
        c.stdout(flags.json ? rows.map((r) => JSON.stringify(r)).join('\n') : formatHistory(rows));
        done(0);
      },
    );

  const pr = program.command('pr').description('list and show the pull-request records of the local forge');
  pr.command('list')
    .option('-c, --config <file>', 'config file')
    .action((flags: { config?: string }) => {
      const c = ctx();
      c.stdout(formatPullList(listLocalPulls(stateDir(c, flags.config))));
      done(0);
    });
  pr.command('show <number>')
    .option('-c, --config <file>', 'config file')
    .action((number: string, flags: { config?: string }) => {
      const c = ctx();
      const view = showLocalPull(stateDir(c, flags.config), Number(number));
      if (!view)
        throw new HillclimbError(`no local PR #${number}`, {
          hint: 'list them with: hillclimb pr list',
          exitCode: ExitCode.badInput,
        });
      c.stdout(formatPull(view));
      done(0);
    });
}
