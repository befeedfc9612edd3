/**
 * The XSpaces of every host of one profile run (`plugins/profile/<run>/<host>.xplane.pb`, one file per
 * host of a multi-host job) read as one trace. Hosts are kept apart like devices: each host's planes
 * become devices named after the host (`worker-1 /device:TPU:0`, `worker-1 /host:CPU`, as xprof's
 * trace viewer names them), and every host shares the first host's time origin, so steps line up.
 */
import { basename } from 'node:path';
import type { ReadOptions, ReadStats, TraceDevice, TraceLane, TraceSource, TraceVisitor } from './model.js';
import { type HloProtoBlob, XplaneSource } from './xplane.js';

export class XplaneHostsSource implements TraceSource {
  readonly format = 'xplane' as const;
  readonly cheapLaneSkip = true;
  private readonly hosts: { name: string; source: XplaneSource }[];

  /** `path` is the run directory; `files` its `.xplane.pb` files, one per host. */
  constructor(
    readonly path: string,
    files: readonly string[],
  ) {
    this.hosts = files.map((f) => ({ name: hostName(f), source: new XplaneSource(f) }));
  }

  /** The host names, in reading order. */
  hostNames(): string[] {
    return this.hosts.map((h) => h.name);
  }

  async read(visitor: TraceVisitor, opts: ReadOptions = {}): Promise<ReadStats> {
    const origin = opts.origin ?? { ns: undefined };
    const total: ReadStats = {
      format: 'xplane',
      path: this.path,
      bytes: 0,
      events: 0,
      eventsDelivered: 0,
      originPs: '0',
      capped: false,
      lateNames: false,
      warnings: [],
    };
    // Device and lane indices are dense per file: each host's are moved past the previous hosts'.
    let deviceBase = 0;
    let laneBase = 0;
    for (const host of this.hosts) {
      if (opts.signal?.aborted) break;
      const lanes = new Map<TraceLane, TraceLane>();
      const devices = new Map<TraceDevice, TraceDevice>();
      let devicesSeen = 0;
      let lanesSeen = 0;
      const hostDevice = (d: TraceDevice): TraceDevice => {
        let out = devices.get(d);
        if (out === undefined) {
          out = {
            ...d,
            index: deviceBase + d.index,
            name: `${host.name} ${d.name}`,
            rawId: `${host.name}:${d.rawId}`,
          };
          devices.set(d, out);
          devicesSeen = Math.max(devicesSeen, d.index + 1);
        }
        return out;
      };
      const stats = await host.source.read(
        {
          wantLane(lane) {
            const out: TraceLane = { ...lane, index: laneBase + lane.index, device: hostDevice(lane.device) };
            lanes.set(lane, out);
            lanesSeen = Math.max(lanesSeen, lane.index + 1);
            return visitor.wantLane(out);
          },
          onEvent(lane, ev) {
            visitor.onEvent(lanes.get(lane)!, ev);
          },
        },
        { ...opts, origin },
      );
      deviceBase += devicesSeen;
      laneBase += lanesSeen;
      total.bytes += stats.bytes;
      total.events += stats.events;
      total.eventsDelivered += stats.eventsDelivered;
      total.capped ||= stats.capped;
      total.lateNames ||= stats.lateNames;
      total.warnings.push(...stats.warnings.map((w) => `${host.name}: ${w}`));
    }
    total.originPs = String((origin.ns ?? 0n) * 1000n);
    return total;
  }

  /** Every host's HLO modules by program id (hosts of one job run the same programs: the first wins). */
  async hloProtos(
    wanted?: ReadonlySet<string>,
  ): Promise<{ modules: Map<string, HloProtoBlob>; skipped: string[]; missing: string[] }> {
    const modules = new Map<string, HloProtoBlob>();
    const skipped: string[] = [];
    for (const host of this.hosts) {
      const rest = wanted === undefined ? undefined : new Set([...wanted].filter((id) => !modules.has(id)));
      if (rest !== undefined && rest.size === 0) break;
      const found = await host.source.hloProtos(rest, { reportMissing: false });
      for (const [id, blob] of found.modules) if (!modules.has(id)) modules.set(id, blob);
      skipped.push(...found.skipped);
    }
    const missing = wanted === undefined ? [] : [...wanted].filter((id) => !modules.has(id));
    if (missing.length > 0) {
      this.missingWarnings.push(
        `no host's file holds the HLO of ${missing.length} program(s) that ran (${missing.slice(0, 3).join(', ')}): their ops have no FLOPs or bytes`,
      );
    }
    return { modules, skipped, missing };
  }

  private readonly missingWarnings: string[] = [];

  /** What the readers found missing after their reads. */
  get laterWarnings(): string[] {
    return [
      ...this.missingWarnings,
      ...this.hosts.flatMap((h) => h.source.laterWarnings.map((w) => `${h.name}: ${w}`)),
    ];
  }
}

/** The host a profiler file belongs to: its name up to the first dot (`worker-1.xplane.pb`). */
function hostName(file: string): string {
  const name = basename(file);
  return name.slice(0, name.indexOf('.') > 0 ? name.indexOf('.') : name.length);
}
