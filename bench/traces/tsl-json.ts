/**
 * Converts an XSpace into the `trace.json` that jax.profiler writes, following tsl's
 * `xplane_to_trace_events.cc` + `trace_events_to_json.cc` (see reference/traces.md §2):
 *
 * - host plane `/host:CPU` → pid 701; device planes (GPU, else TPU, else CUSTOM) → pid 1 + plane id;
 * - tid = line display id (else id), truncated to uint32; thread name = display name (else name);
 * - `Async XLA Ops` lines and internal events (memory allocation, tf.data produce/consume) are dropped;
 * - name = display name with `args.long_name` = full name; a `step_name` stat replaces the name;
 * - args = metadata stats then event stats, as strings, keys sorted, internal stats dropped;
 * - ts/dur printed as `%.17g` of ps / 1e6, durations at least 1 ps; events in plane/line order
 *   (sorted by time only when capped); metadata events first; a `{}` dummy element at the end.
 *
 * Used by the tests (JSON path on real data) and by the benchmark's synthetic generator.
 */
import { XplaneSource } from '../../src/trace/readers/xplane.js';

export const HOST_PID = 701;
const HOST_PLANE = '/host:CPU';
const ASYNC_LINE = 'Async XLA Ops';
/** `IsInternalStat` in current tsl. */
const INTERNAL_STATS = new Set([
  'kernel_details',
  '_pt',
  '_p',
  '_ct',
  '_c',
  '_r',
  'flops',
  'bytes_accessed',
  'program_id',
  'symbol_id',
]);
/** `IsInternalEvent` in current tsl. */
const INTERNAL_EVENTS = new Set([
  'MemoryAllocation',
  'MemoryDeallocation',
  'PrefetchProduce',
  'PrefetchConsume',
  'ParallelInterleaveProduce',
  'ParallelInterleaveConsume',
  'ParallelInterleaveInitializedInput',
  'ParallelMapProduce',
  'ParallelMapConsume',
  'MapAndBatchProduce',
  'MapAndBatchConsume',
  'ParseExampleProduce',
  'ParseExampleConsume',
]);

export interface TslResource {
  tid: number;
  name: string;
  sortIndex: number;
}

export interface TslDevice {
  pid: number;
  name: string;
  resources: TslResource[];
}

export interface TslEvent {
  pid: number;
  tid: number;
  tsPs: number;
  durPs: number;
  name: string;
  args: Record<string, string>;
}

export interface TslTrace {
  devices: TslDevice[];
  events: TslEvent[];
}

/** Convert an `.xplane.pb` into tsl's trace container: devices, resources and events. */
export async function xspaceToTsl(xplanePath: string, opts: { cap?: number } = {}): Promise<TslTrace> {
  // Which planes are exported depends on all plane names, so list them first.
  const planeNames = new Set<string>();
  await new XplaneSource(xplanePath).read({
    wantLane(lane) {
      planeNames.add(lane.device.name);
      return false;
    },
    onEvent() {},
  });
  const names = [...planeNames];
  const prefix = ['/device:GPU:', '/device:TPU:', '/device:CUSTOM:'].find((p) =>
    names.some((n) => n.startsWith(p)),
  );

  const devices = new Map<string, TslDevice>();
  const hostEvents: TslEvent[] = [];
  const deviceEvents: TslEvent[] = [];
  await new XplaneSource(xplanePath).read({
    wantLane(lane) {
      const plane = lane.device.name;
      const isHost = plane === HOST_PLANE;
      if (!isHost && (prefix === undefined || !plane.startsWith(prefix))) return false;
      const pid = isHost ? HOST_PID : 1 + Number(lane.device.rawId);
      let device = devices.get(plane);
      if (device === undefined) {
        device = { pid, name: plane, resources: [] };
        devices.set(plane, device);
      }
      const tid = Number(BigInt.asUintN(32, BigInt(lane.rawId)));
      if (!device.resources.some((r) => r.tid === tid)) {
        device.resources.push({
          tid,
          name: lane.name,
          sortIndex: isHost ? device.resources.length + 1 : tid,
        });
      }
      return lane.name !== ASYNC_LINE;
    },
    onEvent(lane, ev) {
      const longName = ev.longName();
      const fullName = longName ?? ev.name;
      if (INTERNAL_EVENTS.has(fullName)) return;
      const args: Record<string, string> = {};
      for (const [k, v] of Object.entries(ev.args())) if (!INTERNAL_STATS.has(k)) args[k] = v;
      const isHost = lane.device.name === HOST_PLANE;
      const target = isHost ? hostEvents : deviceEvents;
      target.push({
        pid: isHost ? HOST_PID : 1 + Number(lane.device.rawId),
        tid: Number(BigInt.asUintN(32, BigInt(lane.rawId))),
        tsPs: ev.startPs,
        durPs: ev.durPs,
        name: args.step_name ?? ev.name,
        args,
      });
    },
  });
  let events = [...hostEvents, ...deviceEvents];
  if (opts.cap !== undefined && events.length > opts.cap) {
    events = events.sort((a, b) => a.tsPs - b.tsPs).slice(0, opts.cap);
  }
  return { devices: [...devices.values()], events };
}

