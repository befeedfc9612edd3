// The trajectory charts over real-shaped history rows: an iteration that measured nothing has an empty
// metric (historyRow writes it so), rows of several targets share one history, and a run may start from
// another base than the champion the previous run left.
import { describe, expect, it } from 'vitest';
import type { HistoryRow } from '../../src/evidence/index.js';
import { championLines, historyCharts, trajectorySection } from '../../src/report/trajectory.js';
import { BASE_SHA, historyRows } from './builders.js';
import { checkXyChart, mermaidBlocks } from './markdown-checks.js';

const NO_METRIC = { path: '', direction: 'lower' as const, label: '', unit: '' };

/**
 * historyRows as the loop writes them: each iteration starts from the champion the previous one left
 * (a new commit after an improvement), and a row that measured nothing has no metric.
 */
function loopRows(n: number, opts: { runId?: string; base?: string; startChampion?: number } = {}) {
  let champion = opts.base ?? BASE_SHA;
  return historyRows(n, opts).map((r, i): HistoryRow => {
    const after = r.verdict === 'improved' ? `${opts.runId ?? 'r'}-champion-${i}`.padEnd(40, '0') : champion;
    const row = {
      ...r,
      baseCommit: champion,
      championAfter: after,
      ...(r.a === null ? { metric: NO_METRIC } : {}),
    };
    champion = after;
    return row;
  });
}

describe('the trajectory of measured and unmeasured rows', () => {
  it('charts every measured row though the newest rows measured nothing (no metric)', () => {
    // i1 improved, i2 no-change, i3 regressed, i4 invalid, i5 no-change, i6 error, i7 no-op
    const rows = loopRows(7);
    const out = historyCharts(rows)!;
    expect(out).not.toContain('No measured iterations yet');
    const [chart, ...rest] = mermaidBlocks(out);
    expect(rest).toHaveLength(0);
    expect(checkXyChart(chart!).labels).toEqual(['i1', 'i2', 'i3', 'i5']);
    expect(out).toContain('Not plotted (no measurement): i4 invalid, i6 error, i7 no-op.');
    // The comment's chart (the evidence's metric) lists them too, rather than dropping them.
    expect(trajectorySection(rows, { metricPath: rows[0]!.metric.path, target: 'gdn' })).toContain(
      'Not plotted (no measurement): i4 invalid, i6 error, i7 no-op.',
    );
  });

  it('says so when a target has measured nothing yet', () => {
    const rows = loopRows(7).filter((r) => r.a === null);
    expect(historyCharts(rows)).toContain('No measured iterations yet (3 iterations).');
  });

  it('charts each target apart, under its name', () => {
    const gdn = loopRows(3);
    const norm = loopRows(3, { runId: 'norm-run', startChampion: 2 }).map((r) => ({
      ...r,
      target: 'rmsnorm',
    }));
    const out = historyCharts([...gdn, ...norm])!;
    expect(out).toMatch(/^#### Trajectory: gdn\n/);
    expect(out).toContain('\n#### Trajectory: rmsnorm\n');
    const [a, b] = mermaidBlocks(out).map((c) => checkXyChart(c));
    // Charts show 4 significant digits.
    const shown = (rows: HistoryRow[]) => rows.map((r) => Number(r.b!.toPrecision(4)));
    expect(a!.series.bar).toEqual(shown(gdn));
    expect(b!.series.bar).toEqual(shown(norm));
  });
});

describe('champion lines', () => {
  it('never joins the champions of runs that started from different bases', () => {
    const first = loopRows(3, { runId: 'run-a' });
    const other = loopRows(3, { runId: 'run-b', base: 'b'.repeat(40), startChampion: 30 });
    expect(championLines([...first, ...other])).toEqual([first, other]);
    const section = trajectorySection([...first, ...other], { metricPath: first[0]!.metric.path })!;
    const charts = mermaidBlocks(section).map((c) => checkXyChart(c));
    expect(charts).toHaveLength(2);
    expect(charts[0]!.series.line).toEqual([first[0]!.b, first[0]!.b, first[0]!.b]);
    expect(charts[1]!.series.line).toEqual([other[0]!.b, other[0]!.b, other[0]!.b]);
    expect(section).toContain(`From champion \`${'b'.repeat(10)}\` (r2.i1 on):`);
  });

  it('keeps one line where a run continues the champion the last one left', () => {
    const first = loopRows(3, { runId: 'run-a' });
    const next = loopRows(3, { runId: 'run-b', base: first.at(-1)!.championAfter });
    expect(championLines([...first, ...next])).toEqual([[...first, ...next]]);
  });

  it("keeps a search iteration's candidates on one line, whichever row was written first", () => {
    const [i1] = loopRows(1, { runId: 'run-s' });
    const winner = { ...i1!, slot: 2 };
    const loser = { ...i1!, slot: 1, verdict: 'no-change' as const, championAfter: i1!.baseCommit };
    const i2 = {
      ...i1!,
      iteration: 2,
      baseCommit: winner.championAfter,
      championAfter: winner.championAfter,
    };
    expect(championLines([winner, loser, i2])).toHaveLength(1);
    expect(championLines([loser, winner, i2])).toHaveLength(1);
  });

  it('spends the point budget on the newest line first and says what it left out', () => {
    const first = loopRows(5, { runId: 'run-a' });
    const other = loopRows(5, { runId: 'run-b', base: 'b'.repeat(40) });
    const section = trajectorySection([...first, ...other], { metricPath: first[0]!.metric.path }, 4)!;
    expect(mermaidBlocks(section)).toHaveLength(1);
    expect(section).toContain('1 earlier champion line left out');
  });
});
