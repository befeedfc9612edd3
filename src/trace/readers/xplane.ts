/**
 * XSpace (`*.xplane.pb`) reader: a lazy walk over the protobuf wire format, never the whole file.
 *
 * Schema (tsl/profiler/protobuf/xplane.proto, package tensorflow.profiler):
 *   XSpace         { planes=1 XPlane*, errors=2, warnings=3, hostnames=4 }
 *   XPlane         { id=1, name=2, lines=3 XLine*, event_metadata=4 map<int64,XEventMetadata>,
 *                    stat_metadata=5 map<int64,XStatMetadata>, stats=6 XStat* }
 *   XLine          { id=1, display_id=10, name=2, display_name=11, timestamp_ns=3, duration_ps=9, events=4 XEvent* }
 *   XEvent         { metadata_id=1, offset_ps=2 | num_occurrences=5, duration_ps=3, stats=4 XStat* }
 *   XStat          { metadata_id=1, double=2 | uint64=3 | int64=4 | str=5 | bytes=6 | ref=7 | compressed_str=8 }
 *   XEventMetadata { id=1, name=2, display_name=4, metadata=3, stats=5 XStat*, child_id=6 }
 *   XStatMetadata  { id=1, name=2, description=3 }
 *
 * First pass over each plane records where its lines and event metadata are; stat metadata is decoded at
 * once (it is small). Event metadata is decoded only for planes with a wanted lane, skipping any field
 * larger than a few MB (e.g. the HLO protos on `/host:metadata`). Events are decoded one at a time into a
 * reused view; their stats are decoded only when asked for. int64 values stay exact (decimal strings).
 */
import { statSync } from 'node:fs';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { gunzipSync } from 'node:zlib';
import { InputError } from '../../util/index.js';
import {
  deviceKindOf,
  type ReadOptions,
  type ReadStats,
  type TraceDevice,
  type TraceEventView,
  type TraceLane,
  type TraceSource,
  type TraceVisitor,
} from './model.js';
import {
  FileWindow,
  MAX_WINDOW,
  readDouble,
  readString,
  readVarint,
  readVarint64String,
  skipField,
  WIRE_LEN,
  WIRE_VARINT,
  WireError,
  wirePos,
} from './wire.js';
import { checkXspace, type XspaceCheck } from './xspace-check.js';

/** Fields larger than this inside metadata are reported by size instead of decoded. */
const MAX_DECODED_FIELD = 8 * 1024 * 1024;
/** Yield to the event loop after this many bytes of events. */
const YIELD_EVERY_BYTES = 64 * 1024 * 1024;
/** Line timestamps below this (ns) are already relative to the profile start. */
const RELATIVE_TIME_LIMIT_NS = 1_000_000_000_000n;

interface EventMeta {
  name: string;
  displayName: string;
  statIds: number[];
  statValues: string[];
}

interface PlaneLayout {
  id: string;
  name: string;
  /** [start, end) byte ranges of XLine messages. */
  lines: number[];
  /** [start, end) byte ranges of event_metadata map entries. */
  eventMetaEntries: number[];
  statNames: Map<number, string>;
  statIdByName: Map<string, number>;
  stats: Record<string, string>;
}

interface LineHeader {
  id: string;
  displayId: string;
  name: string;
  displayName: string;
  timestampNs: bigint;
  events: number;
}

/** What one read learned about the file's layout, reused by the next read of the same file. */
interface LayoutCache {
  size: number;
  mtimeMs: number;
  planes: Map<number, { layout: PlaneLayout; headers: LineHeader[]; metas?: Map<number, EventMeta> }>;
  /** The full wire-format check, done once per file version. */
  check?: XspaceCheck;
}

/** A serialized HLO module from the profile's `/host:metadata` plane. */
export interface HloProtoBlob {
  /** The program's name as the profiler wrote it, e.g. `jit_dot(49)`. */
  name: string;
  /** The serialized `xla.HloProto`. */
  bytes: Buffer;
}

/** The metadata plane's stat holding each program's HLO (xprof: `kHloProto`). */
const HLO_PROTO_STAT = 'Hlo Proto';

export class XplaneSource implements TraceSource {
  readonly format = 'xplane' as const;
  readonly cheapLaneSkip = true;
  private cache: LayoutCache | undefined;

  constructor(readonly path: string) {}

  async read(visitor: TraceVisitor, opts: ReadOptions = {}): Promise<ReadStats> {
    return this.withReader(visitor, opts, (r) => r.run());
  }

  /**
   * The HLO modules the profile carries, by program id (decimal string), as the profiler stored them
   * (`/host:metadata`, stat "Hlo Proto"). `wanted` limits which are copied out; modules larger than the
   * read window are left out and named in `skipped`.
   */
  async hloProtos(
    wanted?: ReadonlySet<string>,
    opts: { reportMissing?: boolean } = {},
  ): Promise<{ modules: Map<string, HloProtoBlob>; skipped: string[]; missing: string[] }> {
    const visitor: TraceVisitor = { wantLane: () => false, onEvent: () => {} };
    const found = await this.withReader(visitor, {}, async (r) => r.hloProtos(wanted));
    // A host of a multi-host run need not hold the programs only other hosts ran (xplane-hosts.ts).
    if (found.missing.length > 0 && opts.reportMissing !== false) this.reportMissingHlo(found.missing);
    return found;
  }

