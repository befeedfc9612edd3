/**
 * `hillclimb log lint`: check the hill-climb log (placeholders, heading order, and that every number
 * in an entry comes from its evidence). Exit 0 with `log lint passed`, 1 on problems, 2 when the file
 * is missing.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { loadConfig } from '../../config/index.js';
import { CONFIG_FILE } from '../../project/index.js';
import { evidenceLoader, formatProblem, hasErrors, type LintScope, lintLog } from '../../report/index.js';
import { InputError } from '../../util/index.js';
import type { CliContext } from '../context.js';

interface LintFlags {
  file?: string;
  scope: LintScope;
  evidenceRoot?: string;
  allowNonMonotonic?: boolean;
  requireEvidence?: boolean;
}

const DEFAULT_LOG_FILE = 'docs/hillclimb-log.md';
const DEFAULT_STATE_DIR = '.hillclimb';

/**
 * The log file and evidence roots: flags first, then hillclimb.yml's paths, then the defaults. Where
 * the repository's log does not exist yet (the loop writes each entry on its iteration's PR branch, and
 * main gets it when a loop PR merges), the newest run's own copy in the state folder, said so.
 */
function locate(root: string, flags: LintFlags): { file: string; roots: string[]; note?: string } {
  let logFile = DEFAULT_LOG_FILE;
  let stateDir = resolve(root, DEFAULT_STATE_DIR);
  const configFile = join(root, CONFIG_FILE);
  if ((flags.file === undefined || flags.evidenceRoot === undefined) && existsSync(configFile)) {
    const config = loadConfig(configFile);
    logFile = config.paths.log_file;
    stateDir = resolve(config.root, config.paths.state_dir);
  }
  const file = resolve(root, flags.file ?? logFile);
  // Bundles live under the state folder; the local store keeps the published copies under store/.
  const roots = flags.evidenceRoot ? [resolve(flags.evidenceRoot)] : [stateDir, join(stateDir, 'store')];
  if (flags.file === undefined && !existsSync(file)) {
    const newest = newestRunLog(stateDir);
    if (newest) {
      const note = `${relative(root, file)} is not here yet (loop PRs carry it until one merges): checking the newest run's copy`;
      return { file: newest, roots, note };
    }
  }
  return { file, roots };
}

/** The log of the most recently written run folder under `<state>/runs`, if any. */
function newestRunLog(stateDir: string): string | undefined {
  const runs = join(stateDir, 'runs');
  if (!existsSync(runs)) return undefined;
  return readdirSync(runs)
    .map((r) => join(runs, r, 'hillclimb-log.md'))
    .filter((f) => existsSync(f))
    .map((f) => ({ f, at: statSync(f).mtimeMs }))
    .sort((a, b) => b.at - a.at)[0]?.f;
}

export function registerLog(program: Command, ctx: () => CliContext, done: (code: number) => void): void {
  const log = program.command('log').description('the hill-climb log written by the harness');
  log
    .command('lint')
    .description(
      'check the hill-climb log: no commit placeholders, monotonic iteration headings, and no number absent from the evidence',
    )
    .option(
      '--file <path>',
      `log file (default: paths.log_file from ${CONFIG_FILE}, else ${DEFAULT_LOG_FILE})`,
    )
    .addOption(
      new Option('--scope <scope>', 'entries to check: the last one or all')
        .choices(['last-entry', 'all'])
        .default('last-entry'),
    )
    .option(
      '--evidence-root <dir>',
      'folder holding runs/<run>/i<NNN>/evidence.json (default: the state folder and its store/)',
    )
    .option('--allow-non-monotonic', 'do not check the order of iteration headings')
    .option('--require-evidence', 'fail when an entry’s evidence is not available (default: warn)')
    .action((flags: LintFlags) => {
      const c = ctx();
      const { file, roots, note } = locate(c.root, flags);
      if (!existsSync(file)) {
        throw new InputError(file, 'file not found', {
          hint:
            flags.file === undefined
              ? "no log yet: the loop writes each entry on its iteration's PR branch (and in " +
                '<state>/runs/<run>/hillclimb-log.md); lint a copy with --file, or run the loop once'
              : 'check the path',
        });
      }
      if (note) c.stdout(note);
      const problems = lintLog(readFileSync(file, 'utf8'), {
        scope: flags.scope,
        allowNonMonotonic: Boolean(flags.allowNonMonotonic),
        requireEvidence: Boolean(flags.requireEvidence),
        loadEvidence: evidenceLoader(roots),
      });
      const shown = relative(process.cwd(), file) || file;
      for (const p of problems) c.stdout(formatProblem(shown, p));
      const errors = problems.filter((p) => p.severity === 'error').length;
      const warnings = problems.length - errors;
      if (hasErrors(problems)) {
        c.stdout(`log lint failed: ${errors} error(s), ${warnings} warning(s)`);
        done(1);
        return;
      }
      c.stdout(`log lint passed${warnings > 0 ? ` (${warnings} warning(s))` : ''}`);
      done(0);
    });
}
