import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { IterationEvidence } from '../../src/evidence/record.js';
import { appendLogEntry, renderLogEntry } from '../../src/report/log-entry.js';
import { evidenceLoader } from '../../src/report/log-evidence.js';
import {
  type EvidenceLoader,
  formatProblem,
  hasErrors,
  type LintProblem,
  lintLog,
} from '../../src/report/log-lint.js';
import { tempDir } from '../helpers/paths.js';
import { everyVerdict, IMPROVED, measured } from './builders.js';

/** A log of every verdict, each with its own evidence path, and a loader that finds them. */
function freshLog(): { text: string; load: EvidenceLoader; byPath: Map<string, IterationEvidence> } {
  const byPath = new Map<string, IterationEvidence>();
  let text: string | undefined;
  everyVerdict().forEach(([, ev], i) => {
    ev.iteration = i + 1;
    const path = `runs/r1/i00${i + 1}/evidence.json`;
    byPath.set(path, ev);
    text = appendLogEntry(text, renderLogEntry(ev, { evidencePath: path }));
  });
  const load: EvidenceLoader = (path) => {
    const ev = byPath.get(path);
    return ev ? { status: 'found', evidence: ev } : { status: 'missing', reason: 'not in the test map' };
  };
  return { text: text!, load, byPath };
}

const lineOf = (text: string, needle: string): number =>
  text.split('\n').findIndex((l) => l.includes(needle)) + 1;
const rules = (problems: LintProblem[]) => problems.map((p) => `${p.line}:${p.severity}:${p.rule}`);

describe('lintLog on a freshly rendered log', () => {
  it('passes with every entry checked against its evidence', () => {
    const { text, load } = freshLog();
    expect(lintLog(text, { scope: 'all', loadEvidence: load, requireEvidence: true })).toEqual([]);
    expect(lintLog(text, { loadEvidence: load })).toEqual([]);
  });

  it('passes with the loop’s resume tag after an entry', () => {
    const { text, load } = freshLog();
    expect(
      lintLog(`${text}<!-- hillclimb:iteration r1/9 -->\n`, { scope: 'all', loadEvidence: load }),
    ).toEqual([]);
  });
});