  /**
   * Losses found after `read` returned (programs that ran but whose HLO is not in the file), one line
   * each, for the summary's warnings.
   */
  readonly laterWarnings: string[] = [];

  /** Programs ran whose HLO is absent: their ops lose FLOPs and bytes. Damage makes that a refusal. */
  private reportMissingHlo(missing: string[]): void {
    const ids = `${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ', …' : ''}`;
    const check = this.cache?.check;
    if (check !== undefined && check.unknownCount > 0) {
      throw new InputError(
        this.path,
        `the cost data (HLO) of ${missing.length} program(s) that ran (${ids}) is missing, and the file has ` +
          `fields hillclimb does not know where it may have been (${describeUnknown(check)}): the file looks damaged`,
        { hint: 'capture the profile again; if it came from a newer profiler, report this to hillclimb' },
      );
    }
    this.laterWarnings.push(
      `the file holds no HLO for ${missing.length} program(s) that ran (${ids}): their ops have no FLOPs or bytes`,
    );
  }

  private async withReader<T>(
    visitor: TraceVisitor,
    opts: ReadOptions,
    use: (r: XspaceReader) => Promise<T>,
  ): Promise<T> {
    let size: number;
    let mtimeMs: number;
    try {
      ({ size, mtimeMs } = statSync(this.path));
    } catch (err) {
      throw new InputError(this.path, 'cannot read the file', { cause: err });
    }
    if (size === 0) throw new InputError(this.path, 'the file is empty (no XSpace planes)');
    if (this.cache?.size !== size || this.cache.mtimeMs !== mtimeMs)
      this.cache = { size, mtimeMs, planes: new Map() };
    const win = new FileWindow(this.path, size);
    try {
      this.cache.check ??= checkXspace(win);
      return await use(new XspaceReader(win, visitor, opts, this.cache));
    } catch (err) {
      if (err instanceof WireError) {
        throw new InputError(this.path, `corrupt XSpace protobuf: ${err.message}`, {
          hint: 'the file is damaged or is not an .xplane.pb; capture the profile again',
          cause: err,
        });
      }
      throw err;
    } finally {
      win.close();
    }
  }
}

class XspaceReader {
  private readonly stats: ReadStats;
  private originNs: bigint | undefined;
  private deviceCount = 0;
  private laneCount = 0;

  constructor(
    private readonly win: FileWindow,
    private readonly visitor: TraceVisitor,
    private readonly opts: ReadOptions,
    private readonly cache: LayoutCache,
  ) {
    this.stats = {
      format: 'xplane',
      path: win.path,
      bytes: win.size,
      events: 0,
      eventsDelivered: 0,
      originPs: '0',
      capped: false,
      lateNames: false,
      warnings: [],
    };
  }

  async run(): Promise<ReadStats> {
    const planes = this.spaceLayout();
    if (planes.length === 0) throw new WireError(0, 'no XPlane found');
    for (const range of chunkPairs(planes)) {
      if (this.opts.signal?.aborted) break;
      let cached = this.cache.planes.get(range[0]);
      if (cached === undefined) {
        cached = { layout: this.planeLayout(range[0], range[1]), headers: [] };
        this.cache.planes.set(range[0], cached);
      }
      const layout = cached.layout;
      const device: TraceDevice = {
        index: this.deviceCount++,
        name: layout.name === '' ? `plane ${layout.id}` : layout.name,
        rawId: layout.id,
        kind: deviceKindOf(layout.name),
        stats: layout.stats,
      };
      let line = 0;
      for (const [start, end] of chunkPairs(layout.lines)) {
        let header = cached.headers[line];
        if (header === undefined) {
          header = this.lineHeader(start, end);
          cached.headers[line] = header;
        }
        line++;
        const lane: TraceLane = {
          index: this.laneCount++,
          device,
          name: header.displayName || header.name || `line ${header.id}`,
          rawId: header.displayId !== '0' ? header.displayId : header.id,
        };
        if (header.events === 0) continue;
        this.stats.events += header.events;
        if (!this.visitor.wantLane(lane)) continue;
        cached.metas ??= this.eventMetadata(layout);
        await this.lineEvents(start, end, lane, layout, cached.metas, header);
        if (this.opts.signal?.aborted) break;
      }
    }
    this.stats.originPs = String((this.originNs ?? 0n) * 1000n);
    const check = this.cache.check;
    if (check !== undefined && check.unknownCount > 0) {
      this.stats.warnings.push(
        `skipped fields hillclimb does not know (${describeUnknown(check)}): unless a newer profiler ` +
          'wrote them, the file is damaged and the planes, lines or events they held are missing here',
      );
    }
    return this.stats;
  }

