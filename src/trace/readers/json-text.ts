/**
 * Low-level helpers for scanning JSON text held as UTF-8 bytes: string ends, value skipping, numbers.
 *
 * The scanner works on the file's bytes as they come out of gunzip, never decoding a chunk into a JS
 * string: JSON's structural characters are ASCII, and no byte of a multi-byte UTF-8 character is ASCII,
 * so they are found in the bytes directly. Nothing reads past the end of the bytes (`byteAt` gives -1
 * there): V8 compiles typed-array reads that never go out of bounds into its fastest code, and one that
 * does would throw away the optimized code of the whole scanner. A value cut by the end of a chunk raises
 * `NEED_MORE` so the caller can retry once more bytes have arrived. Syntax errors raise `JsonSyntaxError`
 * with the offset inside the bytes.
 */

/** Thrown when a value runs past the end of the text seen so far. */
export const NEED_MORE = Symbol('need more text');

export class JsonSyntaxError extends Error {
  override name = 'JsonSyntaxError';
  constructor(
    readonly at: number,
    problem: string,
  ) {
    super(problem);
  }
}

const QUOTE = 34;
const BACKSLASH = 92;
/** Strings up to this long are checked for their end and escapes byte by byte, beyond with `indexOf`. */
const SHORT_STRING = 48;

/** The byte at `p`, or -1 at or past the end. */
export function byteAt(buf: Buffer, p: number): number {
  return p < buf.length ? buf[p]! : -1;
}

/** Describe the character at `p` for an error message. */
export function charAt(buf: Buffer, p: number): string {
  if (p >= buf.length) return 'end of text';
  const b = buf[p]!;
  if (b >= 0x20 && b <= 0x7e) return `'${String.fromCharCode(b)}'`;
  const c = b < 0x80 ? b : buf.toString('utf8', p, Math.min(buf.length, p + 4)).charCodeAt(0);
  return `U+${c.toString(16).padStart(4, '0')}`;
}

/** Raise NEED_MORE when `p` is at or past the end (the value may continue), else a syntax error. */
export function fail(buf: Buffer, p: number, expected: string): never {
  if (p >= buf.length) throw NEED_MORE;
  throw new JsonSyntaxError(p, `expected ${expected}, found ${charAt(buf, p)}`);
}

/** Whether the bytes at `p` are `pattern` (ASCII). */
export function bytesAt(buf: Buffer, p: number, pattern: Uint8Array): boolean {
  const n = pattern.length;
  if (p + n > buf.length) return false;
  for (let k = 0; k < n; k++) if (buf[p + k] !== pattern[k]) return false;
  return true;
}

/** A DataView over a buffer's bytes, to read four of them with one load. */
export function viewOf(buf: Buffer): DataView {
  return new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
}

/**
 * A fixed ASCII sequence compared four bytes at a time: the tsl event layout is checked at every
 * event, and a word compare costs a quarter of the byte compares.
 */
export class Pattern {
  readonly bytes: Buffer;
  readonly length: number;
  /**
   * The pattern's bytes as little-endian 32-bit words at `offsets`: every fourth byte, and the last word
   * ending with the pattern (overlapping the one before), so no byte is compared alone.
   */
  private readonly words: Int32Array;
  private readonly offsets: Int32Array;

  /** `text` is ASCII; bytes are taken as they are. */
  constructor(text: string | Buffer) {
    this.bytes = typeof text === 'string' ? Buffer.from(text, 'latin1') : text;
    this.length = this.bytes.length;
    const n = this.length >= 4 ? (this.length + 3) >> 2 : 0;
    this.words = new Int32Array(n);
    this.offsets = new Int32Array(n);
    const view = viewOf(this.bytes);
    for (let k = 0; k < n; k++) {
      this.offsets[k] = Math.min(4 * k, this.length - 4);
      this.words[k] = view.getInt32(this.offsets[k]!, true);
    }
  }

  /** Whether `buf` (viewed by `view`) holds the pattern at `p`. */
  at(buf: Buffer, view: DataView, p: number): boolean {
    const n = this.length;
    if (p + n > buf.length) return false;
    if (n < 4) return bytesAt(buf, p, this.bytes);
    const words = this.words;
    const offsets = this.offsets;
    for (let w = 0; w < words.length; w++)
      if (view.getInt32(p + offsets[w]!, true) !== words[w]) return false;
    return true;
  }
}

/**
 * Finds string ends in one buffer. Short strings (names) are checked byte by byte; longer ones cost one
 * `indexOf` of the quote, with the next backslash cached so strings without escapes (nearly all) need
 * no second search.
 */
export class StringScanner {
  private buf: Buffer = Buffer.alloc(0);
  private nextBackslash = 0;
  /** The position the cached backslash search started from; the cache holds only for strings after it. */
  private searchedFrom = 0;
  /** Whether the last string found contained an escape sequence. */
  escaped = false;

  reset(buf: Buffer): void {
    this.buf = buf;
    this.nextBackslash = -2;
    this.searchedFrom = 0;
  }

  /** Index of the closing quote of the string whose body starts at `s` (just after the opening quote). */
  end(s: number): number {
    const buf = this.buf;
    const n = buf.length;
    const lim = Math.min(s + SHORT_STRING, n);
    let k = s;
    for (; k < lim; k++) {
      const c = buf[k]!;
      if (c === QUOTE) {
        this.escaped = false;
        return k;
      }
      if (c === BACKSLASH) return this.escapedEnd(k);
    }
    if (lim === n) throw NEED_MORE;
    const q = buf.indexOf(QUOTE, k);
    if (q < 0) throw NEED_MORE;
    let nb = this.nextBackslash;
    if ((nb !== -1 && nb < k) || k < this.searchedFrom) {
      nb = buf.indexOf(BACKSLASH, k);
      this.nextBackslash = nb;
      this.searchedFrom = k;
    }
    if (nb === -1 || nb > q) {
      this.escaped = false;
      return q;
    }
    return this.escapedEnd(nb);
  }

