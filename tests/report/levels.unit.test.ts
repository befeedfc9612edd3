// Both levels in every report: the comment's table and Amdahl sentence, the headline's model MFU, the
// log entry's lines (and their lint), the trajectory charts of model MFU and kernel time, and main's
// baseline chart. On CPU, MFU is always "vs measured matmul peak".
import { describe, expect, it } from 'vitest';
import type { HistoryRow } from '../../src/evidence/history-row.js';
import { summarizeLevels } from '../../src/evidence/levels.js';
import { renderComment } from '../../src/report/comment.js';
import { headline, mfuText } from '../../src/report/facts.js';
import { amdahlText, levelsTable, pooledPeakNote } from '../../src/report/levels.js';
import { harnessLines, renderLogEntry } from '../../src/report/log-entry.js';
import { lintLog } from '../../src/report/log-lint.js';
import { renderPullRequest } from '../../src/report/pr.js';
import { baselineSection, LEVEL_CHART_PALETTE, trajectorySection } from '../../src/report/trajectory.js';
import { historyRows, IMPROVED, measured, NO_CHANGE, withLevels } from './builders.js';
import { checkWellFormed, checkXyChart, mermaidBlocks } from './markdown-checks.js';

const cpu = () => withLevels(measured(IMPROVED, { device: 'cpu' }));
const tpu = () => withLevels(measured(IMPROVED, { device: 'tpu' }));