  /** See XplaneSource.hloProtos. */
  async hloProtos(
    wanted: ReadonlySet<string> | undefined,
  ): Promise<{ modules: Map<string, HloProtoBlob>; skipped: string[]; missing: string[] }> {
    const modules = new Map<string, HloProtoBlob>();
    const skipped: string[] = [];
    const seen = new Set<string>();
    for (const [start, end] of chunkPairs(this.spaceLayout())) {
      let cached = this.cache.planes.get(start);
      if (cached === undefined) {
        cached = { layout: this.planeLayout(start, end), headers: [] };
        this.cache.planes.set(start, cached);
      }
      const layout = cached.layout;
      const statId = layout.statIdByName.get(HLO_PROTO_STAT);
      // Found by the stat, not the plane's name (`/host:metadata`), so a damaged name loses nothing.
      if (statId === undefined) continue;
      for (const [s, e] of chunkPairs(layout.eventMetaEntries)) {
        const found = this.hloProtoEntry(s, e, statId, layout.statIdByName.get('program_id'), wanted);
        if (found === undefined) continue;
        seen.add(found.id);
        if (found.bytes === undefined) skipped.push(`${found.name} (${found.size} bytes)`);
        else modules.set(found.id, { name: found.name, bytes: found.bytes });
      }
    }
    const missing = wanted === undefined ? [] : [...wanted].filter((id) => !seen.has(id));
    return { modules, skipped, missing };
  }

  /** One event metadata entry of the metadata plane: its id, name and HLO proto bytes (copied). */
  private hloProtoEntry(
    start: number,
    end: number,
    statId: number,
    programIdStat: number | undefined,
    wanted: ReadonlySet<string> | undefined,
  ): { id: string; name: string; size: number; bytes: Buffer | undefined } | undefined {
    const win = this.win;
    let id = '';
    let name = '';
    let programId: string | undefined;
    let blob: [number, number] | undefined;
    // map entry: key=1, value=2 XEventMetadata {id=1, name=2, stats=5 XStat {metadata_id=1, bytes=6}}
    const entry = this.fieldRanges(start, end);
    const value = entry.find((f) => f.field === 2 && f.len);
    if (value === undefined) return undefined;
    for (const f of this.fieldRanges(value.start, value.end)) {
      if (f.field === 1 && !f.len) id = f.varint;
      else if (f.field === 2 && f.len && f.end - f.start <= MAX_DECODED_FIELD) {
        const j = win.ensure(f.start, f.end - f.start);
        name = readString(win.buf, j, j + (f.end - f.start));
      } else if (f.field === 5 && f.len) {
        const stat = this.fieldRanges(f.start, f.end);
        const statOf = stat.find((x) => x.field === 1 && !x.len)?.varint;
        const bytes = stat.find((x) => x.field === 6 && x.len);
        if (Number(statOf) === statId && bytes !== undefined) blob = [bytes.start, bytes.end];
        // XLA:CPU profiles number their metadata entries apart from the programs and give the
        // program id as a stat (uint64, field 3).
        if (programIdStat !== undefined && Number(statOf) === programIdStat)
          programId = stat.find((x) => (x.field === 3 || x.field === 4) && !x.len)?.varint;
      }
    }
    if (id === '') id = entry.find((f) => f.field === 1 && !f.len)?.varint ?? '';
    id = programId ?? /\((\d+)\)$/.exec(name)?.[1] ?? id;
    if (blob === undefined || (wanted !== undefined && !wanted.has(id))) return undefined;
    const size = blob[1] - blob[0];
    if (size > MAX_WINDOW) return { id, name, size, bytes: undefined };
    const j = win.ensure(blob[0], size);
    return { id, name, size, bytes: Buffer.from(win.buf.subarray(j, j + size)) };
  }

  /** The fields of the message in [start, end) of the file: number, kind, and value or byte range. */
  private fieldRanges(
    start: number,
    end: number,
  ): { field: number; len: boolean; start: number; end: number; varint: string }[] {
    const win = this.win;
    const out: { field: number; len: boolean; start: number; end: number; varint: string }[] = [];
    let pos = start;
    while (pos < end) {
      let i = win.ensureSome(pos, Math.min(20, end - pos));
      const lim = Math.min(win.filled, end - win.base);
      const tag = readVarint(win.buf, i, lim);
      i = wirePos;
      const field = tag >>> 3;
      const wt = tag & 7;
      if (field === 0) throw new WireError(pos, 'invalid field number 0');
      if (wt === WIRE_LEN) {
        const len = readVarint(win.buf, i, lim);
        const fStart = win.base + wirePos;
        if (fStart + len > end) throw new WireError(pos, `field ${field} runs past its message`);
        out.push({ field, len: true, start: fStart, end: fStart + len, varint: '' });
        pos = fStart + len;
      } else if (wt === WIRE_VARINT) {
        const v = readVarint64String(win.buf, i, lim, true);
        out.push({ field, len: false, start: pos, end: pos, varint: v });
        pos = win.base + wirePos;
      } else pos = this.skipAt(pos, i, lim, wt, end);
    }
    return out;
  }