describe('no numbers absent from evidence', () => {
  it('catches a hand-edited number in a harness line', () => {
    const { text, load } = freshLog();
    const edited = text.replace('12.31 ms → 10.02 ms', '12.31 ms → 9.02 ms');
    const problems = lintLog(edited, { scope: 'all', loadEvidence: load });
    const line = lineOf(edited, '→ 9.02 ms');
    expect(problems).toEqual([
      {
        line,
        severity: 'error',
        rule: 'harness-line-edited',
        message: expect.stringContaining('"9.02 ms" not in the evidence'),
      },
    ]);
    expect(problems[0]!.message).toContain(
      'expected: - Measurement: fwd+bwd time 12.31 ms → 10.02 ms, −18.6% [−20.1%, −17.0%] (n=5+5)',
    );
  });

  it('catches a number with a unit added to a harness line', () => {
    const { text, load } = freshLog();
    const edited = text.replace(
      '- Verdict: ✓ improved\n',
      '- Verdict: ✓ improved (30% faster, 2x in places)\n',
    );
    const problems = lintLog(edited, { scope: 'all', loadEvidence: load });
    expect(rules(problems)).toEqual([`${lineOf(edited, '30% faster')}:error:harness-line-edited`]);
    expect(problems[0]!.message).toContain('"30%", "2x" not in the evidence');
  });

  it('catches a number with a unit in a free line, but not one the evidence has', () => {
    const { text, load } = freshLog();
    const anchor = '- Evidence: `runs/r1/i001/evidence.json`\n';
    const edited = text.replace(
      anchor,
      `${anchor}Note: really 25% faster and 1.3 TFLOP/s; the time fell 18.6% to 10.02ms.\n`,
    );
    const problems = lintLog(edited, { scope: 'all', loadEvidence: load });
    expect(problems).toHaveLength(1);
    expect(problems[0]!.rule).toBe('number-not-in-evidence');
    expect(problems[0]!.message).toBe('"25%", "1.3 TFLOP/s" not in the evidence');
  });

  it('exempts the agent’s quoted words', () => {
    const { text, load } = freshLog();
    const edited = text.replace('> agent summary: Tiled', '> agent summary: 99% faster, 0.1 ms. Tiled');
    expect(edited).not.toBe(text);
    expect(lintLog(edited, { scope: 'all', loadEvidence: load })).toEqual([]);
  });

  it('catches deleted and added harness lines', () => {
    const { text, load } = freshLog();
    const deleted = text.replace('- MFU: n/a on CPU\n', '');
    const problems = lintLog(deleted, { scope: 'all', loadEvidence: load });
    expect(problems.map((p) => p.rule)).toEqual(['harness-line-missing']);
    expect(problems[0]!.message).toBe('harness line missing: - MFU: n/a on CPU');
    expect(problems[0]!.line).toBe(lineOf(deleted, '### Iteration 1 '));

    const added = text.replace('- MFU: n/a on CPU\n', '- MFU: n/a on CPU\n- MFU: 45.00%\n');
    const extra = lintLog(added, { scope: 'all', loadEvidence: load });
    expect(rules(extra)).toEqual([`${lineOf(added, '- MFU: 45.00%')}:error:harness-line-extra`]);
    expect(extra[0]!.message).toContain('"45.00%" not in the evidence');
  });

  it('catches an edited heading and evidence that changed after rendering', () => {
    const { text, load, byPath } = freshLog();
    const heading = text.replace(
      '### Iteration 1 — Tile the chunk loop',
      '### Iteration 1 — Tile the whole loop',
    );
    expect(lintLog(heading, { scope: 'all', loadEvidence: load }).map((p) => p.rule)).toEqual([
      'heading-edited',
    ]);

    byPath.get('runs/r1/i001/evidence.json')!.measurement!.comparison!.b.median = 9.5;
    const problems = lintLog(text, { scope: 'all', loadEvidence: load });
    expect(problems.map((p) => p.rule)).toEqual(['evidence-changed', 'harness-line-edited']);
  });

  it('checks only the last entry by default', () => {
    const { text, load } = freshLog();
    const edited = text.replace('12.31 ms → 10.02 ms', '12.31 ms → 9.02 ms');
    expect(lintLog(edited, { loadEvidence: load })).toEqual([]);
    expect(hasErrors(lintLog(edited, { scope: 'all', loadEvidence: load }))).toBe(true);
  });
});

describe('evidence availability', () => {
  it('warns per entry when the evidence is missing, and fails only when required', () => {
    const { text } = freshLog();
    const warned = lintLog(text, { scope: 'all' });
    expect(warned).toHaveLength(9);
    expect(warned.every((p) => p.severity === 'warning' && p.rule === 'evidence-missing')).toBe(true);
    expect(warned[0]!.message).toBe(
      'evidence runs/r1/i001/evidence.json not available (no evidence location given); numbers not checked',
    );
    expect(hasErrors(warned)).toBe(false);
    expect(hasErrors(lintLog(text, { scope: 'all', requireEvidence: true }))).toBe(true);
  });

  it('warns about a hand-written entry without an evidence reference', () => {
    const text = '### Iteration 1 - tiling\n- Commit: abc123\n- MFU/throughput delta: 5%\n';
    expect(lintLog(text)).toEqual([
      {
        line: 1,
        severity: 'warning',
        rule: 'evidence-missing',
        message: 'entry names no evidence file; its numbers cannot be checked',
      },
    ]);
  });

  it('reports a malformed reference and an unknown format', () => {
    expect(lintLog('### Iteration 1 — x\n<!-- hillclimb:evidence oops -->\n').map((p) => p.rule)).toEqual([
      'evidence-reference',
    ]);
    const future = `### Iteration 1 — x\n<!-- hillclimb:evidence runs/a/evidence.json sha256=${'0'.repeat(64)} format=5 -->\n`;
    expect(lintLog(future).map((p) => `${p.severity}:${p.rule}`)).toEqual(['warning:entry-format']);
  });

  it('finds evidence on disk under its roots and refuses paths that leave them', () => {
    const t = tempDir();
    try {
      const ev = measured(IMPROVED);
      mkdirSync(join(t.dir, 'store', 'runs', 'r1', 'i003'), { recursive: true });
      writeFileSync(join(t.dir, 'store', 'runs', 'r1', 'i003', 'evidence.json'), JSON.stringify(ev));
      mkdirSync(join(t.dir, 'runs', 'bad'), { recursive: true });
      writeFileSync(join(t.dir, 'runs', 'bad', 'evidence.json'), '{not json');
      writeFileSync(join(t.dir, 'runs', 'bad', 'other.json'), '{"schema":"x"}');
      const load = evidenceLoader([t.dir, join(t.dir, 'store')]);
      expect(load('runs/r1/i003/evidence.json')).toEqual({ status: 'found', evidence: ev });
      expect(load('runs/r1/i004/evidence.json').status).toBe('missing');
      expect(load('runs/bad/evidence.json')).toMatchObject({
        status: 'unreadable',
        reason: expect.stringContaining('invalid JSON'),
      });
      expect(load('runs/bad/other.json')).toMatchObject({
        status: 'unreadable',
        reason: expect.stringContaining('schema x'),
      });
      expect(load('../etc/passwd').status).toBe('unreadable');
      expect(load('https://hf.co/x/evidence.json').status).toBe('missing');
    } finally {
      t.cleanup();
    }
  });
});

