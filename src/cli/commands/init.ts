import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import {
  type Ask,
  applyPlan,
  detectBase,
  gatherAnswers,
  type InitFlags,
  nextSteps,
  nonInteractiveError,
  planFiles,
  requirementsWarning,
  resolvePin,
  UnknownHillclimbRepository,
} from '../../init/index.js';
import { packageRoot, packageVersion } from '../../project/index.js';
import { ExitCode, HillclimbError } from '../../util/index.js';
import { Git, globsWithoutFiles } from '../../workspace/index.js';
import type { CliContext } from '../context.js';

interface InitOptions extends InitFlags {
  force?: boolean;
  hillclimbRepo?: string;
  hillclimbRef?: string;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

const interactive = () => Boolean(process.stdin.isTTY && process.stdout.isTTY);

/** Questions on the terminal, when there is one. */
async function terminalAsk<T>(use: (ask: Ask | undefined) => Promise<T>): Promise<T> {
  if (!interactive()) return use(undefined);
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return await use(async (q, fallback) => {
      try {
        return await rl.question(fallback === undefined ? `${q}: ` : `${q} [${fallback}]: `);
      } catch (e) {
        // Ctrl+D or Ctrl+C at a question: stop cleanly, nothing written yet.
        if ((e as Error).name !== 'AbortError') throw e;
        throw new HillclimbError(`hillclimb init: no answer to "${q}"; nothing was written`, {
          exitCode: ExitCode.badInput,
        });
      }
    });
  } finally {
    rl.close();
  }
}

/**
 * The hillclimb commit and repository the workflows pin; on a terminal, the repository is asked for when
 * nothing names it (a checkout without a GitHub remote), instead of stopping before the first question.
 */
async function pinAsking(packageDir: string, opts: InitOptions, ask: Ask | undefined) {
  const flags = { repository: opts.hillclimbRepo, ref: opts.hillclimbRef };
  try {
    return await resolvePin(packageDir, flags);
  } catch (e) {
    if (!(e instanceof UnknownHillclimbRepository) || ask === undefined) throw e;
    const repository = (
      await ask(
        'GitHub repository of this hillclimb, whose actions the workflows pin (owner/name)',
        undefined,
      )
    ).trim();
    return resolvePin(packageDir, { ...flags, repository });
  }
}

export function registerInit(program: Command, ctx: () => CliContext, done: (code: number) => void): void {
  program
    .command('init')
    .description(
      'set up hillclimb in this git repository: hillclimb.yml, the workflows pinned to this hillclimb, a starter prompt; idempotent',
    )
    .option('--target <name>', 'target name (lowercase letters, digits, -)')
    .option('--editable <glob>', 'a path glob the agent may edit (repeat, or comma separated)', collect)
    .option(
      '--protected <glob>',
      'a path glob never editable (repeat, or comma separated; default: tests, the target module and test files, requirements; .github, hillclimb.yml and hillclimb/ always)',
      collect,
    )
    .option(
      '--test-command <cmd>',
      'correctness command, words or a JSON array (default: {python} -m pytest … --junitxml={junit})',
    )
    .option(
      '--programs <module>',
      'the target module (hillclimb-bench) that exports and verifies the kernel, e.g. bench.my_op',
    )
    .option('--metric <path>', 'verdict metric in the metrics JSON (default measurements.fwd.median_ms)')
    .option('--direction <dir>', 'lower or higher is better (default lower)')
    .option('--agent <kind>', 'codex, claude, command or replay (default codex)')
    .option('--agent-command <command>', 'with --agent command: the program to run (words or a JSON array)')
    .option(
      '--requirements <file>',
      'pip requirements file the workflows install into .venv, or pyproject.toml[<extra>] (default requirements.txt)',
    )
    .option('--base <branch>', "default branch (default: origin's HEAD, else the current branch)")
    .option(
      '--hillclimb-repo <owner/name>',
      "hillclimb's GitHub repository (default: its package.json or origin remote)",
    )
    .option(
      '--hillclimb-ref <sha>',
      "full 40-character hillclimb commit to pin (default: the installed checkout's HEAD)",
    )
    .option('-y, --yes', 'ask nothing: flags and defaults only')
    .option('--force', 'replace files that differ from what init writes')
    .action(async (opts: InitOptions) => {
      const c = ctx();
      // Refuse before anything else: a script without --yes must not get half-way.
      if (!opts.yes && !interactive()) throw nonInteractiveError();
      const git = await Git.create(c.root);
      const root = git.root;
      const packageDir = packageRoot();
      const { pin, answers } = await terminalAsk(async (ask) => ({
        pin: await pinAsking(packageDir, opts, ask),
        answers: await gatherAnswers(root, opts, ask, await detectBase(root)),
      }));
      const plan = planFiles(root, packageDir, answers, pin, packageVersion());
      for (const g of await globsWithoutFiles(git, answers.editable)) {
        c.stderr(
          `warning: --editable ${g} matches no file committed at HEAD: the agent could only add files there`,
        );
      }
      const requirements = requirementsWarning(root, answers.requirements);
      if (requirements) c.stderr(`warning: ${requirements}`);
      const result = applyPlan(root, plan, { force: Boolean(opts.force) });

      const width = Math.max(...result.files.map((f) => f.outcome.length));
      for (const f of result.files) c.stdout(`${f.outcome.padEnd(width)}  ${f.path}`);
      const wrote = result.files.some((f) => f.outcome === 'created' || f.outcome === 'replaced');
      if (wrote) {
        c.stdout(
          `hillclimb init: target ${answers.target}, actions pinned to ${pin.repository}@${pin.commit}`,
        );
      } else if (result.differing.length === 0) c.stdout('hillclimb init: nothing to change');
      if (result.differing.length > 0) {
        c.stderr(
          `error: kept ${result.differing.length} file(s) that differ from what init writes: ${result.differing.join(', ')}`,
        );
        c.stderr('hint: compare them, then run init again with --force to replace them');
        done(1);
        return;
      }
      c.stdout(['', ...nextSteps(answers, wrote)].join('\n'));
      done(0);
    });
}
