/**
 * What `hillclimb init` asks, how flag values become answers, and the hillclimb.yml they make. The
 * config is validated by the engine's own loader before anything is written; a problem is reported
 * against the flag that caused it.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { type HillclimbConfig, parseConfig } from '../config/index.js';
import { ConfigError, ExitCode, HillclimbError } from '../util/index.js';

/** Where init puts the prompt and the directive presets (protected; the config points at them). */
export const PROMPT_FILE = 'hillclimb/prompt.md';
export const DIRECTIVES_DIR = 'hillclimb/directives';
export const CONFIG_FILE = 'hillclimb.yml';

export const AGENT_KINDS = ['codex', 'claude', 'command', 'replay'] as const;
export type InitAgent = (typeof AGENT_KINDS)[number];

export interface InitAnswers {
  target: string;
  editable: string[];
  protected: string[];
  testCommand: string[];
  /** The target module (hillclimb_bench's export/verify command line), e.g. bench.my_op. */
  programs: string;
  metric: string;
  direction: 'lower' | 'higher';
  agent: InitAgent;
  /** The command agent's argument array (agent.command.command); only with agent `command`. */
  agentCommand?: string[];
  requirements: string;
  base: string;
}

export const DEFAULT_TEST_COMMAND = '{python} -m pytest -q -p no:cacheprovider --junitxml={junit}';
export const DEFAULT_METRIC = 'measurements.fwd.median_ms';
/** Always protected: CI, the config, and init's own prompt and directives. */
const ALWAYS_PROTECTED = ['.github/**', CONFIG_FILE, 'hillclimb/**'];
/** Protected when they exist: the usual homes of tests. */
const TEST_FOLDERS = ['tests', 'test'];

/** The flag each answer comes from, for errors. */
export const FLAG_OF: Record<keyof InitAnswers, string> = {
  target: '--target',
  editable: '--editable',
  protected: '--protected',
  testCommand: '--test-command',
  programs: '--programs',
  metric: '--metric',
  direction: '--direction',
  agent: '--agent',
  agentCommand: '--agent-command',
  requirements: '--requirements',
  base: '--base',
};

export function badFlag(flag: string, problem: string, hint?: string): HillclimbError {
  return new HillclimbError(`${flag}: ${problem}`, { hint, exitCode: ExitCode.badInput });
}

/**
 * A command as an argument array: a JSON array, or words split on whitespace with '…' and "…" quoting.
 * Never run through a shell.
 */
export function parseCommand(flag: string, text: string): string[] {
  const t = text.trim();
  if (t.startsWith('[')) {
    let v: unknown;
    try {
      v = JSON.parse(t);
    } catch (e) {
      throw badFlag(flag, `not a JSON array: ${(e as Error).message}`);
    }
    if (!Array.isArray(v) || v.length === 0 || !v.every((a) => typeof a === 'string' && a !== '')) {
      throw badFlag(flag, 'a JSON command must be a non-empty array of non-empty strings');
    }
    return v as string[];
  }
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (const ch of t) {
    if (quote) {
      if (ch === quote) quote = undefined;
      else word += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (quote) throw badFlag(flag, `unclosed ${quote} quote`);
  if (inWord) words.push(word);
  if (words.length === 0) throw badFlag(flag, 'empty command');
  return words;
}

/** A comma list or repeated flag → the items, trimmed, empty ones dropped. */
export function splitList(values: readonly string[] | string | undefined): string[] {
  const list = typeof values === 'string' ? [values] : (values ?? []);
  return list
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

/** A relative path that goes into a workflow's shell line: plain characters only. */
export function checkRelativePath(flag: string, path: string): string {
  if (!/^[A-Za-z0-9._][A-Za-z0-9._/-]*$/.test(path) || path.split('/').includes('..')) {
    throw badFlag(flag, `"${path}" must be a plain relative path (letters, digits, . _ - /; no ..)`);
  }
  return path;
}

/**
 * A requirements answer: a plain relative path, or a pyproject.toml with optional-dependency extras in
 * brackets (`pyproject.toml[test]`), as paths.requirements takes it.
 */
export function checkRequirements(flag: string, spec: string): string {
  const bracket = /^(.+?)\[([A-Za-z0-9._,-]*)\]$/.exec(spec);
  const path = checkRelativePath(flag, bracket ? bracket[1]! : spec);
  if (bracket && !/(^|\/)pyproject\.toml$/.test(path)) {
    throw badFlag(flag, `"${spec}": extras in brackets are for a pyproject.toml only`);
  }
  return spec;
}

/** A Python module name (what `python -m` takes): dotted identifiers. */
export function checkModule(flag: string, module: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/.test(module)) {
    throw badFlag(flag, `"${module}" is not a Python module name (e.g. bench.my_op, as python -m takes it)`);
  }
  return module;
}

export function checkBranch(flag: string, branch: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._/-]*$/.test(branch) || branch.includes('..')) {
    throw badFlag(flag, `"${branch}" is not a plain branch name`);
  }
  return branch;
}

