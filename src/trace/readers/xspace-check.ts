/**
 * A full wire-format check of an XSpace, run once per file before the lazy reader trusts it.
 *
 * The reader (xplane.ts) skips what it does not need, so on its own it would read past damage that
 * xprof refuses: xprof parses the whole file with C++ protobuf (proto3), which rejects a malformed
 * varint, a length running past its message, a truncated file, field number 0, wire types 3, 4, 6
 * and 7, and invalid UTF-8 in a string field. This walk refuses the same, plus a known field with
 * the wrong wire type (xprof would quietly drop it), and throws `WireError` naming the field path
 * and the byte. Unknown fields are valid protobuf (a newer profiler may write them): they are
 * returned so the reader can say what was skipped.
 */
import { isUtf8 } from 'node:buffer';
import { type FileWindow, MAX_WINDOW, WIRE_I64, WIRE_LEN, WIRE_VARINT, WireError } from './wire.js';

/** What a known field holds. */
type FieldKind = 'int' | 'ints' | 'double' | 'string' | 'bytes' | MessageSchema;

interface Field {
  /** e.g. `XPlane.lines`, for error paths. */
  label: string;
  kind: FieldKind;
  /** Bit per wire type the field may have (a repeated int64 may be packed or not). */
  wireMask: number;
}

interface MessageSchema {
  name: string;
  /** Indexed by field number. */
  fields: (Field | undefined)[];
}

function schema(name: string, fields: Record<number, [string, FieldKind]>): MessageSchema {
  // Packed (not holey) so the lookup per field stays fast.
  const size = Math.max(...Object.keys(fields).map(Number)) + 1;
  const out = Array.from({ length: size }, (): Field | undefined => undefined);
  for (const [n, [field, kind]] of Object.entries(fields))
    out[Number(n)] = { label: `${name}.${field}`, kind, wireMask: wireMaskOf(kind) };
  return { name, fields: out };
}

function wireMaskOf(kind: FieldKind): number {
  if (kind === 'int') return 1 << WIRE_VARINT;
  if (kind === 'ints') return (1 << WIRE_VARINT) | (1 << WIRE_LEN);
  if (kind === 'double') return 1 << WIRE_I64;
  return 1 << WIRE_LEN;
}

// tsl/profiler/protobuf/xplane.proto; `ints` is a repeated int64 (packed or not).
const X_STAT = schema('XStat', {
  1: ['metadata_id', 'int'],
  2: ['double_value', 'double'],
  3: ['uint64_value', 'int'],
  4: ['int64_value', 'int'],
  5: ['str_value', 'string'],
  6: ['bytes_value', 'bytes'],
  7: ['ref_value', 'int'],
  8: ['compressed_str_value', 'bytes'],
});
const X_EVENT = schema('XEvent', {
  1: ['metadata_id', 'int'],
  2: ['offset_ps', 'int'],
  3: ['duration_ps', 'int'],
  4: ['stats', X_STAT],
  5: ['num_occurrences', 'int'],
});
const X_LINE = schema('XLine', {
  1: ['id', 'int'],
  2: ['name', 'string'],
  3: ['timestamp_ns', 'int'],
  4: ['events', X_EVENT],
  9: ['duration_ps', 'int'],
  10: ['display_id', 'int'],
  11: ['display_name', 'string'],
});
const X_EVENT_METADATA = schema('XEventMetadata', {
  1: ['id', 'int'],
  2: ['name', 'string'],
  3: ['metadata', 'bytes'],
  4: ['display_name', 'string'],
  5: ['stats', X_STAT],
  6: ['child_id', 'ints'],
});
const X_STAT_METADATA = schema('XStatMetadata', {
  1: ['id', 'int'],
  2: ['name', 'string'],
  3: ['description', 'string'],
});
const X_PLANE = schema('XPlane', {
  1: ['id', 'int'],
  2: ['name', 'string'],
  3: ['lines', X_LINE],
  4: [
    'event_metadata',
    schema('event_metadata entry', { 1: ['key', 'int'], 2: ['value', X_EVENT_METADATA] }),
  ],
  5: ['stat_metadata', schema('stat_metadata entry', { 1: ['key', 'int'], 2: ['value', X_STAT_METADATA] })],
  6: ['stats', X_STAT],
});
export const X_SPACE = schema('XSpace', {
  1: ['planes', X_PLANE],
  2: ['errors', 'string'],
  3: ['warnings', 'string'],
  4: ['hostnames', 'string'],
});

/** A field the schema does not know, skipped whole. */
export interface UnknownField {
  /** Where it sits, e.g. `XSpace` or `XSpace.planes.XPlane`. */
  within: string;
  field: number;
  /** File offset of its tag. */
  offset: number;
  /** Bytes of its value. */
  bytes: number;
}

export interface XspaceCheck {
  /** The first unknown fields found. */
  unknownFields: UnknownField[];
  /** How many there are in all. */
  unknownCount: number;
}

/** Messages up to this size are checked from one buffer; larger ones field by field through the window. */
const IN_BUFFER_LIMIT = 1024 * 1024;
/** Unknown fields kept for the report; the rest are only counted. */
const MAX_UNKNOWN_KEPT = 20;

