/**
 * `hillclimb init --add-target`: one more target in a hillclimb.yml that already has some. The new
 * target's entry goes under `targets:` as init writes one; every other line of the file (the other
 * targets, the user's edits and comments) stays as it is. The agent, requirements and default branch are
 * the repository's, read from the file, never asked again.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parse, parseDocument } from 'yaml';
import { type HillclimbConfig, loadConfig } from '../config/index.js';
import { ExitCode, HillclimbError } from '../util/index.js';
import { CONFIG_FILE, type InitAgent, type TargetAnswers, targetBlock } from './answers.js';

/** What `init --add-target` takes from the hillclimb.yml already there instead of asking. */
export interface ExistingRepository {
  /** The targets already configured, in file order. */
  targets: readonly string[];
  agent: InitAgent;
  requirements: string;
  base: string;
  /** agent.replay.dir: the new target's patches go in a folder of its own under it. */
  replayDir: string;
  config: HillclimbConfig;
  /** The file's text, which the new target is added to. */
  text: string;
}

/** The repository's hillclimb.yml, valid, for adding a target; a clear error when there is none. */
export function readExistingRepository(root: string): ExistingRepository {
  const file = join(root, CONFIG_FILE);
  if (!existsSync(file)) {
    throw new HillclimbError(`hillclimb init --add-target: no ${CONFIG_FILE} in ${root}`, {
      hint: 'run hillclimb init (without --add-target) for the first target',
      exitCode: ExitCode.badInput,
    });
  }
  const config = loadConfig(file); // an invalid file is refused here, naming its key and line
  return {
    targets: Object.keys(config.targets),
    agent: config.agent.kind,
    requirements: config.paths.requirements,
    base: config.forge.base,
    replayDir: config.agent.replay.dir,
    config,
    text: readFileSync(file, 'utf8'),
  };
}

/**
 * `text` with the target added under `targets:`. Inserted as text after the last target, so nothing else
 * moves; where the file's layout does not allow that (a flow mapping, another indent), through the YAML
 * document instead, which keeps the comments but may re-indent.
 */
export function addTargetText(text: string, answers: TargetAnswers): string {
  const before = parse(text) as { targets: Record<string, unknown> };
  const block = targetBlock(answers);
  const expected = (after: string) => {
    const t = (parse(after) as { targets?: Record<string, unknown> }).targets ?? {};
    const { [answers.target]: added, ...rest } = t;
    return added !== undefined && isDeepStrictEqual(rest, before.targets) ? after : undefined;
  };
  const inserted = insertUnderTargets(text, block);
  const viaText = inserted === undefined ? undefined : tryParse(() => expected(inserted));
  if (viaText !== undefined) return viaText;
  const doc = parseDocument(text);
  const entry = parse(block.map((l) => l.slice(2)).join('\n')) as Record<string, unknown>;
  doc.setIn(['targets', answers.target], doc.createNode(entry[answers.target]));
  return String(doc);
}

function tryParse<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch {
    return undefined;
  }
}

/** The block inserted after the last line of the top-level `targets:` mapping; undefined if none is found. */
function insertUnderTargets(text: string, block: readonly string[]): string | undefined {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => /^targets:\s*(#.*)?$/.test(l));
  if (start === -1) return undefined;
  let end = lines.findIndex((l, i) => i > start && /^[^\s#]/.test(l));
  if (end === -1) end = lines.length;
  // Blank lines and column-0 comments before the next key belong to that key.
  while (end > start + 1 && /^(\s*|#.*)$/.test(lines[end - 1]!)) end--;
  if (end === start + 1) return undefined;
  return [...lines.slice(0, end), ...block, ...lines.slice(end)].join('\n');
}
