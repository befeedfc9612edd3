import { describe, expect, it } from 'vitest';
import { BODY_CAP_CHARS } from '../../src/forge/limits.js';
import { composeStickyBody } from '../../src/forge/sticky.js';
import { DEFAULT_COMMENT_MAX_CHARS, halvings, renderComment } from '../../src/report/comment.js';
import { trajectory } from '../../src/report/trajectory.js';
import {
  errored,
  everyVerdict,
  FAILING_TESTS,
  historyRows,
  IMPROVED,
  invalidByCpuGate,
  invalidByGuard,
  measured,
  NEEDS_HUMAN,
  NO_CHANGE,
  noOp,
  REGRESSED,
  RUN_ID,
} from './builders.js';
import { checkWellFormed, checkXyChart, mermaidBlocks } from './markdown-checks.js';

const lines = (body: string) => body.split('\n');

describe('renderComment headline', () => {
  it.each([
    ['improved', measured(IMPROVED), '### ✓ improved: fwd+bwd time −18.6% [−20.1%, −17.0%] (n=5+5)'],
    ['no-change', measured(NO_CHANGE), '### ~ no-change: fwd+bwd time −0.5% [−2.0%, +1.0%] (n=5+5)'],
    ['regressed', measured(REGRESSED), '### ✗ regressed: fwd+bwd time +10.5% [+7.5%, +13.6%] (n=5+5)'],
    [
      'needs-human',
      measured(NEEDS_HUMAN, { device: 'tpu' }),
      '### ? needs-human: fwd+bwd time −93.5% [−93.8%, −92.9%] (n=5+5)',
    ],
    [
      'invalid (guard)',
      invalidByGuard(),
      '### ! invalid: guard: protected path touched: kernels/harness/tolerances.py',
    ],
    ['invalid (CPU gate)', invalidByCpuGate(), '### ! invalid: cpu-gate: 3 of 128 tests failed'],
    ['error', errored(), '### E error: measure: ray job submission failed: HTTP 503 from the dashboard'],
    ['no-op', noOp(), '### - no-op: the agent made no commit'],
  ])('%s', (_, evidence, expected) => {
    expect(lines(renderComment(evidence, []).body)[0]).toBe(expected);
  });

  it('says plainly when the numbers are unverified (untrusted code ran unsandboxed where it was measured)', () => {
    const ev = measured(NEEDS_HUMAN);
    ev.isolation = { measure: { mode: 'none', job: 'laptop-1' } };
    const body = renderComment(ev, []).body;
    expect(body).toContain(
      '> **These numbers are unverified**: the measure step ran candidate code unsandboxed.',
    );
    expect(renderComment(measured(IMPROVED), []).body).not.toContain('unverified');
  });

  it('names target, iteration, candidate, champion and device', () => {
    const body = renderComment(measured(IMPROVED, { device: 'tpu' }), []).body;
    expect(body).toContain(
      '**gdn** iteration 3 of 4 · candidate `1a2b3c4d5e` “Tile the chunk loop over K by 128” vs champion `9f8e7d6c5b` · TPU v5p ×4',
    );
  });
});