  /** Byte ranges of every XPlane; collects XSpace errors and warnings. */
  private spaceLayout(): number[] {
    const win = this.win;
    const planes: number[] = [];
    let pos = 0;
    while (pos < win.size) {
      let i = win.ensureSome(pos, 20);
      const end = win.filled;
      const tag = readVarint(win.buf, i, end);
      i = wirePos;
      const field = tag >>> 3;
      const wt = tag & 7;
      if (field === 0) throw new WireError(pos, 'invalid field number 0');
      if (wt === WIRE_LEN) {
        const len = readVarint(win.buf, i, end);
        const start = win.base + wirePos;
        if (start + len > win.size) throw new WireError(pos, `field ${field} runs past the end of the file`);
        if (field === 1) planes.push(start, start + len);
        else if (field === 2 || field === 3) {
          const j = win.ensure(start, Math.min(len, MAX_MESSAGE_BYTES));
          const text = printableMessage(win.buf.subarray(j, j + Math.min(len, MAX_MESSAGE_BYTES)), len);
          this.stats.warnings.push(`XSpace ${field === 2 ? 'error' : 'warning'}: ${text}`);
        }
        pos = start + len;
      } else {
        const j = skipField(win.buf, i, end, wt);
        pos = win.base + j;
      }
    }
    return planes;
  }

  private planeLayout(start: number, end: number): PlaneLayout {
    const win = this.win;
    const layout: PlaneLayout = {
      id: '0',
      name: '',
      lines: [],
      eventMetaEntries: [],
      statNames: new Map(),
      statIdByName: new Map(),
      stats: {},
    };
    const statRanges: number[] = [];
    let pos = start;
    while (pos < end) {
      let i = win.ensureSome(pos, Math.min(20, end - pos));
      const lim = Math.min(win.filled, end - win.base);
      const tag = readVarint(win.buf, i, lim);
      i = wirePos;
      const field = tag >>> 3;
      const wt = tag & 7;
      if (field === 0) throw new WireError(pos, 'invalid field number 0 in XPlane');
      if (field === 1 && wt === WIRE_VARINT) {
        layout.id = readVarint64String(win.buf, i, lim, true);
        pos = win.base + wirePos;
        continue;
      }
      if (wt !== WIRE_LEN) {
        pos = win.base + skipField(win.buf, i, lim, wt);
        continue;
      }
      const len = readVarint(win.buf, i, lim);
      const fStart = win.base + wirePos;
      const fEnd = fStart + len;
      if (fEnd > end) throw new WireError(pos, `XPlane field ${field} runs past its plane`);
      if (field === 2) {
        const j = win.ensure(fStart, len);
        layout.name = readString(win.buf, j, j + len);
      } else if (field === 3) layout.lines.push(fStart, fEnd);
      else if (field === 4) layout.eventMetaEntries.push(fStart, fEnd);
      else if (field === 5) this.statMetadataEntry(fStart, fEnd, layout);
      else if (field === 6) statRanges.push(fStart, fEnd);
      pos = fEnd;
    }
    for (const [s, e] of chunkPairs(statRanges)) {
      const stat = this.decodeStat(s, e, layout);
      if (stat !== undefined) layout.stats[layout.statNames.get(stat[0]) ?? `stat ${stat[0]}`] = stat[1];
    }
    return layout;
  }

  /** map<int64, XStatMetadata> entry: key=1, value=2 {id=1, name=2, description=3}. */
  private statMetadataEntry(start: number, end: number, layout: PlaneLayout): void {
    if (end - start > MAX_DECODED_FIELD) return;
    const win = this.win;
    const base = win.ensure(start, end - start);
    const buf = win.buf;
    const stop = base + (end - start);
    let key = 0;
    let id = 0;
    let name = '';
    walk(buf, base, stop, (field, wt, i) => {
      if (field === 1 && wt === WIRE_VARINT) key = readVarint(buf, i, stop);
      else if (field === 2 && wt === WIRE_LEN) {
        const len = readVarint(buf, i, stop);
        const vs = wirePos;
        walk(buf, vs, vs + len, (f2, w2, j) => {
          if (f2 === 1 && w2 === WIRE_VARINT) id = readVarint(buf, j, vs + len);
          else if (f2 === 2 && w2 === WIRE_LEN) {
            const l2 = readVarint(buf, j, vs + len);
            name = readString(buf, wirePos, wirePos + l2);
          }
        });
      }
    });
    const statId = id || key;
    layout.statNames.set(statId, name);
    if (!layout.statIdByName.has(name)) layout.statIdByName.set(name, statId);
  }

  /** Decode one XStat in [start, end) of the file to [metadata id, value as string]. */
  private decodeStat(start: number, end: number, layout: PlaneLayout): [number, string] | undefined {
    const len = end - start;
    if (len > MAX_DECODED_FIELD) return undefined;
    const i = this.win.ensure(start, len);
    return decodeStatAt(this.win.buf, i, i + len, layout);
  }

