/**
 * The normalized trace model shared by every reader (Chrome trace JSON, XSpace protobuf).
 *
 * A reader streams events lane by lane: a lane is one timeline (a Chrome `tid`, an XSpace `XLine`)
 * on one device (a Chrome `pid`, an `XPlane`). Events are handed to a visitor as short-lived views so a
 * multi-GB trace never becomes a multi-GB object graph; a visitor copies what it keeps.
 *
 * Times are integer picoseconds held in JS numbers, relative to the source's origin (`ReadStats.originPs`):
 * profiler traces are normalized to the profile start, so relative times stay far below 2^53 ps (2.5 h).
 */

/** What kind of hardware a device (process / plane) is. */
export type DeviceKind = 'tpu' | 'gpu' | 'host' | 'custom' | 'unknown';

export interface TraceDevice {
  /** Dense index of the device within one read. */
  readonly index: number;
  /** Process or plane name: `/device:TPU:0`, `/host:CPU`, `GPU 3`, or `pid 12` when the trace names none. */
  readonly name: string;
  /** The Chrome `pid` or the XSpace plane id, as written in the file. */
  readonly rawId: string;
  readonly kind: DeviceKind;
  /** Plane-level stats from an XSpace (`device_type_string`, `peak_teraflops_per_second`, …); empty for JSON. */
  readonly stats: Readonly<Record<string, string>>;
}

export interface TraceLane {
  /** Dense index of the lane within one read. */
  readonly index: number;
  readonly device: TraceDevice;
  /** Thread or line name: `XLA Ops`, `main/3116817`, `stream 7`, or `tid 5` when the trace names none. */
  readonly name: string;
  /** The Chrome `tid` or the XSpace line display id, as written in the file. */
  readonly rawId: string;
}

/**
 * One complete event, valid only during the visitor call that receives it.
 * `arg()` values are strings, as in the JSON the profiler writes, whatever the source format.
 */
export interface TraceEventView {
  /** Short name: the XSpace display name, else the full name; the Chrome `name`. */
  readonly name: string;
  /** Start, in ps relative to the source origin. */
  readonly startPs: number;
  /** Duration in ps (at least 0). */
  readonly durPs: number;
  /** The Chrome `cat` field, when present. */
  readonly category: string | undefined;
  /**
   * An identity shared by events with the same name, full name and metadata args within one read (the
   * XSpace event metadata, or the JSON name): lets a visitor cache per-op work. Compare with `===`.
   */
  readonly key: unknown;
  /** The full name when it differs from `name` (XSpace metadata name, JSON `args.long_name`). */
  longName(): string | undefined;
  /** One argument (XStat, JSON `args` entry) as a string, or undefined when absent. */
  arg(key: string): string | undefined;
  /** One numeric argument as a number (cheaper than `arg`); undefined when absent or not a number. */
  argNumber(key: string): number | undefined;
  /** Every argument, copied into a fresh object. Slower than `arg`; for tests and small traces. */
  args(): Record<string, string>;
}

export interface TraceVisitor {
  /** Called once per lane before its first event; return false to skip the lane's events cheaply. */
  wantLane(lane: TraceLane): boolean;
  /** Called for each complete event of a wanted lane, in file order. */
  onEvent(lane: TraceLane, event: TraceEventView): void;
}

export type TraceFormat = 'chrome-json' | 'xplane';

export interface ReadStats {
  format: TraceFormat;
  /** The file read. */
  path: string;
  /** Bytes of trace data processed (uncompressed JSON text, or the .pb size). */
  bytes: number;
  /** Complete events seen, wanted or not. */
  events: number;
  /** Events handed to the visitor. */
  eventsDelivered: number;
  /** The origin of `startPs`, in ps, as a decimal string (usually "0"). */
  originPs: string;
  /** The JSON held exactly the profiler's event cap, so later events were probably dropped. */
  capped: boolean;
  /**
   * A lane was offered to the visitor before its device or thread name was known (names arrived later in
   * the file). Reading again gives every lane its final name on first sight.
   */
  lateNames: boolean;
  /** Problems that did not stop the read (one line each). */
  warnings: string[];
}

export interface ReadOptions {
  /** Stop delivering events and resolve early when aborted; the stats then cover the part read. */
  signal?: AbortSignal;
  /**
   * XSpace: a time origin shared by several files read as one trace (the hosts of one profile run):
   * the first file read sets it, the others use it, so their timelines line up.
   */
  origin?: { ns: bigint | undefined };
}

/** A trace file that can be read any number of times. */
export interface TraceSource {
  readonly path: string;
  readonly format: TraceFormat;
  /** Whether skipping a lane costs almost nothing (true for XSpace: lanes are length-delimited). */
  readonly cheapLaneSkip: boolean;
  /** Stream the whole file through `visitor`. Throws InputError naming the file on unreadable input. */
  read(visitor: TraceVisitor, opts?: ReadOptions): Promise<ReadStats>;
}

/** A plain, fully materialized event; for tests and small traces (see `collectEvents`). */
export interface NormalizedEvent {
  device: string;
  thread: string;
  name: string;
  longName?: string;
  category?: string;
  startPs: number;
  durPs: number;
  args: Record<string, string>;
}

const PLANE_KINDS: Record<string, DeviceKind> = {
  'device:TPU': 'tpu',
  'device:GPU': 'gpu',
  'device:CUSTOM': 'custom',
  host: 'host',
};

/**
 * Classify a device from its process/plane name and, for Kineto traces, its `process_labels`. xprof's
 * trace viewer (`trace_viewer@`) prefixes the host name (`tw003 /device:GPU:0`), so the device part may
 * follow a host name and a space.
 */
export function deviceKindOf(name: string, labels = ''): DeviceKind {
  const m = /(?:^|\s)\/(device:TPU|device:GPU|device:CUSTOM|host):/.exec(name);
  if (m !== null) return PLANE_KINDS[m[1]!]!;
  if (/^GPU \d+/.test(labels) || /^GPU \d+/.test(name)) return 'gpu';
  if (/^CPU\b/.test(labels)) return 'host';
  return 'unknown';
}

/** Read every event of a (small) source into plain objects, each lane's events sorted by start time. */
export async function collectEvents(
  source: TraceSource,
  filter: (lane: TraceLane) => boolean = () => true,
): Promise<{ events: NormalizedEvent[]; stats: ReadStats }> {
  const byLane = new Map<TraceLane, NormalizedEvent[]>();
  const stats = await source.read({
    wantLane: filter,
    onEvent(lane, ev) {
      let list = byLane.get(lane);
      if (list === undefined) {
        list = [];
        byLane.set(lane, list);
      }
      const longName = ev.longName();
      list.push({
        device: lane.device.name,
        thread: lane.name,
        name: ev.name,
        ...(longName === undefined ? {} : { longName }),
        ...(ev.category === undefined ? {} : { category: ev.category }),
        startPs: ev.startPs,
        durPs: ev.durPs,
        args: ev.args(),
      });
    },
  });
  const events: NormalizedEvent[] = [];
  for (const [lane, list] of byLane) {
    // Names of lanes offered early may have been completed later in the file.
    for (const e of list) {
      e.device = lane.device.name;
      e.thread = lane.name;
    }
    list.sort((a, b) => a.startPs - b.startPs || b.durPs - a.durPs);
    events.push(...list);
  }
  return { events, stats };
}