describe('renderComment delta table', () => {
  it('shows medians, change with CI, CV, runs and MFU on TPU', () => {
    const body = renderComment(measured(IMPROVED, { device: 'tpu' }), []).body;
    expect(lines(body)).toEqual(
      expect.arrayContaining([
        '|  | champion (A) | candidate (B) | change |',
        '| commit | `9f8e7d6c5b` | `1a2b3c4d5e` |  |',
        '| fwd+bwd time, median | 12.31 ms | 10.02 ms | −18.6% [−20.1%, −17.0%] |',
        '| CV | 1.2% | 0.9% |  |',
        '| runs | 5 | 5 |  |',
        '| MFU | 31.20% | 38.33% | +7.13 pp |',
      ]),
    );
    expect(body).toContain(
      "Speedup (geometric mean of the rounds' A / B) 1.229× [1.205×, 1.252×], 95% t interval of the rounds' log ratios over 5 rounds. Accept bar 1.010×: the lower CI bound must clear +1.0% (the practical floor; noise margin +0.7% for ≤ 1.00% false accepts at no change). Detectable with 80% power at n = 5/5 and CV 2.1% (observed): +5.9%. Regression bar 0.980×.",
    );
  });

  it('says MFU is n/a on CPU', () => {
    const body = renderComment(measured(IMPROVED), []).body;
    expect(lines(body)).toContain('| MFU | n/a on CPU |  |  |');
  });

  it('counts failed runs per arm', () => {
    const ev = measured(IMPROVED);
    const run = ev.measurement!.runs.find((r) => r.arm === 'B')!;
    run.value = null;
    run.problem = 'metrics file missing';
    const body = renderComment(ev, []).body;
    expect(lines(body)).toContain('| runs | 5 | 5 (1 failed) |  |');
    expect(body).toMatch(/\| 2 \| B \| 1 \| — \| n\/a \| 0 \| 8\.0 s \| metrics file missing \|/);
  });

  it("names the run's false-accept target, and a look's share of it, for a sequential verdict", () => {
    const ev = measured(IMPROVED);
    const c = ev.measurement!.comparison!;
    c.falseAcceptRate = 0.01 / 6;
    c.sequence = { falseAcceptRate: 0.01, looks: 6 };
    expect(renderComment(ev, []).body).toContain(
      "for ≤ 1.00% false accepts at no change over the run's 6 looks (0.17% at each))",
    );
  });

  it('says which clock decided, and what the wall clock beside it says', () => {
    const ev = measured(IMPROVED);
    const m = ev.measurement!;
    m.clock = {
      name: 'process_time+block_until_ready (one pinned core)',
      wall: { name: 'perf_counter+block_until_ready', ratio: 1.2143 },
    };
    for (const r of m.runs) r.wall = (r.value ?? 0) * 1.5;
    const body = renderComment(ev, []).body;
    expect(body).toContain(
      "Clock: CPU time of the verifier's one pinned core (other work's preemptions cannot stretch it); the wall clock beside it says 1.214× (median A / median B, a busy machine's preemptions included).",
    );
    // The raw runs show both clocks, run by run.
    const first = m.runs[0]!;
    expect(body).toContain(
      `| 1 | ${first.arm} | 1 | ${(first.value!).toFixed(2)} ms | ${(first.wall!).toFixed(2)} ms |`,
    );
    m.clock = { name: 'perf_counter+block_until_ready' };
    expect(renderComment(ev, []).body).toContain('Clock: the wall clock (`perf_counter+block_until_ready`).');
    delete m.clock;
    expect(renderComment(ev, []).body).not.toContain('Clock:');
  });

  it('has no delta table without a measurement', () => {
    expect(renderComment(invalidByGuard(), []).body).not.toContain('champion (A)');
  });
});

