import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import {
  type Ask,
  applyPlan,
  CONFIG_FILE,
  type ConfigPlan,
  detectBase,
  type ExistingRepository,
  gatherAnswers,
  type InitFlags,
  nextSteps,
  nonInteractiveError,
  planFiles,
  readExistingRepository,
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

/** The hillclimb.yml on disk, when there is a valid one (a plain init then writes it or leaves it). */
function readIfValid(root: string): ExistingRepository | undefined {
  try {
    return readExistingRepository(root);
  } catch {
    return undefined;
  }
}

export function registerInit(program: Command, ctx: () => CliContext, done: (code: number) => void): void {
  program
    .command('init')
    .description(
      'set up hillclimb in this git repository: hillclimb.yml, the workflows pinned to this hillclimb, a starter prompt; idempotent',
    )
    .option('--target <name>', 'target name (lowercase letters, digits, -)')
    .option(
      '--add-target',
      "add a target to the existing hillclimb.yml, leaving the others as they are; the workflows' path filters then cover every target",
    )
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
      // Before any question: --add-target needs a valid hillclimb.yml to add to.
      const existing = opts.addTarget ? readExistingRepository(root) : undefined;
      const { pin, answers } = await terminalAsk(async (ask) => ({
        pin: await pinAsking(packageDir, opts, ask),
        answers: await gatherAnswers(root, opts, ask, await detectBase(root), existing),
      }));
      const onDisk = existing ?? readIfValid(root);
      const configPlan: ConfigPlan = existing
        ? { kind: 'add', existing }
        : onDisk && onDisk.targets.length > 1 && onDisk.targets.includes(answers.target)
          ? { kind: 'keep', existing: onDisk }
          : { kind: 'new' };
      const plan = planFiles(root, packageDir, answers, pin, packageVersion(), configPlan);
      for (const g of await globsWithoutFiles(git, answers.editable)) {
        c.stderr(
          `warning: --editable ${g} matches no file committed at HEAD: the agent could only add files there`,
        );
      }
      const requirements = requirementsWarning(root, answers.requirements);
      if (requirements) c.stderr(`warning: ${requirements}`);
      const result = applyPlan(root, plan, { force: Boolean(opts.force) });

      const width = Math.max(...result.files.map((f) => f.outcome.length));
      if (configPlan.kind === 'keep') {
        c.stdout(
          `${'kept'.padEnd(width)}  ${CONFIG_FILE} (targets ${configPlan.existing.targets.join(', ')}: a re-run leaves it as it is; edit a target's answers there, or add one with --add-target)`,
        );
      }
      for (const f of result.files) c.stdout(`${f.outcome.padEnd(width)}  ${f.path}`);
      const wrote = result.files.some((f) => ['created', 'updated', 'replaced'].includes(f.outcome));
      if (wrote && existing) {
        c.stdout(
          `hillclimb init: added target ${answers.target} beside ${existing.targets.join(', ')}, actions pinned to ${pin.repository}@${pin.commit}`,
        );
      } else if (wrote) {
        c.stdout(
          `hillclimb init: target ${answers.target}, actions pinned to ${pin.repository}@${pin.commit}`,
        );
      } else if (result.differing.length === 0) c.stdout('hillclimb init: nothing to change');
      if (result.differing.length > 0) {
        c.stderr(
          `error: kept ${result.differing.length} file(s) that differ from what init writes: ${result.differing.join(', ')}`,
        );
        c.stderr('hint: compare them, then run init again with --force to replace them');
        const others = (onDisk?.targets ?? []).filter((t) => t !== answers.target);
        if (configPlan.kind === 'new' && result.differing.includes(CONFIG_FILE) && others.length > 0) {
          c.stderr(
            `hint: ${CONFIG_FILE} has target(s) ${others.join(', ')}; to keep them and add ${answers.target}, run init --add-target (--force would replace the file)`,
          );
        }
        done(1);
        return;
      }
      const added = existing ? { replayDir: existing.replayDir } : undefined;
      c.stdout(['', ...nextSteps(answers, wrote, added)].join('\n'));
      done(0);
    });
}
