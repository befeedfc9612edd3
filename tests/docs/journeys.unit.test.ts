// The journey markers themselves (issue 37), without running anything: every command block of every
// page is marked (run, or skipped with a reason), every marker names a journey the suite has, every
// phrase a marker expects is the page's own, and every rule of a journey still meets its command. What
// the markers make the suite run is tests/docs/journeys.int.test.ts.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/paths.js';
import { fencedBlocks, readMarkers, readPage, SHELL_LANGS } from './journeys/markers.js';
import { allMarkers, JOURNEY_PAGES, planJourney } from './journeys/plan.js';
import { JOURNEYS, RUN_ELSEWHERE } from './journeys/registry.js';
import { commandsOf, linePattern, resolveCommand, unmatchedLines } from './journeys/steps.js';

const ALL_PAGES = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(join(REPO_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

const markers = allMarkers();
const names = new Set([...JOURNEYS.map((j) => j.name), ...Object.keys(RUN_ELSEWHERE)]);

describe('journey markers in the docs', () => {
  it('cover the pages the journeys must walk', () => {
    for (const page of ['docs/setup.md', 'docs/user-guide.md', 'docs/reports.md', 'docs/troubleshooting.md'])
      expect(
        markers.some((m) => m.page === page && m.kind !== 'skip'),
        page,
      ).toBe(true);
    // The quick start is the demo: too slow for the suite, so skipped here with the test that runs it.
    const quickStart = markers.filter((m) => m.journey === 'quick-start');
    expect(quickStart.map((m) => (m.kind === 'skip' ? m.reason : m.kind))).toContain(
      'the demo takes minutes on the GDN kernel; tests/loop/demo.int.test.ts runs its `hillclimb demo`',
    );
    expect(readFileSync(join(REPO_ROOT, 'tests', 'loop', 'demo.int.test.ts'), 'utf8')).toContain(
      "'demo', '--json'",
    );
  });

  it('mark every command block of every page, run or skipped with a reason, and only on listed pages', () => {
    const unmarked: string[] = [];
    for (const page of ALL_PAGES) {
      const pageMarkers = readMarkers(page);
      if (pageMarkers.length > 0) expect(JOURNEY_PAGES, `${page} has journey markers`).toContain(page);
      const marked = new Set(
        pageMarkers.flatMap((m) => ('block' in m && m.kind !== 'output' ? [m.block.line] : [])),
      );
      for (const b of fencedBlocks(page))
        if (SHELL_LANGS.has(b.lang) && !marked.has(b.line)) unmarked.push(`${page}:${b.line}`);
    }
    expect(
      unmarked,
      'put <!-- journey: NAME --> (a journey of tests/docs/journeys/registry.ts) or <!-- journey: NAME skip: WHY --> on the line above each block',
    ).toEqual([]);
  });

  it('mark every message troubleshooting.md quotes: checked as printed, or skipped with what covers it', () => {
    const page = 'docs/troubleshooting.md';
    const checked = new Set(
      readMarkers(page).flatMap((m) => (m.kind === 'output' || m.kind === 'skip' ? [m.block.line] : [])),
    );
    const quoted = fencedBlocks(page).filter((b) => b.lang === 'text');
    expect(quoted.length).toBeGreaterThan(15);
    expect(quoted.filter((b) => !checked.has(b.line)).map((b) => `${page}:${b.line}`)).toEqual([]);
  });

  it('name journeys the suite has, and every journey has markers', () => {
    expect(markers.filter((m) => !names.has(m.journey) && m.kind !== 'skip').map((m) => m.journey)).toEqual(
      [],
    );
    for (const name of names)
      expect(
        markers.some((m) => m.journey === name && m.kind !== 'skip'),
        name,
      ).toBe(true);
    for (const [name, file] of Object.entries(RUN_ELSEWHERE))
      expect(readFileSync(join(REPO_ROOT, file), 'utf8'), file).toContain(`'${name}'`);
  });

  it('skip only with a reason that says what covers it or why it cannot run', () => {
    for (const m of markers)
      if (m.kind === 'skip') expect(m.reason.length, `${m.page}:${m.line}`).toBeGreaterThan(25);
  });

  it('expect only phrases the page itself shows', () => {
    for (const m of markers) {
      if (m.kind !== 'expects') continue;
      // The prose wraps where the page does: compare with every run of white space as one space.
      const prose = readPage(m.page)
        .split('\n')
        .filter((l) => !l.trimStart().startsWith('<!-- journey'))
        .join(' ')
        .replace(/\s+/g, ' ');
      expect(prose, `${m.page}:${m.line}`).toContain(m.text.replace(/\s+/g, ' '));
    }
  });

  it('give each journey rules that still meet a command, and a value for every placeholder it runs', () => {
    for (const j of JOURNEYS) {
      const steps = planJourney(j.name, markers, j.skip);
      const run = steps.flatMap((s) => (s.kind === 'command' ? [s] : []));
      const skipped = steps.flatMap((s) => (s.kind === 'skipped' ? [s] : []));
      for (const rule of j.rules ?? [])
        expect(
          run.some((s) => rule.command.test(s.text)),
          `${j.name}: ${rule.command}`,
        ).toBe(true);
      for (const skip of j.skip ?? [])
        expect(
          skipped.some((s) => skip.command.test(s.text)),
          `${j.name}: ${skip.command}`,
        ).toBe(true);
      const values = Object.fromEntries(Object.keys(j.placeholders ?? {}).map((k) => [k, 'x']));
      for (const s of run) expect(() => resolveCommand(s.text, values, s.where)).not.toThrow();
    }
  });
});

describe('the journey machinery', () => {
  const page = 'x.md';
  const doc = [
    'Text.',
    '<!-- journey: j -->',
    '```sh',
    'node bin/hillclimb.js measure --base main \\',
    '  --pr <n>   # and post it',
    '# a comment line',
    "hillclimb init --editable 'src/**' # asks",
    '```',
    '<!-- journey: j output: 2 -->',
    '```text',
    'error: one',
    'hint: <module> is not a module: no <path>.py is committed',
    '```',
  ].join('\n');

  it('reads a block’s commands as typed: continuations joined, comments dropped, the checkout’s bin as hillclimb', () => {
    const [commands, output] = readMarkers(page, doc);
    expect(commands?.kind).toBe('commands');
    if (commands?.kind !== 'commands') return;
    expect(commandsOf(commands.block).map((c) => c.text)).toEqual([
      'node bin/hillclimb.js measure --base main --pr <n>',
      "hillclimb init --editable 'src/**'",
    ]);
    expect(planJourney('j', [commands]).map((s) => (s.kind === 'command' ? s.text : s.kind))).toEqual([
      'hillclimb measure --base main --pr <n>',
      "hillclimb init --editable 'src/**'",
    ]);
    expect(output).toMatchObject({ kind: 'output', only: [2] });
  });

  it('fills documented placeholders only', () => {
    expect(resolveCommand('hillclimb pr show <n>', { n: '4' }, 'x.md:1')).toBe('hillclimb pr show 4');
    expect(() => resolveCommand('hillclimb pr show <pr>', { n: '4' }, 'x.md:1')).toThrow(
      'x.md:1: the journey gives no value for <pr>',
    );
  });

  it('checks documented output line by line, placeholders standing for any text', () => {
    const lines = ['error: one', 'hint: <module> is not a module: no <path>.py is committed'];
    const printed = 'error: one\nhint: harness.program is not a module: no harness/program.py is committed\n';
    expect(unmatchedLines(lines, null, printed)).toEqual([]);
    // A reworded message, or a doc line the command does not print, is a failure naming the line.
    expect(unmatchedLines(lines, [2], printed.replace('is not a module', 'is no module'))).toEqual([
      lines[1],
    ]);
    expect(linePattern('a (b) <x> c.').test('a (b) anything c.')).toBe(true);
    expect(linePattern('a (b) <x> c.').test('a b anything c.')).toBe(false);
  });

  it('refuses a marker that is malformed or stands away from its block, naming the line', () => {
    expect(() => readMarkers(page, '<!-- journey: j -->\n\n```sh\nls\n```')).toThrow('x.md:1');
    expect(() => readMarkers(page, '<!-- journey: j frobnicate -->')).toThrow(
      'x.md:1: unknown journey marker',
    );
    expect(() => readMarkers(page, '<!-- journey: J -->')).toThrow('x.md:1: a journey marker reads');
    expect(() => readMarkers(page, '<!-- journey: j output: 9 -->\n```text\na\n```')).toThrow(
      'x.md:1: output lines 9',
    );
  });

  it('has no stale file behind RUN_ELSEWHERE', () => {
    for (const file of Object.values(RUN_ELSEWHERE)) expect(existsSync(join(REPO_ROOT, file))).toBe(true);
  });
});
