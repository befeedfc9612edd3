/**
 * XLA:CPU with several devices: a pmap over 4 (and 2) forced host devices, traced by real JAX
 * (tests/fixtures/jax-cpu-pmap/generate.py). XLA:CPU runs every device on one pool of host threads, so
 * only each op's `device_ordinal` tells the devices apart.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { diffSummaries } from '../../src/trace/diff.js';
import { summarizeTracePath } from '../../src/trace/from-path.js';
import { openTrace } from '../../src/trace/readers/open.js';
import { summarizeTrace } from '../../src/trace/summarize.js';
import { FIXTURES, tempDir } from '../helpers/paths.js';

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

describe('a multi-host profile run (one <host>.xplane.pb per host)', () => {
  it('reads every host, each host’s devices kept apart and named after it', async () => {
    const t = tempDir();
    try {
      // The profiler's layout: plugins/profile/<run>/<host>.xplane.pb, one file per host.
      const run = join(t.dir, 'plugins/profile/2026_12_06_19_00_00');
      mkdirSync(run, { recursive: true });
      const xspace = join(PMAP4, 'plugins/profile/run/cpu.xplane.pb');
      for (const host of ['worker-0', 'worker-1']) copyFileSync(xspace, join(run, `${host}.xplane.pb`));
      const one = await summarizeTrace(openTrace(PMAP4).source);
      const s = await summarizeTracePath(t.dir);
      expect(s.source.path).toBe(run);
      expect(s.devices.map((d) => d.name)).toEqual([
        ...[0, 1, 2, 3].map((k) => `worker-0 /host:CPU:${k}`),
        ...[0, 1, 2, 3].map((k) => `worker-1 /host:CPU:${k}`),
      ]);
      expect(s.devices.every((d) => d.kind === 'host' && d.compute)).toBe(true);
      // Both hosts annotated the same 3 steps (they share one time origin): 3 per device, 24 device-steps.
      expect(s.steps).toMatchObject({ detector: 'host-annotations', count: 3, deviceSteps: 24 });
      expect(s.total.deviceMs).toBeCloseTo(2 * one.total.deviceMs, 6);
      expect(s.steps.opMs).toBeCloseTo(one.steps.opMs, 6);
      expect(s.programs.find((p) => p.module === 'jit__fun')).toMatchObject({ devices: 8, executions: 24 });
      // Costs come from the hosts' HLO as from one host's.
      const psum = (x: typeof s) => x.ops.find((o) => o.name === 'psum')!.flopsPerExecution;
      expect(psum(s)).toBe(64);
      expect(psum(s)).toBe(psum(one));
      expect(s.notes.join('\n')).toMatch(
        /2 hosts read together \(worker-0\.xplane\.pb, worker-1\.xplane\.pb\)/,
      );
      expect(s.warnings).toEqual(one.warnings);
    } finally {
      t.cleanup();
    }
  });
});