  /** Decode every event metadata entry of a plane (on first wanted lane). */
  private eventMetadata(layout: PlaneLayout): Map<number, EventMeta> {
    const metas = new Map<number, EventMeta>();
    const win = this.win;
    for (const [start, end] of chunkPairs(layout.eventMetaEntries)) {
      // map entry: key=1 (int64), value=2 XEventMetadata.
      let key = 0;
      let meta: EventMeta | undefined;
      let pos = start;
      while (pos < end) {
        let i = win.ensureSome(pos, Math.min(20, end - pos));
        const lim = Math.min(win.filled, end - win.base);
        const tag = readVarint(win.buf, i, lim);
        i = wirePos;
        const field = tag >>> 3;
        const wt = tag & 7;
        if (field === 1 && wt === WIRE_VARINT) {
          key = readVarint(win.buf, i, lim);
          pos = win.base + wirePos;
        } else if (field === 2 && wt === WIRE_LEN) {
          const len = readVarint(win.buf, i, lim);
          const vStart = win.base + wirePos;
          meta = this.decodeEventMeta(vStart, vStart + len, layout, (id) => {
            if (key === 0) key = id;
          });
          pos = vStart + len;
        } else {
          pos = this.skipAt(pos, i, lim, wt, end);
        }
      }
      if (meta !== undefined) metas.set(key, meta);
    }
    return metas;
  }

  private decodeEventMeta(
    start: number,
    end: number,
    layout: PlaneLayout,
    onId: (id: number) => void,
  ): EventMeta {
    const win = this.win;
    const meta: EventMeta = { name: '', displayName: '', statIds: [], statValues: [] };
    let pos = start;
    while (pos < end) {
      let i = win.ensureSome(pos, Math.min(20, end - pos));
      const lim = Math.min(win.filled, end - win.base);
      const tag = readVarint(win.buf, i, lim);
      i = wirePos;
      const field = tag >>> 3;
      const wt = tag & 7;
      if (field === 1 && wt === WIRE_VARINT) {
        onId(readVarint(win.buf, i, lim));
        pos = win.base + wirePos;
        continue;
      }
      if (wt !== WIRE_LEN) {
        pos = this.skipAt(pos, i, lim, wt, end);
        continue;
      }
      const len = readVarint(win.buf, i, lim);
      const fStart = win.base + wirePos;
      if (fStart + len > end) throw new WireError(pos, 'XEventMetadata field runs past its message');
      if (len <= MAX_DECODED_FIELD && (field === 2 || field === 4)) {
        const j = win.ensure(fStart, len);
        const s = readString(win.buf, j, j + len);
        if (field === 2) meta.name = s;
        else meta.displayName = s;
      } else if (field === 5) {
        const stat =
          len <= MAX_DECODED_FIELD
            ? this.decodeStat(fStart, fStart + len, layout)
            : statIdOnly(win, fStart, len);
        if (stat !== undefined) {
          meta.statIds.push(stat[0]);
          meta.statValues.push(stat[1]);
        }
      }
      pos = fStart + len;
    }
    return meta;
  }

  /** Skip a non-LEN field found at `pos` (tag already read, value at buffer index `i`). */
  private skipAt(pos: number, i: number, lim: number, wt: number, end: number): number {
    const next = this.win.base + skipField(this.win.buf, i, lim, wt);
    if (next > end) throw new WireError(pos, 'field runs past its message');
    return next;
  }

  /** Read an XLine's fields other than its events; counts the events. */
  private lineHeader(start: number, end: number): LineHeader {
    const win = this.win;
    const h: LineHeader = { id: '0', displayId: '0', name: '', displayName: '', timestampNs: 0n, events: 0 };
    let pos = start;
    while (pos < end) {
      // Events (field 4) are most of a line: jump over them without leaving this loop.
      let buf = win.buf;
      let base = win.base;
      let k = pos - base;
      let stop = Math.min(win.filled, end - base);
      if (k < 0 || k + 11 > stop) {
        k = win.ensureSome(pos, Math.min(win.buf.length, end - pos));
        buf = win.buf;
        base = win.base;
        stop = Math.min(win.filled, end - base);
      }
      let events = 0;
      while (k + 11 <= stop && buf[k] === 0x22) {
        let len = buf[k + 1]!;
        let j = k + 2;
        if (len >= 0x80) {
          len = readVarint(buf, k + 1, stop);
          j = wirePos;
        }
        events++;
        k = j + len;
      }
      h.events += events;
      pos = base + k;
      if (pos > end) throw new WireError(pos, 'XEvent runs past its line');
      if (pos === end) break;
      if (events > 0) continue;
      let i = win.ensureSome(pos, Math.min(20, end - pos));
      const lim = Math.min(win.filled, end - win.base);
      const tag = readVarint(win.buf, i, lim);
      i = wirePos;
      const field = tag >>> 3;
      const wt = tag & 7;
      if (field === 0) throw new WireError(pos, 'invalid field number 0 in XLine');
      if (wt === WIRE_VARINT) {
        if (field === 1) h.id = readVarint64String(win.buf, i, lim, true);
        else if (field === 10) h.displayId = readVarint64String(win.buf, i, lim, true);
        else if (field === 3) h.timestampNs = BigInt(readVarint64String(win.buf, i, lim, true));
        else readVarint(win.buf, i, lim);
        pos = win.base + wirePos;
        continue;
      }
      if (wt !== WIRE_LEN) {
        pos = this.skipAt(pos, i, lim, wt, end);
        continue;
      }
      const len = readVarint(win.buf, i, lim);
      const fStart = win.base + wirePos;
      if (fStart + len > end) throw new WireError(pos, `XLine field ${field} runs past its line`);
      if (field === 4) h.events++;
      else if ((field === 2 || field === 11) && len <= MAX_DECODED_FIELD) {
        const j = win.ensure(fStart, len);
        const s = readString(win.buf, j, j + len);
        if (field === 2) h.name = s;
        else h.displayName = s;
      }
      pos = fStart + len;
    }
    return h;
  }

