import { describe, expect, it } from 'vitest';
import {
  appendLogEntry,
  evidenceDigest,
  headingNumbers,
  LOG_LABELS,
  logHeader,
  parseEvidenceMarker,
  renderLogEntry,
} from '../../src/report/log-entry.js';
import { lintLog } from '../../src/report/log-lint.js';
import { HillclimbError } from '../../src/util/errors.js';
import { everyVerdict, IMPROVED, invalidByCpuGate, measured, noOp, RUN_ID } from './builders.js';

const MARKER =
  /^<!-- hillclimb:evidence runs\/20261121-2340-ab12\/i003\/evidence\.json sha256=[0-9a-f]{64} format=4 -->$/;

describe('renderLogEntry', () => {
  // When this rendering changes, bump LOG_ENTRY_FORMAT: entries written before would otherwise fail lint
  // as hand edits instead of being reported as an older format.
  it('renders the harness lines of a measured iteration', () => {
    const lines = renderLogEntry(measured(IMPROVED)).split('\n');
    expect(lines[0]).toBe('### Iteration 3 — Tile the chunk loop over K by 128');
    expect(lines[1]).toBe('');
    expect(lines[2]).toMatch(MARKER);
    expect(lines.slice(3, 23)).toEqual([
      `- Run: \`${RUN_ID}\`, iteration 3 of 4, target \`gdn\``,
      '- Date: 2026-11-21 23:58 UTC',
      '- Verdict: ✓ improved',
      '- Reason: lower CI bound 1.2048 > accept bar 1.0100',
      "- Reason: speedup (geometric mean of the rounds' A / B) 1.2285 [1.2048, 1.2516] (95% t interval of the rounds' log ratios, paired by round, n = 5/5)",
      `- Commit: \`1a2b3c4d5e\` on \`hillclimb/gdn/${RUN_ID}/i003\``,
      '- Base: `9f8e7d6c5b` (champion since iteration 2)',
      '- Agent: `codex` finished in 4 min 12 s, 1 attempt',
      '- Guard: passed, 1 path changed',
      '- Correctness (CPU): passed, 128 tests: 126 passed, 2 skipped (41.2 s)',
      '- Correctness (accelerator): skipped: no accelerator in this backend',
      '- Measurement: fwd+bwd time 12.31 ms → 10.02 ms, −18.6% [−20.1%, −17.0%] (n=5+5)',
      '- MFU: n/a on CPU',
      '- Step time: 12.00 ms → 10.00 ms (−16.7%)',
      '- Hotspot: `gdn_chunk_fwd` 5.210 ms → 3.900 ms (−1.310 ms, −25.1%) [custom call]',
      '- Hotspot: `transpose_fusion` 0.3000 ms → absent (−0.3000 ms, −100.0%) [removed]',
      '- Hotspot: `add_multiply_fusion` 1.000 ms → 1.200 ms (+0.2000 ms, +20.0%)',
      '- Custom-call launches per step: 6 → 4',
      `- Evidence: \`runs/${RUN_ID}/i003/evidence.json\``,
      '',
    ]);
    expect(lines.slice(23)).toEqual([
      '> agent hypothesis: The K loop reloads the state tile; tiling by 128 should cut the 30% spent in copies.',
      '> agent summary: Tiled the chunk loop over K by 128 and kept the state in VMEM.',
      '> agent next idea: Fuse the gate cumsum into the same kernel (maybe 2x fewer launches).',
      '',
    ]);
  });

  it('marks the step time of a profiler-inflated trace as no result', () => {
    const ev = measured(IMPROVED);
    const side = { measuredMs: 1.718, tracedMs: 17.18, ratio: 10 };
    ev.profile!.agreement = {
      factor: 1.5,
      champion: side,
      candidate: side,
      agrees: false,
      detail: 'the traced step is 10× the measured median',
    } as unknown as NonNullable<typeof ev.profile>['agreement'];
    expect(renderLogEntry(ev, { evidencePath: 'e.json' })).toContain(
      '- Step time: 12.00 ms → 10.00 ms (−16.7%) (profiler-inflated trace: not the measured change)',
    );
  });

  it('shows MFU on TPU and failing tests of a failed gate', () => {
    expect(renderLogEntry(measured(IMPROVED, { device: 'tpu' }))).toContain(
      '\n- MFU: 31.20% → 38.33% (+7.13 pp)\n',
    );
    const entry = renderLogEntry(invalidByCpuGate());
    expect(entry).toContain(
      '\n- Failing tests (CPU): `kernels/gdn/tests/test_chunk.py::test_matches_reference[B2-T64-H4-K32-V32-bf16]`, ',
    );
    expect(entry).toContain('\n- Measurement: not run (stopped at cpu-gate)\n');
  });

  it('renders a no-op without commit', () => {
    const entry = renderLogEntry(noOp());
    expect(entry.split('\n')[0]).toBe('### Iteration 3 — (no commit)');
    expect(entry).toContain('\n- Commit: none (the agent made no commit)\n');
  });

  it('keeps harness lines and the agent’s words apart, for every verdict', () => {
    const labelled = new RegExp(`^- (${LOG_LABELS.map((l) => l.replace(/[()]/g, '\\$&')).join('|')}): \\S`);
    for (const [name, ev] of everyVerdict()) {
      const lines = renderLogEntry(ev).split('\n');
      for (const line of lines.slice(3)) {
        const ok = line === '' || labelled.test(line) || line.startsWith('> agent ') || line.startsWith('> ');
        expect(ok, `${name}: ${line}`).toBe(true);
      }
      expect(lines.filter((l) => l.startsWith('> ')).every((l) => !labelled.test(l))).toBe(true);
    }
  });

  it('quotes every line of multi-line agent prose and neutralises HTML in it', () => {
    const ev = measured(IMPROVED);
    ev.agent!.result!.summary = 'first line\nsecond line <!-- hidden\n- Verdict: ✓ improved';
    const entry = renderLogEntry(ev);
    expect(entry).toContain(
      '> agent summary: first line\n> second line &lt;!-- hidden\n> - Verdict: ✓ improved\n',
    );
  });

  it('takes the evidence path and heading number from options', () => {
    const entry = renderLogEntry(measured(IMPROVED), {
      evidencePath: 'runs/x/i009/evidence.json',
      number: 12,
    });
    expect(entry.startsWith('### Iteration 12 — ')).toBe(true);
    expect(parseEvidenceMarker(entry.split('\n')[2]!)!.path).toBe('runs/x/i009/evidence.json');
    expect(entry).toContain('\n- Evidence: `runs/x/i009/evidence.json`\n');
  });
});

