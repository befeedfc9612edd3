/**
 * An independent XSpace decoder for cross-checking our wire walker: protobufjs with the message set of
 * tsl/profiler/protobuf/xplane.proto (package tensorflow.profiler), decoded whole.
 */
import { readFileSync } from 'node:fs';
import protobuf from 'protobufjs';

const XPLANE_PROTO = `
syntax = "proto3";
package tensorflow.profiler;
message XSpace { repeated XPlane planes = 1; repeated string errors = 2; repeated string warnings = 3; repeated string hostnames = 4; }
message XPlane { int64 id = 1; string name = 2; repeated XLine lines = 3; map<int64, XEventMetadata> event_metadata = 4; map<int64, XStatMetadata> stat_metadata = 5; repeated XStat stats = 6; }
message XLine { int64 id = 1; int64 display_id = 10; string name = 2; string display_name = 11; int64 timestamp_ns = 3; int64 duration_ps = 9; repeated XEvent events = 4; }
message XEvent { int64 metadata_id = 1; oneof data { int64 offset_ps = 2; int64 num_occurrences = 5; } int64 duration_ps = 3; repeated XStat stats = 4; }
message XStat { int64 metadata_id = 1; oneof value { double double_value = 2; uint64 uint64_value = 3; int64 int64_value = 4; string str_value = 5; bytes bytes_value = 6; uint64 ref_value = 7; } }
message XEventMetadata { int64 id = 1; string name = 2; string display_name = 4; bytes metadata = 3; repeated XStat stats = 5; repeated int64 child_id = 6; }
message XStatMetadata { int64 id = 1; string name = 2; string description = 3; }
`;

export interface RefEvent {
  plane: string;
  line: string;
  name: string;
  longName: string | undefined;
  startPs: number;
  durPs: number;
  args: Record<string, string>;
}

type Long = { toString(): string };
type Stat = {
  metadataId: Long;
  value?: string;
  doubleValue?: number;
  uint64Value?: Long;
  int64Value?: Long;
  strValue?: string;
  bytesValue?: Uint8Array;
  refValue?: Long;
};

/** Every timed event of every line, decoded by protobufjs, in file order. */
export function decodeWithProtobufjs(path: string): RefEvent[] {
  const root = protobuf.parse(XPLANE_PROTO, { keepCase: false }).root;
  const XSpace = root.lookupType('tensorflow.profiler.XSpace');
  const space = XSpace.toObject(XSpace.decode(readFileSync(path)), { longs: String, oneofs: true }) as {
    planes?: {
      name?: string;
      lines?: {
        name?: string;
        displayName?: string;
        timestampNs?: string;
        events?: {
          metadataId?: string;
          offsetPs?: string;
          numOccurrences?: string;
          durationPs?: string;
          stats?: Stat[];
        }[];
      }[];
      eventMetadata?: Record<string, { id?: string; name?: string; displayName?: string; stats?: Stat[] }>;
      statMetadata?: Record<string, { id?: string; name?: string }>;
    }[];
  };
  const out: RefEvent[] = [];
  for (const plane of space.planes ?? []) {
    // protobufjs keys int64 maps by a hash string; index by each value's own id instead.
    const statNames = new Map<string, string>();
    for (const m of Object.values(plane.statMetadata ?? {})) statNames.set(String(m.id ?? '0'), m.name ?? '');
    const metas = new Map<string, { name: string; displayName: string; stats: Stat[] }>();
    for (const m of Object.values(plane.eventMetadata ?? {})) {
      metas.set(String(m.id ?? '0'), {
        name: m.name ?? '',
        displayName: m.displayName ?? '',
        stats: m.stats ?? [],
      });
    }
    const statValue = (s: Stat): string | undefined => {
      switch (s.value) {
        case 'doubleValue':
          return String(s.doubleValue);
        case 'uint64Value':
          return String(s.uint64Value);
        case 'int64Value':
          return String(s.int64Value);
        case 'strValue':
          return s.strValue ?? '';
        case 'bytesValue':
          return `<${s.bytesValue?.length ?? 0} bytes>`;
        case 'refValue':
          return statNames.get(String(s.refValue)) ?? '';
        default:
          return undefined;
      }
    };
    for (const line of plane.lines ?? []) {
      const lineStartPs = Number(BigInt(line.timestampNs ?? '0') * 1000n);
      for (const ev of line.events ?? []) {
        if (ev.numOccurrences !== undefined && ev.offsetPs === undefined) continue;
        const meta = metas.get(String(ev.metadataId ?? '0')) ?? { name: '', displayName: '', stats: [] };
        const args: Record<string, string> = {};
        for (const s of [...meta.stats, ...(ev.stats ?? [])]) {
          const v = statValue(s);
          if (v !== undefined) args[statNames.get(String(s.metadataId)) ?? `stat ${s.metadataId}`] = v;
        }
        const longName = meta.displayName === '' ? undefined : meta.name;
        if (longName !== undefined) args.long_name = longName;
        const stepName = args.step_name;
        out.push({
          plane: plane.name ?? '',
          line: line.displayName || line.name || '',
          name: stepName ?? (meta.displayName || meta.name),
          longName,
          startPs: lineStartPs + Number(ev.offsetPs ?? '0'),
          durPs: Number(ev.durationPs ?? '0'),
          args,
        });
      }
    }
  }
  return out;
}
