// docs/reports.md shows a rendered comment and log entry; they must be what the code renders today.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderComment } from '../../src/report/comment.js';
import { renderLogEntry } from '../../src/report/log-entry.js';
import { baselineSection } from '../../src/report/trajectory.js';
import { REPO_ROOT } from '../helpers/paths.js';
import { historyRows, IMPROVED, measured, withLevels } from './builders.js';

const DOC = readFileSync(join(REPO_ROOT, 'docs', 'reports.md'), 'utf8');

/** The docs' example: a TPU iteration that measured both levels (kernel and the 130m model's step). */
function example() {
  const ev = withLevels(measured(IMPROVED, { device: 'tpu' }));
  ev.publish = {
    warnings: [],
    perfettoUrl:
      'https://ui.perfetto.dev/#!/?url=https%3A%2F%2Fhuggingface.co%2Fdatasets%2Facme%2Fhillclimb-evidence%2Fresolve%2Fmain%2Fruns%2F20261121-2340-ab12%2Fi003%2Fprofile%2Fcandidate-trace%2Fperfetto_trace.json.gz',
    bundleUrl:
      'https://huggingface.co/datasets/acme/hillclimb-evidence/resolve/main/runs/20261121-2340-ab12/i003/evidence.json',
  };
  return ev;
}

/** Six nightly rows of main, for the baseline chart in the docs. */
function nightlyExample() {
  return historyRows(9, { levels: true })
    .filter((r) => r.b !== null)
    .map((r, i) => ({
      ...r,
      runId: `baseline-${i}`,
      iteration: 1,
      at: `2026-11-${String(10 + i).padStart(2, '0')}T02:41:00.000Z`,
    }));
}

describe('docs/reports.md', () => {
  it('shows the baseline chart the code renders', () => {
    const block = /<!-- baseline-example:start -->\n([\s\S]*?)\n<!-- baseline-example:end -->/.exec(DOC)?.[1];
    expect(block).toBe(baselineSection(nightlyExample()));
  });

  it('shows the comment the code renders', () => {
    const block = /````text\n([\s\S]*?)\n````/.exec(DOC)?.[1];
    expect(block).toBe(renderComment(example(), historyRows(5, { levels: true })).body);
  });

  it('shows the log entry the code renders', () => {
    const block = /```text\n(### Iteration [\s\S]*?)\n```\n/.exec(DOC)?.[1];
    expect(block).toBe(renderLogEntry(example()).trimEnd());
  });
});