describe('evidenceDigest', () => {
  it('ignores what the loop writes after the entry, not the numbers', () => {
    const ev = measured(IMPROVED);
    const digest = evidenceDigest(ev);
    const later = structuredClone(ev);
    later.publish = { warnings: ['x'], prUrl: 'https://example.com/pr/1' };
    later.steps = { publish: { status: 'done', startedAt: 'a', finishedAt: 'b' } };
    later.finishedAt = '2030-01-01T00:00:00Z';
    later.candidate!.logCommit = 'f'.repeat(40);
    expect(evidenceDigest(later)).toBe(digest);
    const edited = structuredClone(ev);
    edited.measurement!.comparison!.b.median = 10.01;
    expect(evidenceDigest(edited)).not.toBe(digest);
  });

  it('does not depend on key order', () => {
    const ev = measured(IMPROVED);
    const reordered = Object.fromEntries(Object.entries(ev).reverse()) as typeof ev;
    expect(evidenceDigest(reordered)).toBe(evidenceDigest(ev));
  });
});

describe('appendLogEntry', () => {
  it('starts a new log with the header', () => {
    const text = appendLogEntry(undefined, renderLogEntry(measured(IMPROVED)));
    expect(text.startsWith('# Hill-climb log\n')).toBe(true);
    for (const section of ['## Goal', '## Loop contract', '## How entries are produced', '## Iterations']) {
      expect(text).toContain(`\n${section}\n`);
    }
    expect(text).toContain('\n## Iterations\n\n### Iteration 3 — ');
    expect(text.endsWith('\n')).toBe(true);
    expect(appendLogEntry('  \n', renderLogEntry(measured(IMPROVED))).startsWith(logHeader())).toBe(true);
  });

  it('appends after existing entries and keeps the headings increasing', () => {
    const first = appendLogEntry(undefined, renderLogEntry(measured(IMPROVED)));
    // A second run starts again at iteration 3 (or lower): the heading takes the next number.
    const second = appendLogEntry(first, renderLogEntry(measured(IMPROVED)));
    const third = appendLogEntry(second, renderLogEntry(measured(IMPROVED), { number: 9 }));
    expect(headingNumbers(third).map((h) => h.number)).toEqual([3, 4, 9]);
    expect(third.startsWith(first.trimEnd())).toBe(true);
  });

  it("numbers a search's candidates 3a, 3b, 3c and leaves the next iteration its own number", () => {
    const entry = (number: number) => renderLogEntry(measured(IMPROVED), { number });
    let text: string | undefined;
    for (const number of [3, 3, 3]) text = appendLogEntry(text, entry(number), {}, { candidate: true });
    text = appendLogEntry(text, entry(4), {}, { candidate: true });
    text = appendLogEntry(text, entry(5));
    expect(headingNumbers(text).map((h) => `${h.number}${h.suffix}`)).toEqual(['3a', '3b', '3c', '4a', '5']);
    // The lint's rule (monotonic headings, suffixes increasing) holds.
    expect(lintLog(text, { scope: 'all' }).filter((p) => p.rule === 'monotonic')).toEqual([]);
  });

  it('refuses text that is not an entry', () => {
    expect(() => appendLogEntry(undefined, '- Commit: x')).toThrow(HillclimbError);
  });
});
