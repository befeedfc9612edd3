import { describe, expect, it } from 'vitest';
import { renderJobSummary } from '../../src/report/job-summary.js';
import { errored, historyRows, IMPROVED, invalidByCpuGate, measured } from './builders.js';
import { checkWellFormed, checkXyChart, mermaidBlocks } from './markdown-checks.js';

function run() {
  const a = measured(IMPROVED, { device: 'tpu' });
  a.iteration = 1;
  a.steps = {
    propose: {
      status: 'done',
      startedAt: '2026-11-21T23:58:12.000Z',
      finishedAt: '2026-11-22T00:02:24.000Z',
    },
    measure: {
      status: 'done',
      startedAt: '2026-11-22T00:05:00.000Z',
      finishedAt: '2026-11-22T00:06:30.000Z',
      note: 'n=5+5',
    },
  };
  const b = invalidByCpuGate();
  b.iteration = 2;
  const c = errored();
  c.iteration = 3;
  c.publish = { warnings: ['publish failed: HTTP 502'] };
  return [a, b, c];
}

describe('renderJobSummary', () => {
  it('has the run table, one trajectory and every iteration newest first', () => {
    const out = renderJobSummary(run(), historyRows(20));
    const md = out.markdown;
    expect(out.truncated).toBe(false);
    expect(md.startsWith('## hillclimb gdn, run `20261121-2340-ab12`\n\n| iter | verdict |')).toBe(true);
    expect(md).toContain(
      '| i001 | ✓ improved | Tile the chunk loop over K by 128 | −18.6% [−20.1%, −17.0%] | `1a2b3c4d5e` | — |',
    );
    expect(mermaidBlocks(md)).toHaveLength(1);
    checkXyChart(mermaidBlocks(md)[0]!);
    const order = ['### E error', '### ! invalid', '### ✓ improved'].map((h) => md.indexOf(h));
    expect(order.every((i) => i > 0)).toBe(true);
    expect([...order].sort((x, y) => x - y)).toEqual(order);
    expect(md).toContain('| measure | done | 1 min 30 s | n=5+5 |');
    expect(md).toContain('> warning: publish failed: HTTP 502');
    checkWellFormed(md);
  });

  it('stays under its byte cap, dropping raw values of the oldest iteration first', () => {
    const iterations = run();
    const full = renderJobSummary(iterations, historyRows(20));
    const bytes = Buffer.byteLength(full.markdown, 'utf8');
    const capped = renderJobSummary(iterations, historyRows(20), { maxBytes: bytes - 1 });
    expect(capped.reduced).toEqual(['raw:i001']);
    expect(capped.markdown).toContain(
      "_Raw per-run values left out to fit GitHub's size limit. The evidence bundles have everything._",
    );
    expect(Buffer.byteLength(capped.markdown, 'utf8')).toBeLessThanOrEqual(bytes - 1);
    const tiny = renderJobSummary(iterations, historyRows(20), { maxBytes: 2_500 });
    expect(Buffer.byteLength(tiny.markdown, 'utf8')).toBeLessThanOrEqual(2_500);
    expect(tiny.markdown).toContain('Shortened by hillclimb');
    checkWellFormed(tiny.markdown);
  });

  it('handles a huge diff under the 1 MiB default', () => {
    const ev = measured(IMPROVED, { extraOps: 20_000 });
    const out = renderJobSummary([ev], historyRows(20), { hotspotRows: 20_000 });
    expect(out.truncated).toBe(true);
    expect(Buffer.byteLength(out.markdown, 'utf8')).toBeLessThanOrEqual(1024 * 1024);
    checkWellFormed(out.markdown);
  });
});