describe('the levels table', () => {
  it('shows kernel and model numbers with changes and intervals, MFU labelled by its peak', () => {
    const table = levelsTable(cpu())!;
    const rows = table.split('\n').filter((l) => l.startsWith('| '));
    expect(rows[0]).toBe('| level |  | champion (A) | candidate (B) | change [95% CI] |');
    expect(rows[2]).toBe('| kernel | fwd+bwd time, median | 12.31 ms | 10.02 ms | −18.6% [−20.1%, −17.0%] |');
    expect(rows[3]).toMatch(
      /^\| kernel \| MFU vs measured matmul peak \| 9\.47% \| 11\.63% \| \+2\.16 pp \(\+22\.\d% \[\+\d+\.\d%, \+\d+\.\d%\]\) \|$/,
    );
    expect(rows[4]).toMatch(
      /^\| model `tiny` \| train step time, median \| 96\.93 ms \| 90\.06 ms \| −7\.1% \[−\d\.\d%, −\d\.\d%\] \|$/,
    );
    expect(rows[5]).toMatch(/^\| model `tiny` \| tokens\/s \| 2641 tok\/s \| 2843 tok\/s \| \+7\.6% \[/);
    expect(rows[6]).toMatch(
      /^\| model `tiny` \| MFU vs measured matmul peak \| 9\.21% \| 9\.91% \| \+0\.70 pp \(/,
    );
    expect(rows[7]).toBe(
      "| model `tiny` | GDN kernels' share of the step (estimated from the medians) | 38.1% | 33.4% |  |",
    );
    expect(table).toContain('_MFU here is against a measured matmul peak (measured 512^3 float32 matmul');
    expect(table).toContain('not a datasheet number');
    checkWellFormed(table);
  });

  it("says what Amdahl's law allows from the champion's share, and from the candidate's", () => {
    expect(amdahlText(0.38)).toBe(
      'the GDN kernels are 38.0% of the step: a 2× faster kernel gives at most 1.235× step speed, and no kernel speed-up more than 1.613×',
    );
    const table = levelsTable(cpu())!;
    expect(table).toContain(
      '**Amdahl** (estimated from the medians: 3 GDN layers × kernel fwd+bwd time / train step time). Champion: the GDN kernels are 38.1% of the step',
    );
    expect(table).toContain('Candidate: the GDN kernels are 33.4% of the step');
  });

  it("takes the profile's share when the profile step found one", () => {
    const ev = cpu();
    ev.profile!.kernelShare = { a: 0.4, b: 0.35, source: 'profile', detail: 'from the profiles: …' };
    const table = levelsTable(ev)!;
    expect(table).toContain("GDN kernels' share of the step (from the profile) | 40.0% | 35.0%");
    expect(table).toContain('**Amdahl** (from the profiles: …)');
  });

  it('names the table peak on an accelerator, with no measured-peak note', () => {
    const table = levelsTable(tpu())!;
    expect(table).toContain('| kernel | MFU vs TPU v5p bf16 peak | 31.20% | 38.33% |');
    expect(table).toContain('| model `130m` | MFU vs TPU v5p bf16 peak |');
    expect(table).not.toContain('measured matmul peak');
  });

  it('is absent for evidence without levels (runs of older benches)', () => {
    expect(levelsTable(measured(IMPROVED))).toBeUndefined();
    expect(renderComment(measured(IMPROVED), []).body).not.toContain('Kernel and model');
  });
});

describe("a target that is not GDN (an adopter's RMSNorm: one `fwd` measurement, no model step)", () => {
  /** Runs that recorded levels, but only the verdict metric's own: no fwd_bwd, no train step. */
  const rmsnorm = () => {
    const ev = measured(IMPROVED, { device: 'cpu' });
    const m = ev.measurement!;
    for (const r of m.runs) {
      r.levels = {
        kernelMs: null,
        kernelMfu: null,
        stepMs: null,
        tokensPerS: null,
        modelMfu: null,
        peakFlopsPerS: 2.5e11,
      };
    }
    m.levels = summarizeLevels(
      m.runs,
      { peak: { source: 'measured', name: 'measured 512^3 float32 matmul', dtype: 'fp32' } },
      { confidence: 0.95, resamples: 2000, seed: 42 },
    );
    return ev;
  };

  it('has no kernel-and-model table and no Kernel line in the log: no rows of dashes', () => {
    const ev = rmsnorm();
    expect(levelsTable(ev)).toBeUndefined();
    const comment = renderComment(ev, []).body;
    expect(comment).not.toContain('Kernel and model');
    expect(comment).not.toMatch(/\| — \| — \|/);
    const log = Object.fromEntries(harnessLines(ev, 'runs/x/i001/evidence.json'));
    expect(log.Kernel).toBeUndefined();
    expect(log.Model).toBeUndefined();
  });

  it('shows the rows it has when only some are measured', () => {
    const ev = withLevels(measured(IMPROVED, { device: 'cpu' }));
    for (const r of ev.measurement!.runs) if (r.levels) r.levels.kernelMfu = null;
    const m = ev.measurement!;
    m.levels = summarizeLevels(
      m.runs,
      { peak: { source: 'measured', name: 'measured 512^3 float32 matmul', dtype: 'fp32' } },
      { confidence: 0.95, resamples: 2000, seed: 42 },
    );
    const rows = levelsTable(ev)!
      .split('\n')
      .filter((l) => l.startsWith('| kernel'));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toContain('fwd+bwd time, median');
  });
});

describe('the comment, headline and PR', () => {
  it('every measured comment on CPU shows both MFUs with their deltas, the share and the bound', () => {
    for (const spec of [IMPROVED, NO_CHANGE]) {
      const body = renderComment(withLevels(measured(spec)), historyRows(4, { levels: true })).body;
      expect(body).toContain('**Kernel and model**');
      expect(body).toContain('| kernel | MFU vs measured matmul peak |');
      expect(body).toContain('| model `tiny` | MFU vs measured matmul peak |');
      expect(body).toContain("GDN kernels' share of the step");
      expect(body).toContain('**Amdahl**');
      expect(body).not.toContain('n/a on CPU');
      checkWellFormed(body);
    }
  });

  it("headlines the model's MFU after the verdict metric", () => {
    expect(headline(cpu())).toMatch(
      /^✓ improved: fwd\+bwd time −18\.6% \[−20\.1%, −17\.0%\] \(n=5\+5\); model MFU 9\.21% → 9\.91% \(\+0\.70 pp, \+7\.6% \[\+\d\.\d%, \+\d\.\d%\]\) vs measured matmul peak$/,
    );
    expect(headline(tpu())).toMatch(/; model MFU 6\.09% → 6\.55% \(\+0\.46 pp, \+7\.6% \[.*\]\)$/);
    expect(mfuText(cpu())).toBe('9.47% → 11.63% (+2.16 pp) vs measured matmul peak');
    expect(renderPullRequest(cpu()).body).toContain('MFU 9.47% → 11.63% (+2.16 pp) vs measured matmul peak');
  });
});

describe('the log entry', () => {
  it('has a line per level and one for the share, rendered from the evidence', () => {
    const lines = Object.fromEntries(harnessLines(cpu(), 'runs/x/i003/evidence.json'));
    expect(lines.Kernel).toMatch(
      /^fwd\+bwd time 12\.31 ms → 10\.02 ms, −18\.6% \[−20\.1%, −17\.0%\]; MFU vs measured matmul peak 9\.47% → 11\.63%, \+2\.16 pp \(/,
    );
    expect(lines.Model).toMatch(
      /^`tiny` train step 96\.93 ms → 90\.06 ms, −7\.1% \[.*\]; 2641 tok\/s → 2843 tok\/s, \+7\.6% \[.*\]; MFU vs measured matmul peak 9\.21% → 9\.91%, \+0\.70 pp/,
    );
    expect(lines['Kernel share']).toBe(
      '38.1% → 33.4% of the train step (estimated from the medians); Amdahl: the GDN kernels are 38.1% of the step: a 2× faster kernel gives at most 1.235× step speed, and no kernel speed-up more than 1.615×',
    );
  });

  it('passes lint against its evidence, and a hand-edited level number does not', () => {
    const ev = cpu();
    const path = 'runs/20261121-2340-ab12/i003/evidence.json';
    const entry = renderLogEntry(ev, { evidencePath: path });
    const load = () => ({ status: 'found' as const, evidence: ev });
    expect(lintLog(entry, { loadEvidence: load })).toEqual([]);
    const edited = entry.replace('9.91%', '19.91%');
    expect(lintLog(edited, { loadEvidence: load }).map((p) => p.rule)).toContain('harness-line-edited');
  });
});

describe('the trajectory of both levels', () => {
  it('plots model MFU and kernel time: kept and rejected candidates apart, the champion as a line', () => {
    const rows = historyRows(8, { levels: true });
    const section = trajectorySection(rows, { metricPath: rows[0]!.metric.path, target: 'gdn' })!;
    const [mfu, time, ...rest] = mermaidBlocks(section);
    expect(rest).toHaveLength(0);
    for (const chart of [mfu!, time!]) {
      const parsed = checkXyChart(chart);
      expect(parsed.palette).toEqual(LEVEL_CHART_PALETTE.split(', '));
      expect(parsed.bars).toHaveLength(2);
      const measuredRows = rows.filter((r) => r.a !== null);
      expect(parsed.labels).toEqual(measuredRows.map((r) => `i${r.iteration}`));
      // Each iteration is a bar of one kind only: the other sits on the axis floor (no bar).
      measuredRows.forEach((r, i) => {
        const [kept, rejected] = [parsed.bars[0]![i]!, parsed.bars[1]![i]!];
        if (r.verdict === 'improved') expect(rejected).toBe(parsed.lo);
        else expect(kept).toBe(parsed.lo);
      });
    }
    expect(mfu).toContain('title "model MFU (%), higher is better"');
    expect(time).toContain('title "kernel fwd+bwd time (ms), lower is better"');
    // The champion's MFU only rises; its kernel time only falls.
    const mfuLine = checkXyChart(mfu!).series.line;
    for (let i = 1; i < mfuLine.length; i++) expect(mfuLine[i]).toBeGreaterThanOrEqual(mfuLine[i - 1]!);
    const timeLine = checkXyChart(time!).series.line;
    for (let i = 1; i < timeLine.length; i++) expect(timeLine[i]).toBeLessThanOrEqual(timeLine[i - 1]!);
    expect(section).toContain('Green bars: candidates that became champion; red bars: candidates rejected');
    expect(section).toMatch(/Not plotted \(no measurement\): i4 invalid, i6 error, i7 no-op\./);
  });

  it('labels MFU against a measured peak in the title, and keeps the old chart for rows without levels', () => {
    const rows = historyRows(3, { levels: true }).map((r) =>
      r.levels ? { ...r, levels: { ...r.levels, peak: 'measured' as const } } : r,
    );
    const section = trajectorySection(rows, { metricPath: rows[0]!.metric.path })!;
    expect(section).toContain('title "model MFU vs measured matmul peak (%), higher is better"');
    const old = trajectorySection(historyRows(3), { metricPath: rows[0]!.metric.path })!;
    expect(mermaidBlocks(old)).toHaveLength(1);
    expect(old).toContain('Champion fwd+bwd time:');
  });
});

describe('the baseline chart: main over time', () => {
  /** Nightly rows of main against its parent: the measured side (b) is main's head. */
  function nightly(n: number): HistoryRow[] {
    return historyRows(n, { levels: true })
      .filter((r) => r.b !== null)
      .map((r, i) => ({
        ...r,
        runId: `baseline-${i}`,
        iteration: 1,
        at: `2026-11-${String(10 + i).padStart(2, '0')}T02:41:00.000Z`,
      }));
  }

  it('draws one line per level over the nights, oldest first', () => {
    const rows = nightly(8);
    const section = baselineSection(rows)!;
    expect(section).toContain(
      `#### main over time\n\n${rows.length} nightly measurements of main, oldest first.`,
    );
    const [mfu, time] = mermaidBlocks(section).map(checkXyChart);
    expect(mfu!.labels).toEqual(rows.map((r) => r.at.slice(5, 10)));
    expect(mfu!.series.line).toHaveLength(rows.length);
    expect(time!.series.line).toEqual(rows.map((r) => Number(r.levels!.kernelMs.b!.toPrecision(4))));
    expect(section).toContain('title "main: kernel fwd+bwd time (ms), lower is better"');
  });

  it('falls back to the verdict metric for rows without levels, and numbers two runs of a night', () => {
    const rows = nightly(3).map(({ levels: _levels, ...r }) => ({ ...r, at: '2026-11-12T02:41:00.000Z' }));
    const section = baselineSection(rows)!;
    const [chart] = mermaidBlocks(section).map(checkXyChart);
    expect(chart!.labels).toEqual(['11-12', '11-12 #2', '11-12 #3']);
    expect(section).toContain('title "main: fwd+bwd time (ms), lower is better"');
    expect(baselineSection([])).toBeUndefined();
  });
});

describe('the pooled peak note', () => {
  const base = { kernel: {}, confidence: 0.95, resamples: 1, seed: 1 } as unknown as Parameters<
    typeof pooledPeakNote
  >[0];
  it("names the one peak both arms' MFUs are against and the runs' own spread", () => {
    const note = pooledPeakNote({
      ...base,
      pooledPeak: { flopsPerS: 2.5e11, min: 2.1e11, max: 3.4e11, n: 12 },
    });
    expect(note).toBe(
      "both arms' MFUs are against one peak, 250.0 GFLOP/s (the median of 12 runs' own, which ranged 210.0 GFLOP/s–340.0 GFLOP/s)",
    );
  });
  it('says nothing when every run had the same peak (a table peak)', () => {
    expect(
      pooledPeakNote({ ...base, pooledPeak: { flopsPerS: 9e14, min: 9e14, max: 9e14, n: 10 } }),
    ).toBeUndefined();
    expect(pooledPeakNote(base)).toBeUndefined();
  });
});
