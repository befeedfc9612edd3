/**
 * The journey markers in the docs (issue 37): HTML comments, invisible on GitHub, that tie a page's
 * command blocks and quoted output to the journey suite (tests/docs/journeys.int.test.ts).
 *
 *   <!-- journey: NAME -->               before a fenced block: run its commands, in order
 *   <!-- journey: NAME output -->        before a fenced block: the lines the journey's last command prints
 *   <!-- journey: NAME output: 1,3 -->   …only those lines of the block (the others are another case's)
 *   <!-- journey: NAME skip: WHY -->     before a fenced block: not run, and why (reported, never silent)
 *   <!-- journey: NAME run `CMD` -->     a command the prose names inline (or a troubleshooting case's own)
 *   <!-- journey: NAME expects `TEXT` --> the journey's last command prints TEXT, which the page's prose shows
 *
 * A marker is one whole line (indented like its block). Markers of one journey run in page order.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../helpers/paths.js';

/** A fenced block: where its fence opens (1-based), its language and its lines. */
export interface FencedBlock {
  page: string;
  line: number;
  lang: string;
  lines: string[];
}

interface At {
  journey: string;
  page: string;
  /** The marker's own line, 1-based. */
  line: number;
}

export type Marker =
  | (At & { kind: 'commands'; block: FencedBlock })
  | (At & { kind: 'output'; block: FencedBlock; only: number[] | null })
  | (At & { kind: 'skip'; block: FencedBlock; reason: string })
  | (At & { kind: 'run'; command: string })
  | (At & { kind: 'expects'; text: string });

/** The languages of blocks a user is told to run. */
export const SHELL_LANGS = new Set(['sh', 'bash', 'shell', 'console']);

const MARKER = /^<!-- journey: ([a-z0-9-]+)(?: (.*?))? -->$/;

/** A page's text, by its path from the repository root. */
export function readPage(page: string): string {
  return readFileSync(join(REPO_ROOT, page), 'utf8');
}

/** Every fenced block of a page (``` or longer fences; a longer fence holds shorter ones). */
export function fencedBlocks(page: string, text = readPage(page)): FencedBlock[] {
  const lines = text.split('\n');
  const blocks: FencedBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,})(\S*)\s*$/.exec(lines[i]!.trim());
    if (!open) continue;
    const fence = open[1]!;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && lines[j]!.trim() !== fence) body.push(lines[j++]!);
    blocks.push({ page, line: i + 1, lang: open[2]!, lines: body });
    i = j;
  }
  return blocks;
}

function inlineCode(rest: string, verb: string, where: string): string {
  const m = new RegExp(`^${verb} \`([^\`]+)\`$`).exec(rest);
  if (!m) throw new Error(`${where}: write the marker as ${verb} \`…\``);
  return m[1]!;
}

/** The journey markers of a page; a malformed one throws, naming its page and line. */
export function readMarkers(page: string, text = readPage(page)): Marker[] {
  const lines = text.split('\n');
  const blocks = new Map(fencedBlocks(page, text).map((b) => [b.line, b]));
  const markers: Marker[] = [];
  for (const [i, raw] of lines.entries()) {
    if (!raw.trimStart().startsWith('<!-- journey')) continue;
    const where = `${page}:${i + 1}`;
    const m = MARKER.exec(raw.trim());
    if (!m) throw new Error(`${where}: a journey marker reads <!-- journey: <name> [what] -->`);
    const at: At = { journey: m[1]!, page, line: i + 1 };
    const rest = m[2] ?? '';
    // Markers stacked right above a fence all belong to it (several journeys may check one block).
    let next = i + 1;
    while (lines[next]?.trimStart().startsWith('<!-- journey')) next++;
    const block = blocks.get(next + 1);
    const needsBlock = () => {
      if (!block) throw new Error(`${where}: this marker must stand right above a fenced block`);
      return block;
    };
    if (rest === '') markers.push({ ...at, kind: 'commands', block: needsBlock() });
    else if (rest === 'output' || rest.startsWith('output: ')) {
      const b = needsBlock();
      const only = rest === 'output' ? null : rest.slice('output: '.length).split(',').map(Number);
      if (only?.some((n) => !Number.isInteger(n) || n < 1 || n > b.lines.length))
        throw new Error(
          `${where}: output lines ${only.join(',')} are not lines 1..${b.lines.length} of the block`,
        );
      markers.push({ ...at, kind: 'output', block: b, only });
    } else if (rest.startsWith('skip: ')) {
      const reason = rest.slice('skip: '.length).trim();
      markers.push({ ...at, kind: 'skip', block: needsBlock(), reason });
    } else if (rest.startsWith('run '))
      markers.push({ ...at, kind: 'run', command: inlineCode(rest, 'run', where) });
    else if (rest.startsWith('expects '))
      markers.push({ ...at, kind: 'expects', text: inlineCode(rest, 'expects', where) });
    else
      throw new Error(`${where}: unknown journey marker "${rest}" (commands, output, skip:, run, expects)`);
  }
  return markers;
}

/** A marker's name in reports and test titles. */
export function markerId(m: Marker): string {
  return `${m.page}:${m.line} ${m.journey} ${m.kind}`;
}
