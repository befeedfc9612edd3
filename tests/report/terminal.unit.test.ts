import { describe, expect, it } from 'vitest';
import { progressLine, runTable, textTable } from '../../src/report/terminal.js';
import {
  errored,
  everyVerdict,
  IMPROVED,
  invalidByCpuGate,
  invalidByGuard,
  measured,
  noOp,
} from './builders.js';

describe('progressLine', () => {
  const ev = measured(IMPROVED);

  it('shows each step’s harness numbers', () => {
    expect(progressLine(ev, 'propose')).toBe(
      '[i003 propose] agent codex finished in 4 min 12 s: commit 1a2b3c4d5e “Tile the chunk loop over K by 128”',
    );
    expect(progressLine(ev, 'guard')).toBe('[i003 guard] passed, 1 path changed');
    expect(progressLine(ev, 'cpu-gate')).toBe(
      '[i003 cpu-gate] passed, 128 tests: 126 passed, 2 skipped (41.2 s)',
    );
    expect(progressLine(ev, 'measure')).toBe(
      '[i003 measure] A 12.31 ms · B 10.02 ms (n=5+5) · −18.6% [−20.1%, −17.0%]',
    );
    expect(progressLine(ev, 'profile')).toBe(
      '[i003 profile] step 12.00 ms → 10.00 ms (−16.7%); top Δ gdn_chunk_fwd −1.310 ms',
    );
    expect(progressLine(ev, 'decide')).toBe(
      '[i003 decide] ✓ improved: fwd+bwd time −18.6% [−20.1%, −17.0%] (n=5+5)',
    );
  });

  it('shows medians so far while measuring, with failed runs', () => {
    const running = measured(IMPROVED);
    const m = running.measurement!;
    delete m.comparison;
    m.runs = m.runs.slice(0, 5);
    m.runs[4]!.value = null;
    expect(progressLine(running, 'measure')).toBe('[i003 measure] A 12.24 ms · B 10.03 ms (n=2+2, 1 failed)');
  });

  it('falls back to the step record or a note, and says when a step failed or was skipped', () => {
    const failed = invalidByCpuGate();
    failed.steps['cpu-gate'] = { status: 'done', startedAt: 'a', finishedAt: 'b' };
    expect(progressLine(failed, 'cpu-gate')).toBe(
      '[i003 cpu-gate] failed, 128 tests: 123 passed, 3 failed, 2 skipped — 3 of 128 tests failed (43.9 s)',
    );
    const skipped = invalidByGuard();
    skipped.steps.measure = {
      status: 'skipped',
      startedAt: 'a',
      finishedAt: 'b',
      note: 'verdict already invalid',
    };
    expect(progressLine(skipped, 'measure')).toBe('[i003 measure] skipped: verdict already invalid');
    expect(progressLine(skipped, 'prepare', 'worktrees ready')).toBe('[i003 prepare] worktrees ready');
    expect(progressLine(skipped, 'record')).toBe('[i003 record]');
  });
});

describe('runTable', () => {
  it('aligns one row per iteration with delta, champion and PR', () => {
    const improved = measured(IMPROVED);
    improved.publish = { warnings: [], prUrl: 'https://github.com/o/r/pull/7', prNumber: 7 };
    improved.candidate!.logCommit = 'abcdef0123456789abcdef0123456789abcdef01';
    const error = errored();
    error.iteration = 4;
    const none = noOp();
    none.iteration = 5;
    expect(runTable([improved, error, none]).split('\n')).toEqual([
      'iter  verdict     subject                            delta [CI]               champion after  PR',
      'i003  ✓ improved  Tile the chunk loop over K by 128  −18.6% [−20.1%, −17.0%]  abcdef0123      https://github.com/o/r/pull/7',
      'i004  E error     Tile the chunk loop over K by 128  —                        9f8e7d6c5b      —',
      'i005  - no-op     (no commit)                        —                        9f8e7d6c5b      —',
      '3 iterations, 1 improved',
    ]);
  });

  it('has no colour codes and aligns every verdict', () => {
    const table = runTable(everyVerdict().map(([, e]) => e));
    // biome-ignore lint/suspicious/noControlCharactersInRegex: asserting there are no escape codes
    expect(table).not.toMatch(/\u001b\[/);
    const rows = table.split('\n').slice(0, -1);
    const prColumn = rows.map((r) => [...r].length - [...r.split('  ').at(-1)!].length);
    expect(new Set(prColumn).size).toBe(1);
    expect(runTable([])).toBe('no iterations');
  });

  it('shortens long subjects', () => {
    const ev = measured(IMPROVED);
    ev.candidate!.subject = 'x'.repeat(80);
    expect(runTable([ev])).toContain(`${'x'.repeat(47)}…`);
    expect(textTable(['a', 'b'], [['1', '22']], [0])).toBe('a  b\n1  22');
  });
});