  private async lineEvents(
    start: number,
    end: number,
    lane: TraceLane,
    layout: PlaneLayout,
    metas: Map<number, EventMeta>,
    header: LineHeader,
  ): Promise<void> {
    if (this.originNs === undefined) {
      const shared = this.opts.origin;
      this.originNs = shared?.ns ?? (header.timestampNs < RELATIVE_TIME_LIMIT_NS ? 0n : header.timestampNs);
      if (shared !== undefined) shared.ns = this.originNs;
    }
    const lineStartPs = Number(header.timestampNs - this.originNs) * 1000;
    const view = new XplaneEventView(layout, lineStartPs, denseMetas(metas));
    let pos = start;
    while (pos < end) {
      pos = this.eventsUntil(pos, end, Math.min(end, pos + YIELD_EVERY_BYTES), lane, view);
      if (pos < end) {
        await yieldToLoop();
        if (this.opts.signal?.aborted) return;
      }
    }
  }

  /** Decode the line's events in [pos, stop) (whole events; may run past `stop` to finish one). */
  private eventsUntil(
    pos: number,
    end: number,
    stop: number,
    lane: TraceLane,
    view: XplaneEventView,
  ): number {
    const win = this.win;
    const visitor = this.visitor;
    let buf = win.buf;
    let base = win.base;
    let lim = 0; // buffer index limit for this line
    let i = 0;
    let delivered = 0;
    const refill = (need: number): void => {
      i = win.ensure(pos, Math.min(Math.max(need, Math.min(buf.length, end - pos)), end - pos));
      buf = win.buf;
      base = win.base;
      lim = Math.min(win.filled, end - base);
    };
    refill(Math.min(20, end - pos));
    while (pos < stop) {
      if (i + 20 > lim && base + lim < end) refill(Math.min(20, end - pos));
      let tag = buf[i]!;
      if (tag === 0x22 && i + 1 < lim) {
        // An event (field 4, LEN) with a short length prefix: the hot path.
        let len = buf[i + 1]!;
        let j = i + 2;
        if (len >= 0x80) {
          len = readVarint(buf, i + 1, lim);
          j = wirePos;
        }
        if (j + len > lim) {
          if (pos + (j - i) + len > end) throw new WireError(pos, 'XEvent runs past its line');
          refill(j - i + len);
          continue;
        }
        if (view.decode(buf, j, j + len)) {
          visitor.onEvent(lane, view);
          delivered++;
        }
        i = j + len;
        pos = base + i;
        continue;
      }
      // Any other field of the line: skip it.
      tag = readVarint(buf, i, lim);
      const wt = tag & 7;
      const next = base + skipField(buf, wirePos, Math.max(lim, 0), wt);
      if (next > end) throw new WireError(pos, 'XLine field runs past its line');
      pos = next;
      i = pos - base;
      if (i >= lim && pos < end) refill(Math.min(20, end - pos));
    }
    this.stats.eventsDelivered += delivered;
    return pos;
  }
}

/** Event metadata by id as an array when ids are small (the norm), for a cheaper lookup per event. */
function denseMetas(metas: Map<number, EventMeta>): (id: number) => EventMeta {
  let max = 0;
  for (const id of metas.keys()) max = Math.max(max, id);
  if (max < 4 * 1024 * 1024) {
    const arr: EventMeta[] = new Array<EventMeta>(max + 1).fill(EMPTY_META);
    for (const [id, m] of metas) if (id >= 0) arr[id] = m;
    return (id) => (id <= max ? arr[id]! : EMPTY_META);
  }
  return (id) => metas.get(id) ?? EMPTY_META;
}

const EMPTY_META: EventMeta = { name: '', displayName: '', statIds: [], statValues: [] };

/** The reused view over one XEvent in the read window. */
class XplaneEventView implements TraceEventView {
  meta: EventMeta = EMPTY_META;
  metadataId = 0;
  /** Start and duration; a typed array so updating them per event allocates nothing. */
  private readonly times = new Float64Array(2);
  readonly category = undefined;
  private buf: Buffer = Buffer.alloc(0);
  private statCount = 0;
  private readonly statIds: number[] = [];
  private readonly statStarts: number[] = [];
  private readonly statEnds: number[] = [];
  private readonly stepNameId: number | undefined;