  /** The end of a string holding a backslash at `b`: skip quotes preceded by an odd number of backslashes. */
  private escapedEnd(b: number): number {
    const buf = this.buf;
    let q = buf.indexOf(QUOTE, b);
    if (q < 0) throw NEED_MORE;
    while (isEscaped(buf, q)) {
      q = buf.indexOf(QUOTE, q + 1);
      if (q < 0) throw NEED_MORE;
    }
    this.escaped = true;
    return q;
  }
}

/** Whether the character at `q` is preceded by an odd number of backslashes. */
function isEscaped(buf: Buffer, q: number): boolean {
  let n = 0;
  while (q - 1 - n >= 0 && buf[q - 1 - n] === BACKSLASH) n++;
  return (n & 1) === 1;
}

/** Skip whitespace; returns the index of the next non-space character (maybe buf.length). */
export function skipSpace(buf: Buffer, p: number): number {
  const n = buf.length;
  while (p < n) {
    const c = buf[p]!;
    if (c !== 32 && c !== 10 && c !== 13 && c !== 9) break;
    p++;
  }
  return p;
}

/** Skip one JSON value starting at `p` (no leading space); returns the index after it. */
export function skipValue(buf: Buffer, p: number, strings: StringScanner): number {
  const c = byteAt(buf, p);
  if (c === QUOTE) return strings.end(p + 1) + 1;
  if (c === 123 || c === 91) return skipContainer(buf, p, strings);
  return skipScalar(buf, p);
}

/** Skip a number or literal; it must be followed by a delimiter inside the text. */
export function skipScalar(buf: Buffer, p: number): number {
  const start = p;
  const len = buf.length;
  for (;;) {
    if (p >= len) throw NEED_MORE;
    const c = buf[p]!;
    // Digits, sign, dot, exponent and the letters of true/false/null.
    if ((c >= 48 && c <= 57) || c === 45 || c === 43 || c === 46 || (c >= 97 && c <= 122) || c === 69) p++;
    else break;
  }
  if (p === start) fail(buf, p, 'a JSON value');
  return p;
}

/** Skip an object or array starting at `p`; returns the index after its closing bracket. */
export function skipContainer(buf: Buffer, p: number, strings: StringScanner): number {
  let depth = 0;
  const len = buf.length;
  for (;;) {
    if (p >= len) throw NEED_MORE;
    const c = buf[p]!;
    if (c === QUOTE) p = strings.end(p + 1) + 1;
    else if (c === 123 || c === 91) {
      depth++;
      p++;
    } else if (c === 125 || c === 93) {
      depth--;
      p++;
      if (depth === 0) return p;
    } else p++;
  }
}

/** What a fraction of `k` digits is multiplied by to make millionths. */
const FRACTION_SCALE = [1e6, 1e5, 1e4, 1e3, 100, 10, 1];

/** End index of the last number parsed by `parseTimePs` / `parseInteger`. */
export let numberEnd = 0;

/**
 * Parse a JSON number of microseconds at `p` into integer picoseconds relative to `originUs`
 * (an integer). Digit-exact for plain decimals: `5439011.7444999995` becomes 5439011744500.
 */
export function parseTimePs(buf: Buffer, p: number, originUs: number): number {
  const start = p;
  const n = buf.length;
  let c = p < n ? buf[p]! : -1;
  let negative = false;
  if (c === 45) {
    negative = true;
    c = ++p < n ? buf[p]! : -1;
  }
  let int = 0;
  let digits = 0;
  while (c >= 48 && c <= 57) {
    int = int * 10 + (c - 48);
    digits++;
    c = ++p < n ? buf[p]! : -1;
  }
  let frac = 0;
  let fracDigits = 0;
  let roundUp = false;
  if (c === 46) {
    c = ++p < n ? buf[p]! : -1;
    // Six digits make the picoseconds and the seventh rounds them; profilers print up to 17, skipped.
    while (c >= 48 && c <= 57 && fracDigits < 6) {
      frac = frac * 10 + (c - 48);
      fracDigits++;
      c = ++p < n ? buf[p]! : -1;
    }
    if (c >= 48 && c <= 57) {
      roundUp = c >= 53;
      do c = ++p < n ? buf[p]! : -1;
      while (c >= 48 && c <= 57);
    }
  }
  if (c === 101 || c === 69 || digits === 0 || int > 9e15) {
    // Exponent or huge values: go through a double.
    const end = skipScalar(buf, start);
    numberEnd = end;
    const v = Number(buf.toString('latin1', start, end));
    if (Number.isNaN(v)) fail(buf, start, 'a number');
    return Math.round((v - originUs) * 1e6);
  }
  if (p >= n) throw NEED_MORE;
  numberEnd = p;
  frac *= FRACTION_SCALE[fracDigits]!;
  const ps = (int - (negative ? -originUs : originUs)) * 1e6 + frac + (roundUp ? 1 : 0);
  return negative ? -ps : ps;
}

/** The integer part of a JSON number at `p` (used for µs origins and integer ids). */
export function parseInteger(buf: Buffer, p: number): number {
  const n = buf.length;
  let c = p < n ? buf[p]! : -1;
  let negative = false;
  if (c === 45) {
    negative = true;
    c = ++p < n ? buf[p]! : -1;
  }
  let v = 0;
  while (c >= 48 && c <= 57) {
    v = v * 10 + (c - 48);
    c = ++p < n ? buf[p]! : -1;
  }
  numberEnd = p;
  return negative ? -v : v;
}