/**
 * The default protected paths: CI, the config, init's prompt folder, the test folders that exist, the
 * requirements file, the files the test command names, and the target module (as a file and as a
 * package, whether or not it exists yet: it is written after init) unless one of them holds an editable
 * path (protecting it would forbid every change).
 */
export function defaultProtected(
  root: string,
  a: Pick<InitAnswers, 'editable' | 'testCommand' | 'programs' | 'requirements'>,
): string[] {
  const out = new Set(ALWAYS_PROTECTED);
  for (const t of TEST_FOLDERS) if (existsSync(join(root, t))) out.add(`${t}/**`);
  out.add(a.requirements.replace(/\[[^\]]*\]$/, '')); // pyproject.toml[test] protects pyproject.toml
  const editablePrefixes = a.editable.map((g) => g.split(/[*?[]/)[0]!.replace(/\/$/, ''));
  const holdsEditable = (dir: string) => editablePrefixes.some((p) => p === dir || p.startsWith(`${dir}/`));
  const named = (rel: string) => {
    const path = rel.replace(/^\.\//, '').replace(/\/$/, '');
    if (path === '' || path.startsWith('/') || path.split('/').includes('..') || path.includes('{')) return;
    const abs = join(root, path);
    if (!existsSync(abs)) return;
    if (statSync(abs).isDirectory()) {
      if (!holdsEditable(path)) out.add(`${path}/**`);
    } else out.add(path);
  };
  const cmd = a.testCommand;
  cmd.forEach((arg, i) => {
    if (cmd[i - 1] === '-m') {
      // A module run with -m: its file, at the root or under src/.
      const mod = arg.replaceAll('.', '/');
      for (const p of [`${mod}.py`, `src/${mod}.py`]) named(p);
    } else if (!arg.startsWith('-')) named(arg);
  });
  // The target module grades the kernel: protected before it exists, as a module and as a package.
  const mod = a.programs.replaceAll('.', '/');
  for (const p of [`${mod}.py`, `${mod}/**`]) if (!holdsEditable(p.replace('/**', ''))) out.add(p);
  return [...out];
}

/** `globs` with CI, the config and init's folder added where missing (first, in that order). */
export function withAlwaysProtected(globs: readonly string[]): string[] {
  return [...new Set([...ALWAYS_PROTECTED, ...globs])];
}

/** The metrics path of the MFU beside a `…<name>.median_ms` metric. */
function mfuPathFor(metric: string): string | undefined {
  return metric.endsWith('.median_ms') ? `${metric.slice(0, -'.median_ms'.length)}.mfu` : undefined;
}

/** The answers that belong to one target (the rest are the repository's: agent, requirements, base). */
export type TargetAnswers = Pick<
  InitAnswers,
  'target' | 'editable' | 'protected' | 'testCommand' | 'programs' | 'metric' | 'direction'
>;

const commandText = (args: readonly string[]) => `[${args.map((s) => JSON.stringify(s)).join(', ')}]`;

/**
 * One target's entry under `targets:` (two-space indent, as init writes the file): the same text for
 * the first target and for one `init --add-target` adds beside the others.
 */
export function targetBlock(a: TargetAnswers): string[] {
  const list = (items: readonly string[], indent: string) => items.map((i) => `${indent}- ${scalar(i)}`);
  const mfu = mfuPathFor(a.metric);
  return [
    `  ${plainOrQuoted(a.target)}:`,
    '    # The only paths an agent may change. Anything else it touches makes the iteration invalid.',
    '    editable:',
    ...list(a.editable, '      '),
    '    # Never editable, even where an editable glob matches: tests, the target module, requirements, CI,',
    '    # this file.',
    '    protected:',
    ...list(a.protected, '      '),
    '    correctness:',
    "      # The kernel's own tests, on CPU before any accelerator time: a failure makes the candidate",
    '      # invalid; only the verifier (programs, below) can pass it.',
    '      cpu:',
    `        command: ${commandText(a.testCommand)}`,
    '    # The target module (hillclimb-bench): `python -m <module> export` is the only process that imports',
    '    # the candidate; `python -E -s -m <module> verify` checks and times its programs without it.',
    '    programs:',
    `      module: ${scalar(a.programs)}`,
    '    bench:',
    '      metric:',
    `        path: ${scalar(a.metric)}`,
    `        direction: ${a.direction}`,
    ...(mfu ? [`      mfu_path: ${scalar(mfu)}`] : []),
    '    # One profiled run of the verified programs per iteration: the per-op table and the diff',
    "    # against the champion's in the PR, and the hotspots in the agent's prompt.",
    '    profile:',
    '      repeats: 3',
  ];
}

/** hillclimb.yml for these answers: commented, in the same shape as hillclimb's own. */
export function configText(a: InitAnswers, version: string): string {
  const lines = [
    `# hillclimb configuration, written by \`hillclimb init\` (hillclimb ${version}).`,
    '# Reference: docs/user-guide.md and schemas/hillclimb.schema.json in hillclimb.',
    '# Commands are argument arrays (never shell strings). Placeholders the engine fills in:',
    '#   {python}   the project venv interpreter (.venv)   {junit}  JUnit XML path to write',
    '#   {root}     the working tree under test            {cache}  a folder kept across jobs on that machine',
    'version: 1',
    '',
    'targets:',
    ...targetBlock(a),
    '',
    'loop:',
    `  target: ${plainOrQuoted(a.target)}`,
    '',
    'agent:',
    `  kind: ${a.agent}`,
    ...(a.agent === 'replay' ? ['  replay:', '    dir: hillclimb/replay'] : []),
    ...(a.agent === 'command' && a.agentCommand
      ? [
          '  # Gets the prompt on stdin, edits and commits; no network in the sandbox unless network: host.',
          '  command:',
          `    command: ${commandText(a.agentCommand)}`,
        ]
      : []),
    '',
    'compute:',
    '  backend: local',
    '',
    'forge:',
    '  # The workflow switches the publish job to github and fills in the repository.',
    '  kind: local',
    `  base: ${scalar(a.base)}`,
    '',
    'store:',
    '  # In CI the workflows keep history on the hillclimb-data branch (store kind branch).',
    '  kind: local',
    '',
    'paths:',
    '  # What `hillclimb setup` installs into .venv (the workflows install the same file).',
    `  requirements: ${scalar(a.requirements)}`,
    `  prompt: ${PROMPT_FILE}`,
    `  directives_dir: ${DIRECTIVES_DIR}`,
    '',
  ];
  return lines.join('\n');
}

function scalar(s: string): string {
  return stringify(s).trimEnd();
}

/** As is when plain, else one double-quoted line (valid YAML wherever a key or value stands). */
function plainOrQuoted(s: string): string {
  return /^[A-Za-z0-9_-]+$/.test(s) ? s : JSON.stringify(s);
}

/** Which flag a config key path came from. */
function flagForKey(keyPath: string, target: string): string {
  const t = `targets.${target}.`;
  if (keyPath === 'targets' || keyPath === 'loop.target') return FLAG_OF.target;
  if (keyPath.startsWith(`${t}editable`)) return FLAG_OF.editable;
  if (keyPath.startsWith(`${t}protected`)) return FLAG_OF.protected;
  if (keyPath.startsWith(`${t}correctness`)) return FLAG_OF.testCommand;
  if (keyPath.startsWith(`${t}bench.metric.direction`)) return FLAG_OF.direction;
  if (keyPath.startsWith(`${t}bench.metric`) || keyPath.startsWith(`${t}bench.mfu_path`))
    return FLAG_OF.metric;
  if (keyPath.startsWith(`${t}programs`)) return FLAG_OF.programs;
  if (keyPath.startsWith('agent.command')) return FLAG_OF.agentCommand;
  if (keyPath.startsWith('agent')) return FLAG_OF.agent;
  if (keyPath.startsWith('forge.base')) return FLAG_OF.base;
  return CONFIG_FILE;
}

/**
 * Validate config text with the engine's own loader (schema and cross-field rules) as if it were
 * `<root>/hillclimb.yml`; a problem becomes an error naming the flag it came from.
 */
export function validateConfigText(text: string, root: string, target: string): HillclimbConfig {
  const file = join(root, CONFIG_FILE);
  try {
    return parseConfig(text, file);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    const where = e.line === undefined ? file : `${file}:${e.line}`;
    const prefix = `${where}: ${e.keyPath === '' ? '' : `${e.keyPath}: `}`;
    const problem = e.message.startsWith(prefix) ? e.message.slice(prefix.length) : e.message;
    throw badFlag(flagForKey(e.keyPath, target), `${e.keyPath ? `${e.keyPath} ` : ''}${problem}`, e.hint);
  }
}
