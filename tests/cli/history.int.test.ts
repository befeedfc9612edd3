// `hillclimb history --chart` through the real CLI, on a history as the loop writes it: the newest
// rows measured nothing (an invalid and a no-op iteration: their metric is empty), and two targets.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { HistoryRow } from '../../src/evidence/index.js';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/paths.js';
import { TOY_CONFIG } from '../loop/toy-repo.js';
import { historyRows } from '../report/builders.js';
import { checkXyChart, mermaidBlocks } from '../report/markdown-checks.js';

const NO_METRIC = { path: '', direction: 'lower' as const, label: '', unit: '' };

describe('hillclimb history --chart', () => {
  const t = tempDir('hc-history-chart-');
  afterAll(t.cleanup);

  it('charts every measured iteration of every target, though the newest rows measured nothing', async () => {
    // i1 improved, i2 no-change, i3 regressed, i4 invalid, i5 no-change, i6 error, i7 no-op
    const unmeasuredHaveNoMetric = (r: HistoryRow): HistoryRow =>
      r.a === null ? { ...r, metric: NO_METRIC } : r;
    const gdn = historyRows(7).map(unmeasuredHaveNoMetric);
    const norm = historyRows(2, { runId: 'norm-run' }).map((r) => ({ ...r, target: 'rmsnorm' }));
    mkdirSync(join(t.dir, '.hillclimb'));
    writeFileSync(join(t.dir, 'hillclimb.yml'), TOY_CONFIG);
    writeFileSync(
      join(t.dir, '.hillclimb', 'history.jsonl'),
      `${[...norm, ...gdn].map((r) => JSON.stringify(r)).join('\n')}\n`,
    );
    const r = await runCli(['history', '--chart', '--root', t.dir]);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('No measured iterations yet');
    expect(r.stdout).toContain('#### Trajectory: rmsnorm');
    expect(r.stdout).toContain('#### Trajectory: gdn');
    const [normChart, gdnChart] = mermaidBlocks(r.stdout).map((c) => checkXyChart(c));
    expect(normChart!.labels).toEqual(['i1', 'i2']);
    expect(gdnChart!.labels).toEqual(['i1', 'i2', 'i3', 'i5']);
    expect(r.stdout).toContain('Not plotted (no measurement): i4 invalid, i6 error, i7 no-op.');
  });
});
