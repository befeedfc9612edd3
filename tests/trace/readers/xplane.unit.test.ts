// Hand-encoded XSpaces exercise what the real fixtures may not: every XStat value kind, fields in
// non-canonical order, aggregated events, epoch timestamps, and stats on the event overriding metadata.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { collectEvents } from '../../../src/trace/readers/model.js';
import { readVarint, readVarint64String } from '../../../src/trace/readers/wire.js';
import { printableMessage, XplaneSource } from '../../../src/trace/readers/xplane.js';
import { tempDir } from '../../helpers/paths.js';

/** Protobuf encoding helpers: fields as byte arrays. */
function varint(v: bigint | number): number[] {
  let x = BigInt.asUintN(64, BigInt(v));
  const out: number[] = [];
  while (x >= 0x80n) {
    out.push(Number(x & 0x7fn) | 0x80);
    x >>= 7n;
  }
  out.push(Number(x));
  return out;
}
const tag = (field: number, wt: number): number[] => varint(field * 8 + wt);
const int = (field: number, v: bigint | number): number[] => [...tag(field, 0), ...varint(v)];
const bytes = (field: number, b: number[] | Buffer): number[] => [
  ...tag(field, 2),
  ...varint(b.length),
  ...b,
];
const str = (field: number, s: string): number[] => bytes(field, Buffer.from(s, 'utf8'));
const msg = (field: number, ...parts: number[][]): number[] => bytes(field, parts.flat());
function double(field: number, v: number): number[] {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(v);
  return [...tag(field, 1), ...b];
}

// XStat: metadata_id=1, double=2, uint64=3, int64=4, str=5, bytes=6, ref=7, compressed=8.
const stat = (id: number, value: number[]): number[] => [...int(1, id), ...value];

function space(): Buffer {
  const statMeta = (id: number, name: string) => msg(5, int(1, id), msg(2, int(1, id), str(2, name)));
  const eventMeta = (id: number, name: string, displayName: string, ...stats: number[][]) =>
    msg(
      4,
      int(1, id),
      msg(
        2,
        int(1, id),
        str(2, name),
        ...(displayName ? [str(4, displayName)] : []),
        ...stats.map((s) => msg(5, s)),
      ),
    );
  const plane = [
    // Lines first, name and metadata after: field order is not guaranteed.
    msg(
      3,
      int(1, 7),
      str(2, 'XLA Ops'),
      int(3, 1_700_000_000_000_000_000n), // epoch ns: times become relative to this line's start
      msg(4, int(1, 1), int(2, 5000), int(3, 2500), msg(4, stat(3, int(4, -42)))),
      msg(4, int(1, 1), int(5, 9), int(3, 100)), // aggregated (num_occurrences): not a timed event
      msg(4, int(1, 2), int(2, 9000), int(3, 1000), msg(4, stat(6, str(5, 'step 3')))),
      int(10, 77), // display_id after the events
      str(11, 'XLA Ops (display)'),
    ),
    str(2, '/device:TPU:0'),
    int(1, 2),
    statMeta(1, 'hlo_category'),
    statMeta(2, 'program_id'),
    statMeta(3, 'offset'),
    statMeta(4, 'ratio'),
    statMeta(5, 'blob'),
    statMeta(6, 'step_name'),
    statMeta(7, 'kind'),
    statMeta(8, 'custom-call'),
    statMeta(9, 'note'),
    eventMeta(
      1,
      '%custom-call.3 = f32[8] custom-call(), custom_call_target="tpu_custom_call"',
      'custom-call.3',
      stat(1, int(7, 8)), // ref: the name of stat metadata 8
      stat(2, int(3, 18446744073709551615n)),
      stat(3, int(4, 1)), // overridden by the event's own stat
      stat(4, double(2, 0.25)),
      stat(5, bytes(6, [1, 2, 3])),
      stat(9, bytes(8, [...gzipSync('compressed note')])),
    ),
    eventMeta(2, 'marker', ''),
    msg(6, stat(7, str(5, 'TPU v6 Lite'))), // plane stat
  ];
  return Buffer.from([...msg(1, ...plane), ...msg(1, int(1, 9), str(2, 'Task Environment'))]);
}

