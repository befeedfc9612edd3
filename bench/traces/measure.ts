/**
 * One measurement, run in a fresh process by the benchmark (main.ts) so each gets its own peak RSS.
 * Prints one JSON line: wall and CPU seconds, peak RSS, bytes processed, events and distinct names.
 *
 * Every reader does the same work: sum the duration of complete events by name (what marin's profiling
 * ingest does first), so MB/s compare like for like. `summary` is the whole `hillclimb trace summary`.
 */
import { createReadStream, readFileSync } from 'node:fs';
import { createGunzip, gunzipSync } from 'node:zlib';
import { ChromeJsonSource } from '../../src/trace/readers/chrome-json.js';
import type { TraceSource } from '../../src/trace/readers/model.js';
import { XplaneSource } from '../../src/trace/readers/xplane.js';
import { summarizeTrace } from '../../src/trace/summarize.js';

/** JAX's device_kind of the synthetic workload (4 TPU v6e cores). */
const SYNTHETIC_DEVICE_KIND = 'TPU v6 lite';

export type MeasureKind = 'gunzip' | 'json-reader' | 'xplane-reader' | 'summary' | 'json-parse';

export interface Measurement {
  kind: MeasureKind;
  wallS: number;
  cpuS: number;
  maxRssMB: number;
  /** Uncompressed bytes processed (JSON text, or the .pb size). */
  bytes: number;
  events: number;
  names: number;
}

export async function measure(kind: MeasureKind, path: string): Promise<Measurement> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const { bytes, events, names } = await work(kind, path);
  const cpu = process.cpuUsage(c0);
  return {
    kind,
    wallS: (performance.now() - t0) / 1000,
    cpuS: (cpu.user + cpu.system) / 1e6,
    maxRssMB: process.resourceUsage().maxRSS / 1024,
    bytes,
    events,
    names,
  };
}

async function work(
  kind: MeasureKind,
  path: string,
): Promise<{ bytes: number; events: number; names: number }> {
  switch (kind) {
    case 'gunzip':
      return gunzipOnly(path);
    case 'json-reader':
      return byName(new ChromeJsonSource(path));
    case 'xplane-reader':
      return byName(new XplaneSource(path));
    case 'summary': {
      const source: TraceSource = path.endsWith('.pb') ? new XplaneSource(path) : new ChromeJsonSource(path);
      // The synthetic workload's device (JSON traces do not name it), so the roofline is computed too.
      const s = await summarizeTrace(source, { deviceKind: SYNTHETIC_DEVICE_KIND });
      if (!s.ops.some((o) => o.flops !== null && o.roofline !== null)) {
        throw new Error(`${path}: the summary has no FLOPs and roofline, so it is not the full analysis`);
      }
      return { bytes: s.source.bytes, events: s.source.events, names: s.ops.length };
    }
    case 'json-parse':
      return wholeParse(path);
  }
}

/** Our reader: total duration per event name. */
async function byName(source: TraceSource): Promise<{ bytes: number; events: number; names: number }> {
  const totals = new Map<string, number>();
  const stats = await source.read({
    wantLane: () => true,
    onEvent(_lane, ev) {
      const name = ev.name;
      totals.set(name, (totals.get(name) ?? 0) + ev.durPs);
    },
  });
  return { bytes: stats.bytes, events: stats.events, names: totals.size };
}

async function gunzipOnly(path: string): Promise<{ bytes: number; events: number; names: number }> {
  let bytes = 0;
  const stream = createReadStream(path, { highWaterMark: 1 << 20 }).pipe(
    createGunzip({ chunkSize: 1 << 20 }),
  );
  for await (const chunk of stream) bytes += (chunk as Buffer).length;
  return { bytes, events: 0, names: 0 };
}

/** The naive way: decompress everything, one JSON.parse, then aggregate. */
function wholeParse(path: string): { bytes: number; events: number; names: number } {
  const raw = gunzipSync(readFileSync(path));
  const doc = JSON.parse(raw.toString('utf8')) as {
    traceEvents: { ph?: string; name?: string; dur?: number }[];
  };
  const totals = new Map<string, number>();
  let events = 0;
  for (const e of doc.traceEvents) {
    if (e.ph !== 'X') continue;
    events++;
    totals.set(e.name ?? '', (totals.get(e.name ?? '') ?? 0) + (e.dur ?? 0));
  }
  return { bytes: raw.length, events, names: totals.size };
}