describe('renderComment checks and profile', () => {
  it('lists failing test names of a failed CPU gate', () => {
    const body = renderComment(invalidByCpuGate(), []).body;
    expect(body).toContain(
      '| CPU correctness | failed, 128 tests: 123 passed, 3 failed, 2 skipped — 3 of 128 tests failed (43.9 s) |',
    );
    for (const name of FAILING_TESTS) expect(body).toContain(`\`${name}\``);
  });

  it('shows the guard’s reasons', () => {
    expect(renderComment(invalidByGuard(), []).body).toContain(
      '| guard | failed, 2 paths changed; protected paths touched: kernels/harness/tolerances.py |',
    );
  });

  it('has the hotspot diff with added, removed and custom calls flagged', () => {
    const body = renderComment(measured(IMPROVED), []).body;
    expect(lines(body)).toEqual(
      expect.arrayContaining([
        '#### Hotspots (time per step, top 5 of 5 ops by |Δ|)',
        '| `gdn_chunk_fwd` | `jit_step` | custom-call | 5.210 ms | 3.900 ms | −1.310 ms | −25.1% | custom call, no cost model |',
        '| `transpose_fusion` | `jit_step` | data formatting | 0.3000 ms | — | −0.3000 ms | −100.0% | removed |',
        '| `copy_start` | `jit_step` | data formatting | — | 0.1500 ms | +0.1500 ms | — | added |',
        'Per step, champion → candidate: step 12.00 ms → 10.00 ms (−16.7%) · op time 11.00 ms → 9.200 ms (−16.4%) · busy 11.50 ms → 9.600 ms (−16.5%).',
      ]),
    );
    expect(body).toContain(
      'Custom-call launches per step (Pallas/Mosaic and other hand-written kernels; XLA has no cost model for most of them): 6 → 4.',
    );
    expect(lines(body)).toContain('| `gdn_chunk_fwd` | 4 | 2 | 5.210 ms | 3.900 ms | −1.310 ms |');
  });

  it('limits the hotspot table to the requested rows and says how many are left', () => {
    const body = renderComment(measured(IMPROVED, { extraOps: 30 }), [], { hotspotRows: 4 }).body;
    expect(body).toContain('#### Hotspots (time per step, top 4 of 35 ops by |Δ|)');
    expect(body).toContain('_31 more ops in the trace diff of the evidence bundle._');
  });

  it('says why there is no profile', () => {
    const body = renderComment(measured(IMPROVED, { withProfile: false }), []).body;
    expect(body).toContain('Profile skipped: profiling is off for this target.');
    expect(body).not.toContain('Custom-call launches');
  });

  it('links the trace in Perfetto only when the URL is known', () => {
    const ev = measured(IMPROVED);
    expect(renderComment(ev, []).body).not.toContain('Perfetto');
    ev.publish = { warnings: [], perfettoUrl: 'https://ui.perfetto.dev/#!/?url=https%3A%2F%2Fhf.co%2Ft' };
    expect(renderComment(ev, []).body).toContain(
      '- [Open the candidate trace in Perfetto](https://ui.perfetto.dev/#!/?url=https%3A%2F%2Fhf.co%2Ft)',
    );
  });

  it('ends with provenance and the raw values collapsed', () => {
    const body = renderComment(measured(IMPROVED, { device: 'tpu' }), []).body;
    expect(lines(body)).toEqual(
      expect.arrayContaining([
        `| run | \`${RUN_ID}\`, iteration 3 of 4, started 2026-11-21 23:40 UTC |`,
        '| device | TPU v5p ×4 (backend tpu) |',
        '| versions | jax 0.4.38 · jaxlib 0.4.38 · python 3.11.9 |',
        '| harness hash | `c0ffee0123` |',
        '| config hash | `deadbeef01` |',
        '| bootstrap seed | 42 |',
        '| 1 | A | 1 | 12.31 ms | 31.20% | 0 | 8.0 s |  |',
      ]),
    );
    expect(body.indexOf('#### Provenance')).toBeLessThan(
      body.indexOf('<details><summary>Raw per-run values (10 runs'),
    );
  });

  it('is well-formed markdown and deterministic for every verdict', () => {
    for (const [name, ev] of everyVerdict()) {
      const body = renderComment(ev, historyRows(20)).body;
      checkWellFormed(body);
      expect(renderComment(ev, historyRows(20)).body, name).toBe(body);
    }
  });

  it('neutralises HTML in the agent’s subject', () => {
    const ev = measured(IMPROVED);
    ev.candidate!.subject = 'speed <!-- hide the rest';
    const body = renderComment(ev, []).body;
    expect(body).toContain('“speed &lt;!-- hide the rest”');
    expect(body).not.toContain('<!--');
  });
});

