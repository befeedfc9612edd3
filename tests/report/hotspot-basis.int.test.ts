/**
 * The log entry and the terminal's profile line follow the trace diff's basis, as the PR comment's
 * hotspot table does: on a real trace pair whose steps are unreliable (the MI300X elementwise trace
 * before, the attention trace after) the top hotspots are the whole-trace rows, and the per-step step
 * time is not what leads.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { beforeAfter, customCallNames, hotspotLine, topChanges } from '../../src/report/hotspots.js';
import { renderLogEntry } from '../../src/report/log-entry.js';
import { lintLog } from '../../src/report/log-lint.js';
import { progressLine } from '../../src/report/terminal.js';
import { diffSummaries } from '../../src/trace/diff.js';
import { XplaneSource } from '../../src/trace/readers/xplane.js';
import { summarizeTrace } from '../../src/trace/summarize.js';
import type { TraceDiff, TraceSummary } from '../../src/trace/types.js';
import { REAL_TRACES } from '../helpers/paths.js';
import { IMPROVED, measured } from './builders.js';

const MI300 = join(REAL_TRACES, 'TraceLens/tests/traces/mi300');
const ELEMENTWISE = join(MI300, 'jax08_elementwise/tw003.xplane.pb');
const ATTENTION = join(MI300, 'jax08_attention/tw003.xplane.pb');
const CONV8 = join(MI300, 'jax_conv_minimal_08/tw003.xplane.pb');

function withDiff(champion: TraceSummary, candidate: TraceSummary, diff: TraceDiff) {
  const ev = measured(IMPROVED);
  ev.profile = {
    status: 'done',
    candidateTrace: 'profile/candidate-trace',
    championTrace: 'profile/champion-trace',
    summary: candidate,
    championSummary: champion,
    diff,
  };
  return ev;
}

const byDelta = (rows: TraceDiff['ops']) =>
  [...rows].sort((x, y) => Math.abs(y.delta) - Math.abs(x.delta) || (x.name < y.name ? -1 : 1));

describe('hotspots in the log entry and on the terminal follow the diff’s basis', () => {
  let champion: TraceSummary;
  let candidate: TraceSummary;
  let diff: TraceDiff;
  beforeAll(async () => {
    champion = await summarizeTrace(new XplaneSource(ELEMENTWISE));
    candidate = await summarizeTrace(new XplaneSource(ATTENTION));
    diff = diffSummaries(champion, candidate);
  });

  it('whole-trace basis: the log entry leads with the device op time and the whole-trace rows', () => {
    expect(diff.basis).toBe('whole-trace');
    const top = byDelta(diff.wholeTrace!).slice(0, 3);
    // The per-step rows would name other ops: the point of following the basis.
    expect(topChanges(diff.ops, 3).map((r) => r.name)).not.toEqual(top.map((r) => r.name));
    const ev = withDiff(champion, candidate, diff);
    const lines = renderLogEntry(ev).split('\n');
    expect(lines.filter((l) => l.startsWith('- Hotspot: '))).toEqual(
      top.map((r) => `- Hotspot: ${hotspotLine(r, customCallNames(ev.profile!).has(r.name), true)}`),
    );
    // Each names its program: `loop_convert_fusion` comes from two of them here.
    const hot = lines.filter((l) => l.startsWith('- Hotspot: '));
    for (const [i, r] of top.entries()) expect(hot[i]).toContain(`\`${r.name}\` in \`${r.program}\``);
    expect(new Set(top.map((r) => r.name)).size).toBeLessThan(top.length);
    expect(lines.filter((l) => l.startsWith('- Hotspot: ')).every((l) => l.endsWith('whole trace]'))).toBe(
      true,
    );
    expect(lines).toContain(
      `- Device op time: ${beforeAfter(diff.deviceMs)} over the whole trace, all devices (its steps hold too little of it to compare per step)`,
    );
    expect(lines.some((l) => l.startsWith('- Step time:'))).toBe(false);
    // The entry is what lint renders again from the same evidence.
    expect(
      lintLog(renderLogEntry(ev), {
        scope: 'all',
        loadEvidence: () => ({ status: 'found', evidence: ev }) as const,
      }).filter((p) => p.severity === 'error'),
    ).toEqual([]);
  });

  it('whole-trace basis: the terminal names the whole trace and its top row', () => {
    const ev = withDiff(champion, candidate, diff);
    const top = byDelta(diff.wholeTrace!)[0]!;
    const line = progressLine(ev, 'profile');
    expect(line).toContain(`whole trace: device op time ${beforeAfter(diff.deviceMs)}`);
    expect(line).toContain(`top Δ ${top.name} `);
    expect(line).not.toContain('step ');
  });

  it('per-step basis (the 8-GPU convolution against itself): the step time and per-step rows, as before', async () => {
    const conv = await summarizeTrace(new XplaneSource(CONV8));
    const same = diffSummaries(conv, conv);
    expect(same.basis).toBe('per-step');
    const ev = withDiff(conv, conv, same);
    const lines = renderLogEntry(ev).split('\n');
    expect(lines.filter((l) => l.startsWith('- Hotspot: '))).toEqual(
      topChanges(same.ops, 3).map(
        (r) => `- Hotspot: ${hotspotLine(r, customCallNames(ev.profile!).has(r.name))}`,
      ),
    );
    expect(lines.some((l) => l.startsWith('- Device op time:'))).toBe(false);
  });
});
