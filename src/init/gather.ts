/**
 * Answers for `hillclimb init`: from the flags, else asked (on a terminal), else the defaults with
 * `--yes`. Without a terminal and without `--yes` nothing is guessed: the error lists the flags to pass.
 */

import { ExitCode, HillclimbError, isHillclimbError } from '../util/index.js';
import { Git } from '../workspace/index.js';
import type { ExistingRepository } from './add-target.js';
import {
  AGENT_KINDS,
  badFlag,
  checkBranch,
  checkModule,
  checkRequirements,
  DEFAULT_METRIC,
  DEFAULT_TEST_COMMAND,
  defaultProtected,
  FLAG_OF,
  type InitAnswers,
  parseCommand,
  splitList,
  withAlwaysProtected,
} from './answers.js';

/** The flags as commander gives them. */
export interface InitFlags {
  target?: string;
  editable?: string[];
  protected?: string[];
  testCommand?: string;
  programs?: string;
  metric?: string;
  direction?: string;
  agent?: string;
  agentCommand?: string;
  requirements?: string;
  base?: string;
  yes?: boolean;
  addTarget?: boolean;
}

/** The answers that are the repository's, not a target's: --add-target reads them from hillclimb.yml. */
const REPOSITORY_FLAGS = [
  ['agent', 'agent.kind'],
  ['agentCommand', 'agent.command.command'],
  ['requirements', 'paths.requirements'],
  ['base', 'forge.base'],
] as const;

/** Ask one question; the default is shown and taken on an empty answer. */
export type Ask = (question: string, fallback: string | undefined) => Promise<string>;

const REQUIRED = ['target', 'editable', 'programs'] as const;

export function nonInteractiveError(): HillclimbError {
  return new HillclimbError('hillclimb init has no terminal to ask on', {
    hint: `pass --yes with ${REQUIRED.map((k) => FLAG_OF[k]).join(', ')} (and optionally --protected, --test-command, --metric, --direction, --agent, --agent-command, --requirements, --base)`,
    exitCode: ExitCode.badInput,
  });
}

/** The default branch: origin's HEAD when known, else the checked-out branch, else main. */
export async function detectBase(root: string): Promise<string> {
  const git = await Git.create(root);
  return (await git.remoteDefaultBranch('origin')) ?? (await git.currentBranch()) ?? 'main';
}

/** Questions asked again after an unusable answer, before giving up. */
const ATTEMPTS = 3;

/**
 * Every answer init needs. With `existing` (init --add-target) only the new target's are asked; the
 * repository's come from its hillclimb.yml, and a flag for one of them is refused, naming the key to edit.
 */
