/**
 * Several GPUs without step windows of their own (steps from the host's launches): every per-step op
 * time is a mean over the devices, which hides how long the slowest device — the one that gates the
 * step, as a windowed step's slowest device does — spent, and shrinks an op that ran on a few devices.
 * The summary names the slowest device with its own op time per step, and each op's slowest device.
 * Real fixtures: the 8× MI300X convolution, as an XSpace and as xprof's trace-viewer JSON.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { formatSummary } from '../../src/report/trace-tables.js';
import { ChromeJsonSource } from '../../src/trace/readers/chrome-json.js';
import { XplaneSource } from '../../src/trace/readers/xplane.js';
import { summarizeTrace } from '../../src/trace/summarize.js';
import { FIXTURES, REAL_TRACES, tempDir } from '../helpers/paths.js';

const CONV8 = join(REAL_TRACES, 'TraceLens/tests/traces/mi300/jax_conv_minimal_08/tw003.xplane.pb');
const CONV8_JSON = join(FIXTURES, 'xprof-trace-viewer', 'conv08.trace_viewer.json.gz');

interface Event {
  ph?: string;
  pid?: number;
  tid?: number;
  name?: string;
  dur?: number;
  args?: Record<string, string>;
}

function events(): Event[] {
  return (JSON.parse(gunzipSync(readFileSync(CONV8_JSON)).toString('utf8')) as { traceEvents: Event[] })
    .traceEvents;
}

/** Kernel events per device name, from the JSON itself (an independent sum: kernels do not nest). */
function kernelMsPerDevice(evs: Event[], module: string, steps: number): Map<string, number> {
  const process = new Map<number, string>();
  const thread = new Map<string, string>();
  for (const e of evs) {
    if (e.ph === 'M' && e.name === 'process_name') process.set(e.pid!, e.args!.name!);
    if (e.ph === 'M' && e.name === 'thread_name') thread.set(`${e.pid}/${e.tid}`, e.args!.name!);
  }
  const out = new Map<string, number>();
  for (const e of evs) {
    if (e.ph !== 'X' || !/\(Kernel\)/.test(thread.get(`${e.pid}/${e.tid}`) ?? '')) continue;
    if (e.args?.hlo_module !== module) continue;
    const device = process.get(e.pid!)!;
    out.set(device, (out.get(device) ?? 0) + e.dur! / 1000 / steps);
  }
  return out;
}

describe('op time per step across GPUs without step windows', () => {
  it('names the slowest device and its op time per step; the same from the XSpace and the JSON', async () => {
    const expected = kernelMsPerDevice(events(), 'jit_forward_3d_conv', 5);
    const slowestMs = Math.max(...expected.values());
    const slowest = [...expected].find(([, v]) => v === slowestMs)![0];
    for (const source of [new XplaneSource(CONV8), new ChromeJsonSource(CONV8_JSON)]) {
      const s = await summarizeTrace(source);
      expect(s.steps).toMatchObject({ detector: 'host-launches', count: 5, opMs: 0.688767 });
      expect(s.steps.deviceSpread).toBeUndefined();
      const spread = s.steps.opSpread!;
      expect(spread).toMatchObject({ devices: 8, slowest, meanMs: s.steps.opMs });
      expect(slowest).toBe('/device:GPU:2');
      expect(spread.slowestMs).toBeCloseTo(slowestMs, 5);
      expect(spread.fastestMs).toBeCloseTo(Math.min(...expected.values()), 5);
      // Each op's slowest device: at least the mean, at most the slowest device's whole op time.
      for (const op of s.ops) {
        expect(op.slowestDeviceMs, op.name).toBeGreaterThanOrEqual(op.timeMs - 1e-6);
        expect(op.slowestDeviceMs, op.name).toBeLessThanOrEqual(spread.slowestMs + 1e-6);
      }
      const text = formatSummary(s);
      expect(text).toContain(
        `op times per step are the mean of 8 devices (no step windows of their own); the slowest, ${slowest}, `,
      );
      expect(text).toContain('slowest device/step');
    }
  });

  it('an op that ran on one GPU of eight keeps its time on that GPU, beside the mean that divides it by eight', async () => {
    const t = tempDir('hc-op-spread-');
    try {
      // The real capture, with the loop_transpose_fusion kernels of GPUs 1–7 taken out.
      const evs = events();
      const process = new Map(
        evs.filter((e) => e.ph === 'M' && e.name === 'process_name').map((e) => [e.pid, e.args!.name!]),
      );
      const kept = evs.filter(
        (e) =>
          !(
            e.ph === 'X' &&
            e.args?.hlo_op === 'loop_transpose_fusion' &&
            process.get(e.pid) !== '/device:GPU:0'
          ),
      );
      expect(kept.length).toBeLessThan(evs.length);
      const path = join(t.dir, 'one-gpu-op.trace.json.gz');
      writeFileSync(path, gzipSync(JSON.stringify({ traceEvents: kept })));
      const full = (await summarizeTrace(new ChromeJsonSource(CONV8_JSON))).ops.find(
        (o) => o.name === 'loop_transpose_fusion',
      )!;
      const s = await summarizeTrace(new ChromeJsonSource(path));
      const op = s.ops.find((o) => o.name === 'loop_transpose_fusion')!;
      expect(s.steps.count).toBe(5);
      // The mean over eight devices is an eighth of what GPU:0 spent on it per step…
      expect(op.timeMs * 8).toBeCloseTo(op.slowestDeviceMs!, 5);
      // …which is what it spent per step there before the others' kernels were taken out.
      const gpu0 = kernelMsPerDevice(kept, 'jit_forward_3d_conv', 5);
      expect(op.slowestDeviceMs!).toBeLessThanOrEqual(gpu0.get('/device:GPU:0')!);
      expect(op.slowestDeviceMs!).toBeGreaterThan(full.timeMs * 0.5);
    } finally {
      t.cleanup();
    }
  });
});