describe('trajectory chart', () => {
  it('plots one measured iteration', () => {
    const body = renderComment(measured(IMPROVED), historyRows(1)).body;
    const [chart] = mermaidBlocks(body);
    const parsed = checkXyChart(chart!);
    expect(parsed.labels).toEqual(['i1']);
    expect(parsed.series.bar).toEqual([13.3]);
    expect(parsed.series.line).toEqual([13.3]);
    expect(body).toContain('Champion fwd+bwd time: 14.00 ms → 13.30 ms over 1 iteration (1 improved).');
  });

  it('plots 20 iterations, listing the unmeasured ones', () => {
    const body = renderComment(measured(IMPROVED), historyRows(20)).body;
    const blocks = mermaidBlocks(body);
    expect(blocks).toHaveLength(1);
    const parsed = checkXyChart(blocks[0]!);
    expect(parsed.labels).toEqual([
      'i1',
      'i2',
      'i3',
      'i5',
      'i8',
      'i9',
      'i10',
      'i12',
      'i15',
      'i16',
      'i17',
      'i19',
    ]);
    // The champion line never gets worse (lower is better) and steps down on improved iterations.
    const line = parsed.series.line;
    for (let i = 1; i < line.length; i++) expect(line[i]).toBeLessThanOrEqual(line[i - 1]!);
    expect(body).toContain(
      'Not plotted (no measurement): i4 invalid, i6 error, i7 no-op, i11 invalid, i13 error, i14 no-op, i18 invalid, i20 error.',
    );
  });

  it('keeps the newest points and labels several runs apart', () => {
    const rows = [
      ...historyRows(70, { runId: 'run-a' }),
      ...historyRows(70, { runId: 'run-b', startChampion: 9 }),
    ];
    const t = trajectory(rows, { metricPath: 'measurements.fwd_bwd.median_ms', target: 'gdn' }, 50)!;
    expect(t.points).toHaveLength(50);
    expect(t.omitted).toBeGreaterThan(0);
    expect(t.points.at(-1)!.label).toBe('r2.i68');
    const body = renderComment(measured(IMPROVED), rows).body;
    checkXyChart(mermaidBlocks(body)[0]!);
    expect(body).toMatch(/Showing the last 50 of \d+ measured iterations\./);
  });

  it('ignores rows of other targets and metrics, and says when nothing was measured', () => {
    const other = historyRows(3).map((r) => ({ ...r, target: 'other' }));
    expect(renderComment(measured(IMPROVED), other).body).not.toContain('#### Trajectory');
    const unmeasured = historyRows(3).map((r) => ({ ...r, a: null, b: null }));
    const body = renderComment(measured(IMPROVED), unmeasured).body;
    expect(body).toContain('No measured iterations yet (3 iterations).');
    expect(mermaidBlocks(body)).toHaveLength(0);
  });

  it('keeps titles free of characters that would break the chart', () => {
    const rows = historyRows(3).map((r) => ({ ...r, metric: { ...r.metric, label: 'time "fwd"\nbwd`' } }));
    const ev = measured(IMPROVED);
    ev.measurement!.metric = rows[0]!.metric;
    checkXyChart(mermaidBlocks(renderComment(ev, rows).body)[0]!);
  });
});