describe('gdnctl rules', () => {
  const entry = (n: string) => `### Iteration ${n} - x\n- Commit: abc\n`;
  const headingsOnly = (problems: LintProblem[]) => problems.filter((p) => p.rule === 'monotonic');

  it('rejects commit placeholders with their line numbers', () => {
    const text = `${entry('1')}- Commit: (pending)\n   - Commit: this commit  \n`;
    const problems = lintLog(text).filter((p) => p.rule === 'placeholder');
    expect(problems.map((p) => [p.line, p.message])).toEqual([
      [3, 'placeholder "- Commit: (pending)": the commit must be stamped'],
      [4, 'placeholder "- Commit: this commit": the commit must be stamped'],
    ]);
  });

  it('checks placeholders only in scope', () => {
    const text = `${entry('1')}- Commit: (pending)\n${entry('2')}`;
    expect(lintLog(text).filter((p) => p.rule === 'placeholder')).toEqual([]);
    expect(lintLog(text, { scope: 'all' }).filter((p) => p.rule === 'placeholder')).toHaveLength(1);
  });

  it('does not also call a placeholder an edited harness line', () => {
    const { text, load } = freshLog();
    const last = text.lastIndexOf('- Commit: none (the agent made no commit)');
    const edited = `${text.slice(0, last)}- Commit: (pending)${text.slice(last + '- Commit: none (the agent made no commit)'.length)}`;
    expect(lintLog(edited, { loadEvidence: load }).map((p) => p.rule)).toEqual(['placeholder']);
  });

  it.each([
    [['3', '2'], 'iteration number decreased (2 after 3)'],
    [['3', '3'], 'duplicate iteration number (3 after 3)'],
    [['3a', '3'], 'sub-iteration returned to base number (3 after 3a)'],
    [['3b', '3a'], 'sub-iteration suffix not increasing (3a after 3b)'],
    [['3a', '3a'], 'sub-iteration suffix not increasing (3a after 3a)'],
  ])('headings %j: %s', (numbers, message) => {
    const text = numbers.map(entry).join('');
    expect(headingsOnly(lintLog(text))).toEqual([{ line: 3, severity: 'error', rule: 'monotonic', message }]);
    expect(headingsOnly(lintLog(text, { allowNonMonotonic: true }))).toEqual([]);
  });

  it('accepts 12 → 12a → 12b → 13, checks order over the whole file, and ignores non-matching headings', () => {
    expect(headingsOnly(lintLog(['12', '12a', '12b', '13'].map(entry).join(''), { scope: 'all' }))).toEqual(
      [],
    );
    // The decrease is before the last entry: still reported in the default scope.
    expect(headingsOnly(lintLog(['5', '4', '6'].map(entry).join('')))).toHaveLength(1);
    expect(headingsOnly(lintLog(`${entry('5')}### Iteration 5x1 - not a heading\n${entry('6')}`))).toEqual(
      [],
    );
  });

  it('formats one line per problem', () => {
    const [problem] = lintLog(`${entry('2')}${entry('1')}`);
    expect(formatProblem('docs/hillclimb-log.md', problem!)).toBe(
      'docs/hillclimb-log.md:3: error: iteration number decreased (1 after 2) [monotonic]',
    );
  });
});
