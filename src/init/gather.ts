/**
 * Answers for `hillclimb init`: from the flags, else asked (on a terminal), else the defaults with
 * `--yes`. Without a terminal and without `--yes` nothing is guessed: the error lists the flags to pass.
 */

import { ExitCode, HillclimbError } from '../util/errors.js';
import { Git } from '../workspace/git.js';
import {
  AGENT_KINDS,
  badFlag,
  checkBranch,
  checkRelativePath,
  DEFAULT_METRIC,
  DEFAULT_TEST_COMMAND,
  defaultProtected,
  FLAG_OF,
  type InitAgent,
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
  benchCommand?: string;
  metric?: string;
  direction?: string;
  agent?: string;
  requirements?: string;
  base?: string;
  yes?: boolean;
}

/** Ask one question; the default is shown and taken on an empty answer. */
export type Ask = (question: string, fallback: string | undefined) => Promise<string>;

const REQUIRED = ['target', 'editable', 'benchCommand'] as const;

export function nonInteractiveError(): HillclimbError {
  return new HillclimbError('hillclimb init has no terminal to ask on', {
    hint: `pass --yes with ${REQUIRED.map((k) => FLAG_OF[k]).join(', ')} (and optionally --protected, --test-command, --metric, --direction, --agent, --requirements, --base)`,
    exitCode: ExitCode.badInput,
  });
}

/** The default branch: origin's HEAD when known, else the checked-out branch, else main. */
export async function detectBase(root: string): Promise<string> {
  const git = await Git.create(root);
  return (await git.remoteDefaultBranch('origin')) ?? (await git.currentBranch()) ?? 'main';
}

export async function gatherAnswers(
  root: string,
  flags: InitFlags,
  ask: Ask | undefined,
  detectedBase: string,
): Promise<InitAnswers> {
  if (!flags.yes && !ask) throw nonInteractiveError();
  // One answer: the flag, else asked, else (--yes) the default; a required one without any is an error.
  const answer = async (
    key: keyof InitAnswers,
    question: string,
    given: string | undefined,
    fallback?: string,
  ) => {
    if (given !== undefined) return given;
    if (ask && !flags.yes) {
      const a = (await ask(question, fallback)).trim();
      if (a !== '') return a;
    }
    if (fallback !== undefined) return fallback;
    throw badFlag(FLAG_OF[key], 'required', `pass ${FLAG_OF[key]} (with --yes nothing is asked)`);
  };
  const list = (v: string[] | undefined) =>
    v === undefined || v.length === 0 ? undefined : splitList(v).join(',');

  const target = await answer('target', 'Target name (lowercase, e.g. my-kernel)', flags.target);
  const editable = splitList(
    await answer(
      'editable',
      'Paths the agent may edit (globs, comma separated, e.g. src/mypkg/ops/**)',
      list(flags.editable),
    ),
  );
  if (editable.length === 0) throw badFlag(FLAG_OF.editable, 'at least one glob');
  const testCommand = parseCommand(
    FLAG_OF.testCommand,
    await answer(
      'testCommand',
      'Correctness command (CPU; writes JUnit to {junit})',
      flags.testCommand,
      DEFAULT_TEST_COMMAND,
    ),
  );
  const benchCommand = parseCommand(
    FLAG_OF.benchCommand,
    await answer('benchCommand', 'Bench command (writes the metrics JSON to {metrics})', flags.benchCommand),
  );
  const metric = await answer(
    'metric',
    'Verdict metric (dotted path in the metrics JSON)',
    flags.metric,
    DEFAULT_METRIC,
  );
  const direction = await answer(
    'direction',
    'Which way is better (lower or higher)',
    flags.direction,
    'lower',
  );
  if (direction !== 'lower' && direction !== 'higher')
    throw badFlag(FLAG_OF.direction, `"${direction}": lower or higher`);
  const agent = await answer('agent', `Agent (${AGENT_KINDS.join(', ')})`, flags.agent, 'codex');
  if (!(AGENT_KINDS as readonly string[]).includes(agent)) {
    throw badFlag(FLAG_OF.agent, `"${agent}": one of ${AGENT_KINDS.join(', ')}`);
  }
  const requirements = checkRelativePath(
    FLAG_OF.requirements,
    await answer(
      'requirements',
      'pip requirements file for .venv (JAX, pytest, your package)',
      flags.requirements,
      'requirements.txt',
    ),
  );
  const base = checkBranch(FLAG_OF.base, await answer('base', 'Default branch', flags.base, detectedBase));
  const fallbackProtected = defaultProtected(root, { editable, testCommand, benchCommand, requirements });
  // CI, the config and init's own folder stay protected whatever the answer: they decide the trust split.
  const protectedPaths = withAlwaysProtected(
    splitList(
      await answer(
        'protected',
        'Protected paths (globs, comma separated)',
        list(flags.protected),
        fallbackProtected.join(','),
      ),
    ),
  );
  for (const [flag, globs] of [
    [FLAG_OF.editable, editable],
    [FLAG_OF.protected, protectedPaths],
  ] as const) {
    for (const g of globs) {
      // Globs go into the config and the workflows' path filters (quoted); no control characters.
      if (/[\n\r"\\]/.test(g) || g.startsWith('/')) throw badFlag(flag, `"${g}" is not a relative path glob`);
    }
  }
  return {
    target,
    editable,
    protected: protectedPaths,
    testCommand,
    benchCommand,
    metric,
    direction,
    agent: agent as InitAgent,
    requirements,
    base,
  };
}