describe('renderComment size cap', () => {
  const huge = () => measured(IMPROVED, { device: 'tpu', extraOps: 3000 });

  it('stays under the default cap with room for the forge’s marker and stamp', () => {
    const out = renderComment(huge(), historyRows(20), { hotspotRows: 3000 });
    expect(out.truncated).toBe(true);
    expect(out.body.length).toBeLessThanOrEqual(DEFAULT_COMMENT_MAX_CHARS);
    const sticky = composeStickyBody('hillclimb', out.body, {
      runStartedAt: '2026-11-21T23:40:00.000Z',
      runId: RUN_ID,
      iteration: 3,
      commit: 'a'.repeat(40),
    });
    expect(sticky.truncated).toBe(false);
    expect(sticky.body.length).toBeLessThanOrEqual(BODY_CAP_CHARS);
    checkWellFormed(out.body);
    expect(out.body).toContain("left out to fit GitHub's size limit");
  });

  it('drops raw values first, then the chart, then shortens the hotspot table', () => {
    const ev = huge();
    const rows = historyRows(20);
    const full = renderComment(ev, rows, { hotspotRows: 200, maxChars: 1e9 });
    expect(full.truncated).toBe(false);
    const raw = renderComment(ev, rows, { hotspotRows: 200, maxChars: full.body.length - 1 });
    expect(raw.reduced).toEqual(['raw']);
    expect(raw.body).toContain("_Raw per-run values left out to fit GitHub's size limit.");
    expect(raw.body).toContain('#### Trajectory');
    const chart = renderComment(ev, rows, { hotspotRows: 200, maxChars: raw.body.length - 1 });
    expect(chart.reduced).toEqual(['raw', 'chart']);
    expect(chart.body).toContain("_The trajectory chart left out to fit GitHub's size limit.");
    expect(mermaidBlocks(chart.body)).toHaveLength(0);
    const tables = renderComment(ev, rows, { hotspotRows: 200, maxChars: chart.body.length - 1 });
    expect(tables.reduced).toEqual(['raw', 'chart', 'hotspots']);
    expect(tables.body).toContain('#### Hotspots (time per step, top 100 of 3005 ops by |Δ|)');
    expect(tables.body).toContain("_Rows beyond the first 100 left out to fit GitHub's size limit.");
    for (const out of [raw, chart, tables]) {
      checkWellFormed(out.body);
      expect(out.body.startsWith('### ✓ improved')).toBe(true);
      expect(out.body).toContain('#### Provenance');
    }
  });

  it('names the job summary in its notes when given', () => {
    const out = renderComment(huge(), [], {
      hotspotRows: 3000,
      maxChars: 20_000,
      summaryUrl: 'https://github.com/o/r/actions/runs/1',
    });
    expect(out.body.length).toBeLessThanOrEqual(20_000);
    expect(out.body).toContain('[job summary](https://github.com/o/r/actions/runs/1)');
  });

  it('halves tables down to one row', () => {
    expect(halvings(10)).toEqual([10, 5, 3, 2, 1]);
    expect(halvings(1)).toEqual([1]);
    expect(halvings(0)).toEqual([]);
  });
});

describe('the structural checks themselves', () => {
  it('reject a table cut after its header, an unclosed fence and a malformed chart', () => {
    expect(() => checkWellFormed('| a | b |\n')).toThrow();
    expect(() => checkWellFormed('| a | b |\n| --- | --- |\n| 1 |\n')).toThrow();
    expect(() => checkWellFormed('```mermaid\nxychart-beta\n')).toThrow();
    expect(() =>
      checkXyChart(
        'xychart-beta\n  x-axis "i" ["i1", "i2"]\n  y-axis "t" 1 --> 2\n  bar [1.5]\n  line [1.5, 1.6]',
      ),
    ).toThrow();
    expect(() =>
      checkXyChart('xychart-beta\n  x-axis "i" ["i1"]\n  y-axis "t" 1 --> 2\n  bar [−1.5]\n  line [1.5]'),
    ).toThrow();
    expect(() =>
      checkXyChart('xychart-beta\n  x-axis "i" ["i1"]\n  y-axis "t" 1 --> 2\n  bar [3]\n  line [1.5]'),
    ).toThrow();
  });
});

describe('renderComment provenance', () => {
  it('names the programs the verifier timed, by sha256, for both arms', () => {
    const e = measured();
    e.measurement!.programs = {
      platform: 'tpu',
      A: { 'fwd_bwd@B2-T4096': 'a'.repeat(64), 'fwd@B2-T4096': 'c'.repeat(64) },
      B: { 'fwd_bwd@B2-T4096': 'b'.repeat(64), 'fwd@B2-T4096': 'c'.repeat(64) },
    };
    const body = renderComment(e, []).body;
    expect(body).toContain(
      `| programs | tpu, sha256 fwd@B2-T4096: A \`${'c'.repeat(12)}\` → B \`${'c'.repeat(12)}\`; fwd_bwd@B2-T4096: A \`${'a'.repeat(12)}\` → B \`${'b'.repeat(12)}\` |`,
    );
  });
});
