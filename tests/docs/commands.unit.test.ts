// Every `hillclimb …` command the docs tell a user to run names a command and options the CLI has
// (issue 37): a flag renamed or dropped in the code, or mistyped in a doc, fails here with the page
// and line. The commands' behaviour is walked by the journey tests (tests/init, tests/loop, …); this
// keeps the words in the docs and the parser in step.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/main.js';
import { REPO_ROOT } from '../helpers/paths.js';

const PAGES = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(join(REPO_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** How the docs start a command: the installed bin, npx, or this checkout's bin. */
const PREFIX = /^(?:\$\s+)?(?:npx\s+)?(?:hillclimb|node\s+bin\/hillclimb\.js)\s+(.*)$/;

const SHELL_FENCES = new Set(['', 'sh', 'bash', 'shell', 'console']);

interface DocCommand {
  where: string;
  text: string;
  words: string[];
}

/** Split a command line into words, shell-like enough for docs: quotes group, `#` starts a comment. */
function words(line: string): string[] {
  const out: string[] = [];
  let word = '';
  let quote: string | null = null;
  let any = false;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) quote = null;
      else word += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      any = true;
    } else if (ch === '#' && !any && word === '') {
      break;
    } else if (/\s/.test(ch)) {
      if (word || any) out.push(word);
      word = '';
      any = false;
    } else {
      word += ch;
      any = true;
    }
  }
  if (word || any) out.push(word);
  return out;
}

/** The `hillclimb …` lines of every fenced block of a page, continuation lines joined. */
function commandsOf(page: string): DocCommand[] {
  const lines = readFileSync(join(REPO_ROOT, page), 'utf8').split('\n');
  const found: DocCommand[] = [];
  let fence: string | null = null; // the open fence's language; null outside a fence
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    const open = /^(`{3,})(\S*)/.exec(line);
    if (open) {
      fence = fence === null ? open[2]! : null;
      continue;
    }
    // Commands live in shell blocks and bare ones; text blocks quote output, others are code.
    if (fence === null || !SHELL_FENCES.has(fence)) continue;
    let text = line;
    const first = i;
    while (text.endsWith('\\') && i + 1 < lines.length) text = `${text.slice(0, -1)} ${lines[++i]!.trim()}`;
    for (const part of text.split(/\s*(?:&&|\|\||;|\|)\s*/)) {
      const m = PREFIX.exec(part);
      if (m) found.push({ where: `${page}:${first + 1}`, text: part, words: words(m[1]!) });
    }
  }
  return found;
}

/** The options a command accepts: its own, and the program's (`--root`, `--help`). */
function optionNames(cmd: Command, root: Command): Set<string> {
  const names = new Set(['--help', '-h']);
  for (const c of [cmd, root]) {
    for (const o of c.options) {
      if (o.long) names.add(o.long);
      if (o.short) names.add(o.short);
      // --no-profile also accepts --profile, and the reverse.
      if (o.long?.startsWith('--no-')) names.add(`--${o.long.slice(5)}`);
    }
  }
  return names;
}

/** What is wrong with one documented command; empty when the CLI accepts its words. */
function problems(program: Command, c: DocCommand): string[] {
  let cmd = program;
  let rest = c.words;
  // Walk the subcommands the words name (`tpu allocate`, `trace diff`, `pr show`).
  while (rest.length > 0 && !rest[0]!.startsWith('-')) {
    const sub = cmd.commands.find((s) => s.name() === rest[0] || s.aliases().includes(rest[0]!));
    if (!sub) break;
    cmd = sub;
    rest = rest.slice(1);
  }
  if (cmd === program) {
    const verb = rest[0];
    if (verb === undefined || verb.startsWith('-'))
      return verb === '--help' || verb === '--version' ? [] : [];
    return [`${c.where}: \`hillclimb ${c.words.join(' ')}\`: hillclimb has no command ${verb}`];
  }
  const known = optionNames(cmd, program);
  const out: string[] = [];
  for (const w of rest) {
    if (w === '--') break;
    if (!w.startsWith('-') || /^-\d/.test(w) || w === '-') continue;
    const flag = w.split('=')[0]!;
    // Placeholders such as --<flag> in prose-like blocks are not options.
    if (flag.includes('<') || flag.includes('…')) continue;
    if (!known.has(flag))
      out.push(`${c.where}: \`hillclimb ${c.words.join(' ')}\`: ${cmd.name()} has no option ${flag}`);
  }
  return out;
}

describe('commands in the docs', () => {
  const program = buildProgram({ stdout: () => {}, stderr: () => {} } as never, () => {});
  const all = PAGES.flatMap(commandsOf);

  it('finds the commands the pages show', () => {
    // The quick start, setup and the user guide each show several: a broken extraction finds none.
    expect(all.length).toBeGreaterThan(20);
    expect(all.some((c) => c.where.startsWith('docs/setup.md'))).toBe(true);
    expect(all.some((c) => c.words[0] === 'measure')).toBe(true);
  });

  it('name commands and options the CLI has', () => {
    expect(all.flatMap((c) => problems(program, c))).toEqual([]);
  });

  it('fail on a flag the CLI does not have, and on a verb it does not know', () => {
    const bad: DocCommand[] = [
      { where: 'x.md:1', text: '', words: ['measure', '--base', 'main', '--heads', 'b'] },
      { where: 'x.md:2', text: '', words: ['mesure', '--base', 'main'] },
      { where: 'x.md:3', text: '', words: ['trace', 'diff', '--no-such-flag'] },
    ];
    expect(bad.map((c) => problems(program, c).length)).toEqual([1, 1, 1]);
    expect(words(`loop -n 2 --agent "codex" # two`)).toEqual(['loop', '-n', '2', '--agent', 'codex']);
  });
});