const WIRE_NAMES = ['varint', 'fixed64', 'length-delimited', 'group start', 'group end', 'fixed32', '6', '7'];

/** Check the whole file as an XSpace; throws WireError at the first violation. */
export function checkXspace(win: FileWindow): XspaceCheck {
  const walker = new Walker(win);
  walker.message(X_SPACE, 0, win.size);
  return { unknownFields: walker.unknown, unknownCount: walker.unknownCount };
}

class Walker {
  readonly unknown: UnknownField[] = [];
  unknownCount = 0;
  /** Set by `varint`: the buffer index after the varint just read. */
  private next = 0;
  /** The fields leading to the message being checked, for error paths (labels are constants). */
  private readonly path: string[] = [];

  constructor(private readonly win: FileWindow) {}

  /** Check the message of type `s` at file range [start, end). */
  message(s: MessageSchema, start: number, end: number): void {
    const win = this.win;
    if (end - start <= IN_BUFFER_LIMIT) {
      const i = win.ensure(start, end - start);
      this.inBuffer(win.buf, win.base, i, i + (end - start), s);
      return;
    }
    // A large message (the XSpace, a big plane or line): one field at a time through the window.
    let pos = start;
    while (pos < end) {
      const i = win.ensureSome(pos, Math.min(20, end - pos));
      const buf = win.buf;
      const base = win.base;
      const lim = Math.min(win.filled, end - base);
      const tag = this.tag(buf, base, i, lim, s);
      const wt = tag & 7;
      const known = s.fields[tag >>> 3];
      this.checkWireType(known, wt, pos);
      if (wt !== WIRE_LEN) {
        const after = base + this.scalar(buf, base, this.next, lim, wt, pos, s);
        if (known === undefined) this.noteUnknown(s, tag >>> 3, pos, after - pos);
        pos = after;
        continue;
      }
      const len = this.length(buf, base, this.next, lim, end, pos, s);
      const vStart = base + this.next;
      if (known === undefined) this.noteUnknown(s, tag >>> 3, pos, len);
      else this.lenValue(known, vStart, vStart + len);
      pos = vStart + len;
    }
  }

  /** A known length-delimited value at file range [start, end). */
  private lenValue(known: Field, start: number, end: number): void {
    const kind = known.kind;
    if (typeof kind === 'object') {
      this.path.push(known.label);
      this.message(kind, start, end);
      this.path.pop();
    } else if (kind === 'string') this.bigString(start, end, known);
    else if (kind === 'ints') {
      const n = end - start;
      if (n > MAX_WINDOW) throw this.fail(start, `a packed field of ${n} bytes is too large`, known.label);
      const i = this.win.ensure(start, n);
      this.packed(this.win.buf, this.win.base, i, i + n, known);
    }
  }

  /** Check the message of type `s` at buf[i, end); `base` is the file offset of buf[0]. The hot path. */
  private inBuffer(buf: Buffer, base: number, i: number, end: number, s: MessageSchema): void {
    const fields = s.fields;
    while (i < end) {
      const tagAt = i;
      let tag = buf[i]!;
      if (tag < 0x80 && tag >= 8 && (0b100111 >> (tag & 7)) & 1) i++;
      else {
        tag = this.tag(buf, base, i, end, s);
        i = this.next;
      }
      const wt = tag & 7;
      const field = tag >>> 3;
      const known = field < fields.length ? fields[field] : undefined;
      if (known !== undefined && ((known.wireMask >> wt) & 1) === 0)
        this.checkWireType(known, wt, base + tagAt);
      if (wt !== WIRE_LEN) {
        const valueAt = i;
        if (wt === WIRE_VARINT) {
          const stop = Math.min(end, i + 10);
          while (i < stop && buf[i]! >= 0x80) i++;
          if (i === stop) this.scalar(buf, base, valueAt, end, wt, base + tagAt, s); // throws
          i++;
        } else i = this.scalar(buf, base, i, end, wt, base + tagAt, s);
        if (known === undefined) this.noteUnknown(s, field, base + tagAt, i - valueAt);
        continue;
      }
      let len = buf[i]!;
      if (len < 0x80 && i < end) i++;
      else {
        len = this.length(buf, base, i, end, base + end, base + tagAt, s);
        i = this.next;
      }
      const vStart = i;
      i += len;
      if (i > end) this.pastEnd(base + tagAt, len, i - end, base + end, s);
      if (known === undefined) {
        this.noteUnknown(s, field, base + tagAt, len);
        continue;
      }
      const kind = known.kind;
      if (typeof kind === 'object') {
        this.path.push(known.label);
        this.inBuffer(buf, base, vStart, i, kind);
        this.path.pop();
      } else if (kind === 'string') {
        for (let p = vStart; p < i; p++) {
          if (buf[p]! >= 0x80) {
            // Proto3 strings must be UTF-8: xprof's parser refuses the file otherwise.
            if (!isUtf8(buf.subarray(vStart, i)))
              throw this.fail(base + vStart, `the string of ${len} bytes is not valid UTF-8`, known.label);
            break;
          }
        }
      } else if (kind === 'ints') this.packed(buf, base, vStart, i, known);
    }
  }

