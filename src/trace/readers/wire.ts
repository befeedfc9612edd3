/**
 * Protobuf wire-format reading over a file that may be far larger than memory.
 *
 * `FileWindow` keeps one bounded buffer over the file and refills it with positional reads; decoders
 * work on `(buf, index)` pairs inside it. Nothing here knows the XSpace schema (see xplane.ts).
 * Malformed input throws `WireError` with the absolute file offset; callers turn it into an InputError.
 */
import { closeSync, openSync, readSync } from 'node:fs';

export const WIRE_VARINT = 0;
export const WIRE_I64 = 1;
export const WIRE_LEN = 2;
export const WIRE_I32 = 5;

export class WireError extends Error {
  override name = 'WireError';
  constructor(
    readonly offset: number,
    readonly problem: string,
  ) {
    super(`${problem} at byte ${offset}`);
  }
}

/** Default window; a single field larger than this grows the window up to `MAX_WINDOW`. */
const WINDOW = 4 * 1024 * 1024;
/** No field we decode may be larger than this; bigger ones are skipped without reading them. */
export const MAX_WINDOW = 64 * 1024 * 1024;

/** A sliding read window over a file. `ensure` makes `[pos, pos+n)` addressable as `buf[pos - base]`. */
export class FileWindow {
  buf: Buffer;
  /** File offset of `buf[0]`. */
  base = 0;
  /** Number of valid bytes in `buf`. */
  filled = 0;
  /** Bytes read from disk so far (re-reads included). */
  bytesRead = 0;
  private readonly fd: number;

  constructor(
    readonly path: string,
    readonly size: number,
    window = WINDOW,
  ) {
    this.fd = openSync(path, 'r');
    this.buf = Buffer.allocUnsafe(Math.min(window, Math.max(size, 16)));
  }

  close(): void {
    closeSync(this.fd);
  }

  /** Make `[pos, pos + n)` readable; returns the buffer index of `pos`. Throws past the end of file. */
  ensure(pos: number, n: number): number {
    if (pos >= this.base && pos + n <= this.base + this.filled) return pos - this.base;
    if (pos + n > this.size)
      throw new WireError(pos, `truncated: needs ${n} bytes, file ends at ${this.size}`);
    if (n > this.buf.length) {
      if (n > MAX_WINDOW) throw new WireError(pos, `field of ${n} bytes is too large to decode`);
      this.buf = Buffer.allocUnsafe(Math.min(Math.max(n, this.buf.length * 2), MAX_WINDOW));
    }
    const want = Math.min(this.buf.length, this.size - pos);
    let got = 0;
    while (got < want) {
      const r = readSync(this.fd, this.buf, got, want - got, pos + got);
      if (r === 0) break;
      got += r;
    }
    this.bytesRead += got;
    this.base = pos;
    this.filled = got;
    if (got < n) throw new WireError(pos, 'file shrank while reading');
    return 0;
  }

  /** Make at least one byte at `pos` readable and as many following ones as the window holds. */
  ensureSome(pos: number, n: number): number {
    return this.ensure(pos, Math.min(n, this.size - pos));
  }
}

/** Position after the last decoded varint (module state avoids allocating a tuple per varint). */
export let wirePos = 0;

/** Decode an unsigned varint as a JS number (exact below 2^53; larger values lose low bits). */
export function readVarint(buf: Uint8Array, i: number, end: number): number {
  if (i < end) {
    const b = buf[i]!;
    if (b < 0x80) {
      wirePos = i + 1;
      return b;
    }
  }
  let result = 0;
  let mul = 1;
  const stop = Math.min(end, i + 10);
  for (let p = i; p < stop; p++) {
    const b = buf[p]!;
    result += (b & 0x7f) * mul;
    if (b < 0x80) {
      wirePos = p + 1;
      return result;
    }
    mul *= 128;
  }
  throw new WireError(i, 'invalid varint');
}

/** Decode a varint as an exact decimal string; `signed` reads it as a two's-complement int64. */
export function readVarint64String(buf: Uint8Array, i: number, end: number, signed: boolean): string {
  let lo = 0;
  let hi = 0;
  let p = i;
  for (let shift = 0; shift < 70; shift += 7) {
    if (p >= end) throw new WireError(i, 'invalid varint');
    const b = buf[p++]!;
    const bits = b & 0x7f;
    if (shift < 28) lo |= bits << shift;
    else if (shift === 28) {
      lo |= (bits & 0x0f) << 28;
      hi |= bits >> 4;
    } else hi |= bits << (shift - 32);
    if (b < 0x80) {
      wirePos = p;
      lo >>>= 0;
      hi >>>= 0;
      if (hi < 0x200000) return String(hi * 4294967296 + lo);
      const v = (BigInt(hi) << 32n) | BigInt(lo);
      return String(signed ? BigInt.asIntN(64, v) : v);
    }
  }
  throw new WireError(i, 'invalid varint');
}

/** Skip one field's value given its wire type; returns the index after it. */
export function skipField(buf: Uint8Array, i: number, end: number, wireType: number): number {
  switch (wireType) {
    case WIRE_VARINT:
      readVarint(buf, i, end);
      return wirePos;
    case WIRE_I64:
      if (i + 8 > end) throw new WireError(i, 'truncated fixed64');
      return i + 8;
    case WIRE_LEN: {
      const len = readVarint(buf, i, end);
      if (wirePos + len > end) throw new WireError(i, 'length-delimited field runs past its message');
      return wirePos + len;
    }
    case WIRE_I32:
      if (i + 4 > end) throw new WireError(i, 'truncated fixed32');
      return i + 4;
    default:
      throw new WireError(i, `invalid wire type ${wireType}`);
  }
}

const utf8 = new TextDecoder('utf-8');

/** Decode `[start, end)` as UTF-8. */
export function readString(buf: Uint8Array, start: number, end: number): string {
  if (end - start < 48) {
    // Short ASCII strings: a JS loop beats crossing into the decoder.
    let s = '';
    for (let p = start; p < end; p++) {
      const c = buf[p]!;
      if (c >= 0x80) return utf8.decode(buf.subarray(start, end));
      s += String.fromCharCode(c);
    }
    return s;
  }
  return utf8.decode(buf.subarray(start, end));
}

/** Read a little-endian IEEE double. */
export function readDouble(buf: Buffer, i: number): number {
  return buf.readDoubleLE(i);
}