describe('XSpace wire decoding', () => {
  it('decodes varints exactly, including 64-bit and negative values', () => {
    expect(readVarint(Uint8Array.from(varint(300)), 0, 2)).toBe(300);
    expect(readVarint64String(Uint8Array.from(varint(18446744073709551615n)), 0, 10, false)).toBe(
      '18446744073709551615',
    );
    expect(readVarint64String(Uint8Array.from(varint(-42)), 0, 10, true)).toBe('-42');
    expect(readVarint64String(Uint8Array.from(varint(12190760917235803885n)), 0, 10, false)).toBe(
      '12190760917235803885',
    );
    expect(() => readVarint(Uint8Array.from([0x80, 0x80]), 0, 2)).toThrow(/invalid varint/);
  });

  it('reads every stat kind, late line fields, and skips aggregated events', async () => {
    const t = tempDir();
    try {
      const path = join(t.dir, 'handmade.xplane.pb');
      writeFileSync(path, space());
      const { events, stats } = await collectEvents(new XplaneSource(path));
      expect(stats.originPs).toBe('1700000000000000000000');
      expect(stats.events).toBe(3); // the aggregated event is counted, not delivered
      expect(events).toHaveLength(2);
      const [op, marker] = events;
      expect(op).toMatchObject({
        device: '/device:TPU:0',
        thread: 'XLA Ops (display)',
        name: 'custom-call.3',
        longName: '%custom-call.3 = f32[8] custom-call(), custom_call_target="tpu_custom_call"',
        startPs: 5000,
        durPs: 2500,
      });
      expect(op!.args).toEqual({
        hlo_category: 'custom-call',
        program_id: '18446744073709551615',
        offset: '-42',
        ratio: '0.25',
        blob: '<3 bytes>',
        note: 'compressed note',
        long_name: '%custom-call.3 = f32[8] custom-call(), custom_call_target="tpu_custom_call"',
      });
      // A step_name stat replaces the event name.
      expect(marker).toMatchObject({ name: 'step 3', startPs: 9000, durPs: 1000 });
      expect(marker!.longName).toBeUndefined();
    } finally {
      t.cleanup();
    }
  });

  it('reports the lane display id and plane stats on the device', async () => {
    const t = tempDir();
    try {
      const path = join(t.dir, 'handmade.xplane.pb');
      writeFileSync(path, space());
      const lanes: { device: string; rawId: string; stats: Record<string, string>; kind: string }[] = [];
      await new XplaneSource(path).read({
        wantLane(lane) {
          lanes.push({
            device: lane.device.name,
            rawId: lane.rawId,
            stats: { ...lane.device.stats },
            kind: lane.device.kind,
          });
          return false;
        },
        onEvent() {},
      });
      expect(lanes).toEqual([
        { device: '/device:TPU:0', rawId: '77', stats: { kind: 'TPU v6 Lite' }, kind: 'tpu' },
      ]);
    } finally {
      t.cleanup();
    }
  });
});

describe('XSpace errors and warnings', () => {
  it('are printed as one readable line; binary payloads by size', () => {
    const text = (s: string) => new TextEncoder().encode(s);
    expect(printableMessage(text('profiler buffer full\n'), 21)).toBe('profiler buffer full');
    expect(printableMessage(text('lost 12 events\u0000 on line\u001b 3 of 4'), 31)).toBe(
      'lost 12 events on line 3 of 4',
    );
    const binary = Uint8Array.from([0x08, 0x96, 0x01, 0x12, 0x00, 0xff, 0xfe, 0x80, 0x01, 0x02]);
    expect(printableMessage(binary, 10)).toBe('<10 bytes of binary data>');
    expect(printableMessage(text('x'.repeat(400)), 5000)).toBe(`${'x'.repeat(400)}… (5000 bytes)`);
  });
});
