/**
 * A GPU capture of several workers, merged the way xprof shows a multi-host profile: every device and
 * host process is named after its host (`worker1 /device:GPU:3`, as in the `trace_viewer@` JSON's
 * `tw003 /device:GPU:0`). No such real file is in the repository, so this one is built from a real
 * single-host capture: xprof's trace-viewer JSON of the 8× MI300X convolution run
 * (`xprof-trace-viewer/conv08.trace_viewer.json.gz`), its processes replicated under three host names
 * with their own pids, events unchanged. Each worker ran the same five steps at the same time.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ChromeJsonSource } from '../../src/trace/readers/chrome-json.js';
import { summarizeTrace } from '../../src/trace/summarize.js';
import { FIXTURES, tempDir } from '../helpers/paths.js';

const SINGLE = join(FIXTURES, 'xprof-trace-viewer', 'conv08.trace_viewer.json.gz');
const WORKERS = ['worker0', 'worker1', 'worker2'];
/** Pids of worker k are the single host's plus k × this. */
const PID_STRIDE = 100_000;

interface Event {
  ph?: string;
  pid?: number;
  name?: string;
  args?: Record<string, unknown>;
}

function multiWorkerTrace(dir: string): string {
  const doc = JSON.parse(gunzipSync(readFileSync(SINGLE)).toString('utf8')) as { traceEvents: Event[] };
  const traceEvents: Event[] = [];
  WORKERS.forEach((host, k) => {
    for (const e of doc.traceEvents) {
      if (e.pid === undefined) {
        if (k === 0) traceEvents.push(e);
        continue;
      }
      const copy: Event = { ...e, pid: e.pid + k * PID_STRIDE };
      if (e.ph === 'M' && e.name === 'process_name')
        copy.args = { ...e.args, name: `${host} ${e.args!.name}` };
      traceEvents.push(copy);
    }
  });
  const path = join(dir, 'workers.trace.json.gz');
  writeFileSync(path, gzipSync(JSON.stringify({ ...doc, traceEvents })));
  return path;
}

describe('trace summary of a GPU capture of three workers (host-named devices)', () => {
  it('keeps every worker’s devices apart and finds the steps each worker ran', async () => {
    const tmp = tempDir('hc-multi-worker-');
    const single = await summarizeTrace(new ChromeJsonSource(SINGLE));
    const s = await summarizeTrace(new ChromeJsonSource(multiWorkerTrace(tmp.dir))).finally(tmp.cleanup);
    expect(single.devices).toHaveLength(8);
    expect(s.platform).toBe('gpu');
    // 8 GPUs per worker, none merged with another worker's GPU of the same number.
    expect(s.devices).toHaveLength(24);
    for (const host of WORKERS) {
      const mine = s.devices.filter((d) => d.name.startsWith(`${host} /device:GPU:`));
      expect(mine.map((d) => d.name).sort()).toEqual(single.devices.map((d) => `${host} ${d.name}`).sort());
      expect(mine.every((d) => d.kind === 'gpu')).toBe(true);
    }
    // Each device keeps its own time: nothing is added up across workers.
    const byName = new Map(single.devices.map((d) => [d.name, d]));
    for (const d of s.devices) {
      const own = byName.get(d.name.slice(d.name.indexOf(' ') + 1))!;
      expect(d.opMs).toBeCloseTo(own.opMs, 6);
    }
    expect(s.total.deviceMs).toBeCloseTo(3 * single.total.deviceMs, 3);
    // The workers ran the same steps side by side: five steps, not fifteen.
    expect(single.steps.count).toBe(5);
    expect(s.steps.detector).toBe(single.steps.detector);
    expect(s.steps.count).toBe(single.steps.count);
    expect(s.steps.deviceSteps).toBe(3 * single.steps.deviceSteps);
    // The launches come from each worker's own host threads (8 per worker).
    expect(single.steps.detail).toMatch(/: 40 from 8 thread\(s\)/);
    expect(s.steps.detail).toMatch(/: 120 from 24 thread\(s\)/);
    // A step's op time is per device: the same as on one worker.
    expect(s.steps.opMs).toBeCloseTo(single.steps.opMs, 6);
    // Per step and device, every op is what it was on one worker.
    expect(s.ops.map((o) => [o.name, o.program])).toEqual(single.ops.map((o) => [o.name, o.program]));
    for (const [k, op] of single.ops.entries()) {
      expect(s.ops[k]!.occurrences).toBeCloseTo(op.occurrences, 9);
      expect(s.ops[k]!.timeMs).toBeCloseTo(op.timeMs, 6);
    }
  });
});