  /** Read a tag at buf[i]; refuses field 0 and the wire types XSpace never has. Sets `next`. */
  private tag(buf: Buffer, base: number, i: number, end: number, s: MessageSchema): number {
    const tag = this.varint(buf, base, i, end, 5, s.name);
    const field = Math.floor(tag / 8);
    const wt = tag & 7;
    if (tag > 0xffffffff) throw this.fail(base + i, 'a field tag does not fit in 32 bits', s.name);
    if (field === 0) throw this.fail(base + i, 'field number 0', s.name);
    if (wt === 3 || wt === 4)
      throw this.fail(
        base + i,
        `field ${field} has the ${WIRE_NAMES[wt]} wire type (no XSpace field is a group)`,
        s.name,
      );
    if (wt > 5) throw this.fail(base + i, `field ${field} has invalid wire type ${wt}`, s.name);
    return tag;
  }

  private checkWireType(known: Field | undefined, wt: number, at: number): void {
    if (known === undefined || ((known.wireMask >> wt) & 1) === 1) return;
    const expected = WIRE_NAMES[Math.log2(known.wireMask & -known.wireMask)];
    const where = [...this.path, known.label].join(' > ');
    throw new WireError(at, `${where} has the ${WIRE_NAMES[wt]} wire type, expected ${expected}`);
  }

  /** Skip a varint, fixed64 or fixed32 value at buf[i]; returns the index after it. */
  private scalar(
    buf: Buffer,
    base: number,
    i: number,
    end: number,
    wt: number,
    tagAt: number,
    s: MessageSchema,
  ): number {
    if (wt === WIRE_VARINT) {
      this.varint(buf, base, i, end, 10, s.name);
      return this.next;
    }
    const after = i + (wt === WIRE_I64 ? 8 : 4);
    if (after > end) throw this.fail(tagAt, `a ${WIRE_NAMES[wt]} value runs past its message`, s.name);
    return after;
  }

  /** Read a length prefix at buf[i] and check the value ends by the file offset `limit`. Sets `next`. */
  private length(
    buf: Buffer,
    base: number,
    i: number,
    end: number,
    limit: number,
    tagAt: number,
    s: MessageSchema,
  ): number {
    const len = this.varint(buf, base, i, end, 5, s.name);
    if (len > 0x7fffffff) throw this.fail(tagAt, `length ${len} is out of range`, s.name);
    const over = base + this.next + len - limit;
    if (over > 0) this.pastEnd(tagAt, len, over, limit, s);
    return len;
  }

  private pastEnd(tagAt: number, len: number, over: number, limit: number, s: MessageSchema): never {
    const parent = limit === this.win.size ? 'the file (truncated?)' : 'its message';
    throw this.fail(tagAt, `a field of ${len} bytes runs ${over} bytes past the end of ${parent}`, s.name);
  }

  /** Decode a varint of at most `maxBytes` bytes at buf[i, end); sets `next`. */
  private varint(buf: Buffer, base: number, i: number, end: number, maxBytes: number, where: string): number {
    let result = 0;
    let mul = 1;
    const stop = Math.min(end, i + maxBytes);
    for (let p = i; p < stop; p++) {
      const b = buf[p]!;
      result += (b & 0x7f) * mul;
      if (b < 0x80) {
        this.next = p + 1;
        return result;
      }
      mul *= 128;
    }
    const why = stop - i < maxBytes ? 'runs past the end of its message' : `is longer than ${maxBytes} bytes`;
    throw this.fail(base + i, `a varint ${why}`, where);
  }

  /** A packed repeated varint field at buf[i, end). */
  private packed(buf: Buffer, base: number, i: number, end: number, known: Field): void {
    while (i < end) {
      this.varint(buf, base, i, end, 10, known.label);
      i = this.next;
    }
  }

  /** A string larger than the in-buffer limit, validated in pieces (split characters carry over). */
  private bigString(start: number, end: number, known: Field): void {
    const decoder = new TextDecoder('utf-8', { fatal: true });
    for (let pos = start; pos < end; ) {
      const n = Math.min(IN_BUFFER_LIMIT, end - pos);
      const i = this.win.ensure(pos, n);
      try {
        decoder.decode(this.win.buf.subarray(i, i + n), { stream: pos + n < end });
      } catch {
        throw this.fail(start, `the string of ${end - start} bytes is not valid UTF-8`, known.label);
      }
      pos += n;
    }
  }

  private noteUnknown(s: MessageSchema, field: number, offset: number, bytes: number): void {
    this.unknownCount++;
    const within = [...this.path, s.name].join(' > ');
    if (this.unknown.length < MAX_UNKNOWN_KEPT) this.unknown.push({ within, field, offset, bytes });
  }

  /** The error for a problem at file offset `at`, named by the path of fields leading to it. */
  private fail(at: number, problem: string, where: string): WireError {
    return new WireError(at, `${[...this.path, where].join(' > ')}: ${problem}`);
  }
}