  constructor(
    private readonly layout: PlaneLayout,
    private readonly lineStartPs: number,
    private readonly metaOf: (id: number) => EventMeta,
  ) {
    this.stepNameId = layout.statIdByName.get('step_name');
  }

  /** Decode the event in buf[i, end); false for aggregated events (num_occurrences, no timestamp). */
  decode(buf: Buffer, i: number, end: number): boolean {
    this.buf = buf;
    let metadataId = 0;
    let offset = 0;
    let dur = 0;
    let timed = true;
    let n = 0;
    while (i < end) {
      const tag = buf[i++]!;
      if (tag === 0x08 || tag === 0x10 || tag === 0x18) {
        // metadata_id, offset_ps, duration_ps: varints, decoded inline.
        let b = buf[i++]!;
        let v = b & 0x7f;
        let mul = 128;
        while (b >= 0x80) {
          if (i >= end) throw new WireError(i, 'invalid varint');
          b = buf[i++]!;
          v += (b & 0x7f) * mul;
          mul *= 128;
        }
        if (tag === 0x08) metadataId = v;
        else if (tag === 0x10) offset = v;
        else dur = v;
      } else if (tag === 0x22) {
        // stats
        let len = buf[i]!;
        if (len < 0x80) i++;
        else {
          len = readVarint(buf, i, end);
          i = wirePos;
        }
        const e = i + len;
        if (e > end) throw new WireError(i, 'XStat runs past its event');
        // The stat's metadata id is normally its first field.
        this.statIds[n] = buf[i] === 0x08 && buf[i + 1]! < 0x80 ? buf[i + 1]! : statIdIn(buf, i, e);
        this.statStarts[n] = i;
        this.statEnds[n] = e;
        n++;
        i = e;
      } else if (tag === 0x28) {
        // num_occurrences: an aggregated event without a timestamp
        readVarint(buf, i, end);
        i = wirePos;
        timed = false;
      } else {
        const t = tag < 0x80 ? tag : readVarint(buf, i - 1, end);
        if (tag >= 0x80) i = wirePos;
        i = skipField(buf, i, end, t & 7);
      }
    }
    this.statCount = n;
    this.metadataId = metadataId;
    this.meta = this.metaOf(metadataId);
    this.times[0] = this.lineStartPs + offset;
    this.times[1] = dur;
    return timed;
  }

  get startPs(): number {
    return this.times[0]!;
  }

  get durPs(): number {
    return this.times[1]!;
  }

  get name(): string {
    if (this.stepNameId !== undefined && this.statCount > 0) {
      const step = this.stat(this.stepNameId);
      if (step !== undefined) return step;
    }
    return this.meta.displayName || this.meta.name;
  }

  get key(): unknown {
    return this.stepNameId === undefined ? this.meta : this.name;
  }

  longName(): string | undefined {
    return this.meta.displayName === '' ? undefined : this.meta.name;
  }

  arg(key: string): string | undefined {
    if (key === 'long_name') return this.longName();
    const id = this.layout.statIdByName.get(key);
    return id === undefined ? undefined : this.stat(id);
  }

  argNumber(key: string): number | undefined {
    const id = this.layout.statIdByName.get(key);
    if (id === undefined) return undefined;
    // Per-event integer stats (device_offset_ps, device_duration_ps): decode the varint directly.
    for (let k = this.statCount - 1; k >= 0; k--) {
      if (this.statIds[k] !== id) continue;
      const buf = this.buf;
      const s = this.statStarts[k]!;
      const e = this.statEnds[k]!;
      const valueTag = buf[s] === 0x08 && buf[s + 1]! < 0x80 ? buf[s + 2] : undefined;
      if (valueTag === 0x18 || valueTag === 0x20) {
        const v = readVarint(buf, s + 3, e);
        if (v < 2 ** 53) return v;
      }
      break;
    }
    const v = this.stat(id);
    if (v === undefined || v.trim() === '') return undefined;
    const n = Number(v);
    return Number.isFinite(n) ? n : undefined;
  }

  private stat(id: number): string | undefined {
    for (let k = this.statCount - 1; k >= 0; k--) {
      if (this.statIds[k] === id) {
        const v = decodeStatAt(this.buf, this.statStarts[k]!, this.statEnds[k]!, this.layout);
        if (v !== undefined) return v[1];
      }
    }
    const meta = this.meta;
    for (let k = meta.statIds.length - 1; k >= 0; k--) if (meta.statIds[k] === id) return meta.statValues[k];
    return undefined;
  }

  args(): Record<string, string> {
    const out: Record<string, string> = {};
    const names = this.layout.statNames;
    const meta = this.meta;
    for (let k = 0; k < meta.statIds.length; k++) {
      out[names.get(meta.statIds[k]!) ?? `stat ${meta.statIds[k]}`] = meta.statValues[k]!;
    }
    for (let k = 0; k < this.statCount; k++) {
      const v = decodeStatAt(this.buf, this.statStarts[k]!, this.statEnds[k]!, this.layout);
      if (v !== undefined) out[names.get(v[0]) ?? `stat ${v[0]}`] = v[1];
    }
    const longName = this.longName();
    if (longName !== undefined) out.long_name = longName;
    return out;
  }
}

