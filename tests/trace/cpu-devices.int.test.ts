/**
 * XLA:CPU with several devices: a pmap over 4 (and 2) forced host devices, traced by real JAX
 * (tests/fixtures/jax-cpu-pmap/generate.py). XLA:CPU runs every device on one pool of host threads, so
 * only each op's `device_ordinal` tells the devices apart.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { diffSummaries } from '../../src/trace/diff.js';
import { openTrace } from '../../src/trace/readers/open.js';
import { summarizeTrace } from '../../src/trace/summarize.js';
import { FIXTURES } from '../helpers/paths.js';

const PMAP4 = join(FIXTURES, 'jax-cpu-pmap/pmap4');
const PMAP2 = join(FIXTURES, 'jax-cpu-pmap/pmap2');

describe('XLA:CPU traces of a pmap over forced host devices', () => {
  it('keeps the 4 devices apart: per-device steps, busy time within the step on every device', async () => {
    const s = await summarizeTrace(openTrace(PMAP4).source);
    expect(s.platform).toBe('cpu');
    expect(s.devices.map((d) => [d.name, d.kind, d.compute])).toEqual([
      ['/host:CPU:0', 'host', true],
      ['/host:CPU:1', 'host', true],
      ['/host:CPU:2', 'host', true],
      ['/host:CPU:3', 'host', true],
    ]);
    expect(s.steps).toMatchObject({ detector: 'host-annotations', count: 3, deviceSteps: 12 });
    const stepMs = s.steps.timeMs!;
    // Busy and op time per step are per device (the mean of 4), never the 4 devices added up.
    expect(s.steps.busyMs).toBeLessThanOrEqual(stepMs.mean);
    for (const d of s.devices) expect(d.busyMs).toBeLessThanOrEqual(stepMs.mean * s.steps.count);
    expect(s.steps.opSpread).toMatchObject({ devices: 4 });
    expect(s.steps.opSpread!.slowestMs).toBeLessThanOrEqual(stepMs.max);
    // The pmapped program ran once per step on each device; the cross-checks agree on 3 steps.
    const step = s.programs.find((p) => p.module === 'jit__fun')!;
    expect(step).toMatchObject({ devices: 4, executions: 12 });
    for (const e of s.steps.estimates) expect(e.perDevice).toBe(3);
    // The psum ran once per device per step.
    expect(s.ops.find((o) => o.name === 'psum')!.occurrences).toBe(1);
  });

  it('trace diff of 2 against 4 devices warns that the device counts differ', async () => {
    const two = await summarizeTrace(openTrace(PMAP2).source);
    const four = await summarizeTrace(openTrace(PMAP4).source);
    expect(two.devices.map((d) => d.name)).toEqual(['/host:CPU:0', '/host:CPU:1']);
    const d = diffSummaries(two, four);
    expect([d.before.devices, d.after.devices]).toEqual([2, 4]);
    expect(d.warnings.join('\n')).toMatch(/different numbers of devices \(2 → 4\)/);
  });
});