/** `%.17g`, as tsl prints times (`MaxPrecision(PicoToMicro(ps))`). */
export function formatG17(x: number): string {
  if (x === 0) return '0';
  const exp = Number(x.toExponential(16).split('e')[1]);
  if (exp < -4 || exp >= 17) {
    const [mantissa, e] = x.toExponential(16).split('e') as [string, string];
    const m = mantissa.includes('.') ? mantissa.replace(/0+$/, '').replace(/\.$/, '') : mantissa;
    const sign = e.startsWith('-') ? '-' : '+';
    return `${m}e${sign}${e.replace(/^[+-]/, '').padStart(2, '0')}`;
  }
  const fixed = x.toFixed(16 - exp);
  return fixed.includes('.') ? fixed.replace(/0+$/, '').replace(/\.$/, '') : fixed;
}

/** The metadata events, exactly as tsl writes them (devices by pid, resources by tid). */
export function metadataJson(devices: readonly TslDevice[]): string {
  let out = '';
  for (const d of [...devices].sort((a, b) => a.pid - b.pid)) {
    if (d.name !== '') {
      out += `{"ph":"M","pid":${d.pid},"name":"process_name","args":{"name":${JSON.stringify(d.name)}}},`;
    }
    out += `{"ph":"M","pid":${d.pid},"name":"process_sort_index","args":{"sort_index":${d.pid}}},`;
    for (const r of [...d.resources].sort((a, b) => a.tid - b.tid)) {
      if (r.name !== '') {
        out += `{"ph":"M","pid":${d.pid},"tid":${r.tid},"name":"thread_name","args":{"name":${JSON.stringify(r.name)}}},`;
      }
      out += `{"ph":"M","pid":${d.pid},"tid":${r.tid},"name":"thread_sort_index","args":{"sort_index":${r.sortIndex}}},`;
    }
  }
  return out;
}

/** One complete event with its trailing comma, exactly as tsl writes it. */
export function eventJson(e: TslEvent): string {
  let out = `{"ph":"X","pid":${e.pid},"tid":${e.tid},"ts":${formatG17(e.tsPs / 1e6)},"dur":${formatG17(Math.max(e.durPs, 1) / 1e6)},"name":${JSON.stringify(e.name)}`;
  const keys = Object.keys(e.args).sort();
  if (keys.length > 0) {
    out += ',"args":{';
    out += keys.map((k) => `${JSON.stringify(k)}:${JSON.stringify(e.args[k])}`).join(',');
    out += '}';
  }
  return `${out}},`;
}

export const JSON_HEAD = '{"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[';
export const JSON_TAIL = '{}]}';

/** The whole trace.json text (for small traces; the benchmark streams the same pieces). */
export function tslToJson(trace: TslTrace): string {
  const parts = [JSON_HEAD, metadataJson(trace.devices)];
  for (const e of trace.events) parts.push(eventJson(e));
  parts.push(JSON_TAIL);
  return parts.join('');
}