/** Decode an XStat in buf[i, end) to [metadata id, value as string]; undefined when it has no value. */
function decodeStatAt(
  buf: Buffer,
  i: number,
  end: number,
  layout: PlaneLayout,
): [number, string] | undefined {
  let id = 0;
  let value: string | undefined;
  while (i < end) {
    const tag = readVarint(buf, i, end);
    i = wirePos;
    switch (tag) {
      case 0x08:
        id = readVarint(buf, i, end);
        i = wirePos;
        break;
      case 0x11: // double
        if (i + 8 > end) throw new WireError(i, 'truncated double');
        value = String(readDouble(buf, i));
        i += 8;
        break;
      case 0x18: // uint64
        value = readVarint64String(buf, i, end, false);
        i = wirePos;
        break;
      case 0x20: // int64
        value = readVarint64String(buf, i, end, true);
        i = wirePos;
        break;
      case 0x2a: // str
      case 0x32: // bytes
      case 0x42: {
        // compressed_str (gzip)
        const len = readVarint(buf, i, end);
        const s = wirePos;
        if (s + len > end) throw new WireError(s, 'XStat value runs past its stat');
        if (tag === 0x2a) value = readString(buf, s, s + len);
        else if (tag === 0x32) value = `<${len} bytes>`;
        else value = gunzipString(buf.subarray(s, s + len));
        i = s + len;
        break;
      }
      case 0x38: {
        // ref: the value is the name of another stat metadata
        const ref = readVarint(buf, i, end);
        i = wirePos;
        value = layout.statNames.get(ref) ?? '';
        break;
      }
      default:
        i = skipField(buf, i, end, tag & 7);
    }
  }
  return value === undefined ? undefined : [id, value];
}

function gunzipString(bytes: Uint8Array): string {
  try {
    return gunzipSync(bytes).toString('utf8');
  } catch {
    return `<${bytes.length} compressed bytes>`;
  }
}

/** The metadata id of an XStat whose id is not its first field. */
function statIdIn(buf: Uint8Array, i: number, end: number): number {
  while (i < end) {
    const tag = readVarint(buf, i, end);
    i = wirePos;
    if (tag === 0x08) return readVarint(buf, i, end);
    i = skipField(buf, i, end, tag & 7);
  }
  return 0;
}

/** The id of a stat too large to decode; its value is reported by size. */
function statIdOnly(win: FileWindow, start: number, len: number): [number, string] | undefined {
  const i = win.ensureSome(start, Math.min(16, len));
  return win.buf[i] === 0x08 ? [readVarint(win.buf, i + 1, i + 16), `<${len} bytes>`] : undefined;
}

/** Call `fn(field, wireType, valueIndex)` for each field of the message in buf[i, end). */
function walk(
  buf: Uint8Array,
  i: number,
  end: number,
  fn: (field: number, wt: number, at: number) => void,
): void {
  while (i < end) {
    const tag = readVarint(buf, i, end);
    const at = wirePos;
    const wt = tag & 7;
    if (tag >>> 3 === 0) throw new WireError(i, 'invalid field number 0');
    fn(tag >>> 3, wt, at);
    i = skipField(buf, at, end, wt);
  }
}

/** Bytes of an XSpace error or warning read for the message; longer ones are cut. */
const MAX_MESSAGE_BYTES = 400;

/**
 * An XSpace error or warning as one readable line. Profilers sometimes store binary status payloads
 * there; those are reported by size instead of printed, and control characters never reach a terminal.
 */
export function printableMessage(bytes: Uint8Array, fullLength: number): string {
  const text = new TextDecoder('utf-8').decode(bytes);
  const unprintable = (c: number) => c === 0xfffd || c < 0x20 || c === 0x7f;
  let odd = 0;
  let line = '';
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    if (unprintable(c)) {
      if (c !== 0x09 && c !== 0x0a && c !== 0x0d) odd++;
      line += ' ';
    } else line += ch;
  }
  if (text.length > 0 && odd / text.length > 0.1) return `<${fullLength} bytes of binary data>`;
  line = line.replace(/ {2,}/g, ' ').trim();
  return fullLength > bytes.length ? `${line}… (${fullLength} bytes)` : line;
}

/** The first unknown fields, e.g. `field 5 in XSpace, 134636 bytes at byte 0`. */
function describeUnknown(check: XspaceCheck): string {
  const shown = check.unknownFields
    .slice(0, 2)
    .map((u) => `field ${u.field} in ${u.within}, ${u.bytes} bytes at byte ${u.offset}`);
  const more = check.unknownCount - shown.length;
  return `${shown.join('; ')}${more > 0 ? `; ${more} more` : ''}`;
}

function* chunkPairs(flat: number[]): Generator<[number, number]> {
  for (let k = 0; k + 1 < flat.length; k += 2) yield [flat[k]!, flat[k + 1]!];
}