export async function gatherAnswers(
  root: string,
  flags: InitFlags,
  ask: Ask | undefined,
  detectedBase: string,
  existing?: ExistingRepository,
): Promise<InitAnswers> {
  if (!flags.yes && !ask) throw nonInteractiveError();
  if (existing) {
    for (const [key, configKey] of REPOSITORY_FLAGS) {
      if (flags[key] !== undefined) {
        throw badFlag(
          FLAG_OF[key],
          `with --add-target it is hillclimb.yml's ${configKey}, shared by every target`,
          `drop ${FLAG_OF[key]}, or edit ${configKey} in hillclimb.yml`,
        );
      }
    }
  }
  /**
   * One answer, parsed: the flag, else asked (again, saying why, when unusable), else with --yes the
   * default. A required answer without any is an error naming its flag.
   */
  const answer = async <T>(
    key: keyof InitAnswers,
    question: string,
    given: string | undefined,
    fallback: string | undefined,
    parse: (value: string) => T,
  ): Promise<T> => {
    const required = badFlag(FLAG_OF[key], 'required', `pass ${FLAG_OF[key]} (with --yes nothing is asked)`);
    if (given !== undefined) return parse(given);
    if (flags.yes || !ask) {
      if (fallback === undefined) throw required;
      return parse(fallback);
    }
    let last: HillclimbError = required;
    for (let i = 0; i < ATTEMPTS; i++) {
      const problem = i === 0 ? '' : last === required ? '(required) ' : `${last.message}. `;
      const value = (await ask(`${problem}${question}`, fallback)).trim() || fallback;
      if (value === undefined) {
        last = required;
        continue;
      }
      try {
        return parse(value);
      } catch (e) {
        if (!isHillclimbError(e)) throw e;
        last = e;
      }
    }
    throw last;
  };
  const list = (v: string[] | undefined) =>
    v === undefined || v.length === 0 ? undefined : splitList(v).join(',');
  const same = (v: string) => v;
  const globs = (flag: string) => (v: string) => {
    const items = splitList(v);
    if (items.length === 0) throw badFlag(flag, 'at least one glob');
    for (const g of items) {
      // Globs go into the config and the workflows' path filters (quoted); no control characters.
      if (/[\n\r"\\]/.test(g) || g.startsWith('/')) throw badFlag(flag, `"${g}" is not a relative path glob`);
    }
    return items;
  };
  const oneOf =
    <T extends string>(flag: string, allowed: readonly T[]) =>
    (v: string): T => {
      if (!(allowed as readonly string[]).includes(v))
        throw badFlag(flag, `"${v}": one of ${allowed.join(', ')}`);
      return v as T;
    };

  const newName = (v: string) => {
    if (existing?.targets.includes(v)) {
      throw badFlag(
        FLAG_OF.target,
        `"${v}" is already a target in hillclimb.yml (${existing.targets.join(', ')}); choose another name`,
      );
    }
    return v;
  };
  const target = await answer(
    'target',
    existing
      ? `Name of the new target (lowercase; hillclimb.yml has ${existing.targets.join(', ')})`
      : 'Target name (lowercase, e.g. my-kernel)',
    flags.target,
    undefined,
    newName,
  );
  const editable = await answer(
    'editable',
    'Paths the agent may edit (globs, comma separated, e.g. src/mypkg/ops/**)',
    list(flags.editable),
    undefined,
    globs(FLAG_OF.editable),
  );
  const testCommand = await answer(
    'testCommand',
    'Correctness command (CPU; writes JUnit to {junit})',
    flags.testCommand,
    DEFAULT_TEST_COMMAND,
    (v) => parseCommand(FLAG_OF.testCommand, v),
  );
  const programs = await answer(
    'programs',
    'Target module that exports and verifies the kernel (hillclimb-bench; e.g. bench.my_op)',
    flags.programs,
    undefined,
    (v) => checkModule(FLAG_OF.programs, v),
  );
  const metric = await answer(
    'metric',
    'Verdict metric (dotted path in the metrics JSON)',
    flags.metric,
    DEFAULT_METRIC,
    same,
  );
  const direction = await answer(
    'direction',
    'Which way is better (lower or higher)',
    flags.direction,
    'lower',
    oneOf(FLAG_OF.direction, ['lower', 'higher'] as const),
  );
  const agent = existing
    ? existing.agent
    : await answer(
        'agent',
        `Agent (${AGENT_KINDS.join(', ')})`,
        flags.agent,
        'codex',
        oneOf(FLAG_OF.agent, AGENT_KINDS),
      );
  const agentCommand =
    agent === 'command' && !existing
      ? await answer(
          'agentCommand',
          "The agent's command (an argument array or words; gets the prompt on stdin)",
          flags.agentCommand,
          undefined,
          (v) => parseCommand(FLAG_OF.agentCommand, v),
        )
      : undefined;
  const requirements = existing
    ? existing.requirements
    : await answer(
        'requirements',
        'pip requirements file for .venv (JAX, pytest, your package), or pyproject.toml with extras in brackets',
        flags.requirements,
        'requirements.txt',
        (v) => checkRequirements(FLAG_OF.requirements, v),
      );
  const base = existing
    ? existing.base
    : await answer('base', 'Default branch', flags.base, detectedBase, (v) => checkBranch(FLAG_OF.base, v));
  const fallbackProtected = defaultProtected(root, { editable, testCommand, programs, requirements });
  // CI, the config and init's own folder stay protected whatever the answer: they decide the trust split.
  const protectedPaths = withAlwaysProtected(
    await answer(
      'protected',
      'Protected paths (globs, comma separated)',
      list(flags.protected),
      fallbackProtected.join(','),
      globs(FLAG_OF.protected),
    ),
  );
  return {
    target,
    editable,
    protected: protectedPaths,
    testCommand,
    programs,
    metric,
    direction,
    agent,
    ...(agentCommand ? { agentCommand } : {}),
    requirements,
    base,
  };
}
