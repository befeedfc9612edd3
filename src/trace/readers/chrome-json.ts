/**
 * Chrome trace JSON reader (`*.trace.json.gz`, `perfetto_trace.json.gz`, `.json`, bare-array form),
 * streamed from disk and gzip with bounded memory.
 *
 * The gunzipped bytes are scanned in place, never decoded into one JS string per chunk: string bodies and
 * tsl's `args` objects are jumped with `indexOf` (native), numbers are parsed digit by digit into integer
 * picoseconds, and event fields are recorded as offsets. Nothing is materialized until the visitor asks
 * (`name`, `arg(key)`): then only those bytes are decoded, and repeated ASCII strings (op names, arg
 * values) are found by a hash of their bytes in an intern table, so a name seen before costs no
 * allocation. The `args` of events on lanes the visitor declined are skipped without being decoded.
 *
 * Tolerated: `{}` elements and other events without `ph`, string or numeric `pid`/`tid`, any key order and
 * spacing, metadata (`ph:"M"`) events anywhere (lanes seen before their names are reported through
 * `ReadStats.lateNames`), a missing `]` at the end of the bare-array form. Only complete (`X`) events are
 * delivered; other phases are counted and reported in one warning.
 */

import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { InputError } from '../../util/index.js';
import { inflatedChunks } from './inflate.js';
import {
  byteAt,
  bytesAt,
  charAt,
  fail,
  JsonSyntaxError,
  NEED_MORE,
  numberEnd,
  Pattern,
  parseInteger,
  parseTimePs,
  StringScanner,
  skipScalar,
  skipSpace,
  skipValue,
  viewOf,
} from './json-text.js';
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

/** `trace.json.gz` written by tsl holds at most this many events (`TraceContainer::CapEvents`). */
export const TSL_EVENT_CAP = 5_000_000;
/** Read size for the file and the gunzip output. */
const CHUNK_BYTES = 1024 * 1024;
/**
 * The element a chunk boundary cut is finished in a text of the carried bytes and this much of the next
 * chunk (events are far shorter), so the chunk itself is never copied into a joined buffer.
 */
const BOUNDARY_BYTES = 4 * 1024;
/** A `ts` (µs) at or above this is an epoch time; times are then taken relative to the first event. */
const EPOCH_US_THRESHOLD = 1e9;
/** Interned strings kept per read; beyond this, strings are decoded afresh each time. */
const INTERN_LIMIT = 200_000;
/** Strings longer than this (in bytes) are not interned by their bytes. */
const INTERN_MAX_BYTES = 1024;
/** The most bytes of interned strings kept for comparisons (see ByteInterner). */
const ARENA_LIMIT = 32 * 1024 * 1024;

export interface ChromeJsonOptions {
  /** Event count that marks a capped tsl trace. Default `TSL_EVENT_CAP`; tests lower it. */
  eventCap?: number;
}

interface ScanOptions extends ChromeJsonOptions, ReadOptions {
  /** Names from an earlier read of the same file. */
  knownNames?: NameTable;
  /** Filled with the names this read found. */
  collectNames?: NameTable;
}

/** Process and thread names found by a read, so a later read knows every lane's name on first sight. */
export interface NameTable {
  processes: Map<number | string, { name: string | undefined; labels: string }>;
  threads: Map<string, string>;
}

export class ChromeJsonSource implements TraceSource {
  readonly format = 'chrome-json' as const;
  readonly cheapLaneSkip = false;
  private names: NameTable | undefined;

  constructor(
    readonly path: string,
    private readonly options: ChromeJsonOptions = {},
  ) {}

  async read(visitor: TraceVisitor, opts: ReadOptions = {}): Promise<ReadStats> {
    const gz = await startsWithGzipMagic(this.path);
    const chunks = inflatedChunks(this.path, gz, CHUNK_BYTES);
    if (chunks !== undefined) return this.scan(chunks, visitor, opts);
    // A Node whose zlib lacks what the synchronous drive needs: gunzip as a stream.
    const file = createReadStream(this.path, { highWaterMark: CHUNK_BYTES });
    const stream: Readable = file.pipe(createGunzip({ chunkSize: CHUNK_BYTES }));
    file.on('error', (err) => stream.destroy(err));
    try {
      return await this.scan(stream, visitor, opts);
    } finally {
      file.destroy();
      stream.destroy();
    }
  }

  private async scan(
    input: AsyncIterable<Buffer>,
    visitor: TraceVisitor,
    opts: ReadOptions,
  ): Promise<ReadStats> {
    const names = this.names;
    const collected: NameTable = { processes: new Map(), threads: new Map() };
    const stats = await scanChromeJson(input, this.path, visitor, {
      ...this.options,
      ...opts,
      ...(names === undefined ? {} : { knownNames: names }),
      collectNames: collected,
    });
    this.names = collected;
    return stats;
  }
}

async function startsWithGzipMagic(path: string): Promise<boolean> {
  let fh: Awaited<ReturnType<typeof open>> | undefined;
  try {
    fh = await open(path, 'r');
    const head = Buffer.alloc(2);
    const { bytesRead } = await fh.read(head, 0, 2, 0);
    return bytesRead === 2 && head[0] === 0x1f && head[1] === 0x8b;
  } catch (err) {
    throw new InputError(path, 'cannot read the file', { cause: err });
  } finally {
    await fh?.close();
  }
}

/**
 * Scan a Chrome trace from a stream of (already decompressed) bytes. `path` names the input in errors.
 * Exposed for tests that feed generated text without writing it to disk.
 */
export async function scanChromeJson(
  input: AsyncIterable<Buffer | string>,
  path: string,
  visitor: TraceVisitor,
  opts: ScanOptions = {},
): Promise<ReadStats> {
  const scanner = new ChromeJsonScanner(path, visitor, opts.eventCap ?? TSL_EVENT_CAP, opts.knownNames);
  try {
    for await (const chunk of input) {
      if (opts.signal?.aborted) break;
      scanner.feed(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
    }
    scanner.feedEnd();
  } catch (err) {
    throw toInputError(path, err, scanner);
  }
  const stats = scanner.finish(opts.signal?.aborted === true);
  if (opts.collectNames !== undefined) scanner.exportNames(opts.collectNames);
  return stats;
}

function toInputError(path: string, err: unknown, scanner: ChromeJsonScanner): unknown {
  if (err instanceof InputError) return err;
  if (err instanceof JsonSyntaxError) {
    return new InputError(path, `invalid JSON near byte ${scanner.offsetOf(err.at)}: ${err.message}`, {
      hint: 'the trace file is damaged; capture the profile again',
      cause: err,
    });
  }
  const code = (err as { code?: string }).code;
  if (code === 'Z_BUF_ERROR' || code === 'Z_DATA_ERROR' || code === 'ERR_ZLIB_INITIALIZATION_FAILED') {
    const truncated = /unexpected end/i.test((err as Error).message);
    return new InputError(
      path,
      truncated
        ? 'truncated gzip stream (unexpected end of file)'
        : `corrupt gzip data (${(err as Error).message})`,
      { hint: 'the file was cut short or damaged while copying; fetch or capture it again', cause: err },
    );
  }
  if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') {
    return new InputError(path, `cannot read the file (${code})`, { cause: err });
  }
  return err;
}

enum Mode {
  /** Before the top-level `{` or `[`. */
  Start,
  /** Inside the top-level object, between members. */
  Object,
  /** Inside the events array. */
  Events,
  /** After the events array of a bare-array file, or after the top-level object. */
  Done,
}

interface LaneEntry {
  lane: MutableLane;
  wanted: boolean;
  offered: boolean;
}

interface DeviceEntry {
  device: MutableDevice;
  processName: string;
  lanes: Map<number | string, LaneEntry>;
  named: boolean;
  offered: boolean;
}

/** Where an arg key occurs next in the current text (positions, or -1 for none after `…From`). */
interface ArgProbe {
  /** The key's UTF-8 bytes. */
  readonly key: Buffer;
  /** `"key":"` as the file spells it. */
  readonly withValue: Pattern;
  /** `"key"`. */
  readonly bare: Buffer;
  generation: number;
  withValueFrom: number;
  withValueAt: number;
  bareFrom: number;
  bareAt: number;
}

type MutableDevice = { -readonly [K in keyof TraceDevice]: TraceDevice[K] } & { labels: string };
type MutableLane = { -readonly [K in keyof TraceLane]: TraceLane[K] } & { named: boolean };

// Recorded string kinds for fields and args.
const STR = 0;
const STR_ESCAPED = 1;
const RAW = 2;

// Results of `fastArg`.
const FOUND = 0;
const ABSENT = 1;
const PARSE = 2;

const ascii = (s: string): Buffer => Buffer.from(s, 'latin1');
/** How tsl starts every complete event. */
const TSL_EVENT_HEAD = new Pattern('{"ph":"X","pid":');
const TSL_TID = new Pattern(',"tid":');
const TSL_TS = new Pattern(',"ts":');
const TSL_DUR = new Pattern(',"dur":');
const TSL_NAME = new Pattern(',"name":"');
const TSL_ARGS = new Pattern(',"args":{');
/** How every event of a tsl-shaped file starts: cannot occur inside a JSON string. */
const EVENT_START = ascii('{"ph":');
const TRACE_EVENTS = ascii('traceEvents');
const DISPLAY_TIME_UNIT = ascii('displayTimeUnit');
const SPACED_SEPARATOR = ascii('": "');
const META_NAMES = ['process_name', 'thread_name', 'process_labels'].map((n) => ({ n, bytes: ascii(n) }));

// Event keys recognised without a string search.
const K_OTHER = 0;
const K_PH = 1;
const K_PID = 2;
const K_TID = 3;
const K_TS = 4;
const K_DUR = 5;
const K_NAME = 6;
const K_ARGS = 7;
const K_CAT = 8;
const KEY_LENGTH = [0, 2, 3, 3, 2, 3, 4, 4, 3];

/** Which known key starts at `k` (just after its opening quote), checking through its closing quote. */
function eventKey(text: Buffer, k: number): number {
  switch (byteAt(text, k)) {
    case 112: // p
      if (byteAt(text, k + 1) === 104 && byteAt(text, k + 2) === 34) return K_PH;
      if (byteAt(text, k + 1) === 105 && byteAt(text, k + 2) === 100 && byteAt(text, k + 3) === 34)
        return K_PID;
      return K_OTHER;
    case 116: // t
      if (byteAt(text, k + 1) === 115 && byteAt(text, k + 2) === 34) return K_TS;
      if (byteAt(text, k + 1) === 105 && byteAt(text, k + 2) === 100 && byteAt(text, k + 3) === 34)
        return K_TID;
      return K_OTHER;
    case 100: // d
      return byteAt(text, k + 1) === 117 && byteAt(text, k + 2) === 114 && byteAt(text, k + 3) === 34
        ? K_DUR
        : K_OTHER;
    case 110: // n
      return byteAt(text, k + 1) === 97 &&
        byteAt(text, k + 2) === 109 &&
        byteAt(text, k + 3) === 101 &&
        byteAt(text, k + 4) === 34
        ? K_NAME
        : K_OTHER;
    case 97: // a
      return byteAt(text, k + 1) === 114 &&
        byteAt(text, k + 2) === 103 &&
        byteAt(text, k + 3) === 115 &&
        byteAt(text, k + 4) === 34
        ? K_ARGS
        : K_OTHER;
    case 99: // c
      return byteAt(text, k + 1) === 97 && byteAt(text, k + 2) === 116 && byteAt(text, k + 3) === 34
        ? K_CAT
        : K_OTHER;
    default:
      return K_OTHER;
  }
}

class ChromeJsonScanner {
  /** The bytes being scanned: a chunk of the file, or a chunk boundary's carried bytes and what follows. */
  private text: Buffer = Buffer.alloc(0);
  /** `text` viewed for four-byte reads (see Pattern). */
  private words: DataView = viewOf(this.text);
  /** Bytes scanned before `text[0]`, for error offsets. */
  private consumedBytes = 0;
  /** Unscanned bytes carried to the next chunk. */
  private carry: Buffer | undefined;
  /** The file is tsl's (or its Python re-dump): every args value is a string, so args hold no brackets. */
  private tslShape = false;
  /** Between a key and its string value: `":"` as tsl writes it, `": "` in Python's re-dump. */
  private keyValueSeparator = '":"';
  private mode = Mode.Start;
  private bareArray = false;
  private sawEvents = false;
  private originUs: number | undefined;
  private readonly strings = new StringScanner();
  private readonly devices = new Map<number | string, DeviceEntry>();
  private deviceCount = 0;
  private laneCount = 0;
  private lastPid: number | string | undefined;
  private lastTid: number | string | undefined;
  private lastLane: LaneEntry | undefined;
  private readonly view: JsonEventView;
  private readonly otherPhases = new Map<string, number>();
  private readonly stats: ReadStats;
  private bytes = 0;
  /** Strings decoded so far: ASCII ones found by their bytes, the others by their text. */
  private readonly interned = new ByteInterner();
  private readonly intern = new Map<string, string>();

  // The event being parsed.
  private ph = 0;
  private pid: number | string | undefined;
  private tid: number | string | undefined;
  private tsPs = 0;
  private durPs = 0;
  private hasTs = false;
  private nameStart = -1;
  private nameEnd = -1;
  private nameKind = STR;
  private catStart = -1;
  private catEnd = -1;
  private catKind = STR;
  private argCount = 0;
  private argsStart = -1;
  private argsEnd = -1;
  private argsParsed = false;
  /** Per arg key, where its next occurrence in the current text is (see `fastArg`). */
  private readonly probes = new Map<string, ArgProbe>();
  /** Bumped with every new text, so probes of the previous text are not trusted. */
  private textGeneration = 0;
  private readonly argKeyStart: number[] = [];
  private readonly argKeyEnd: number[] = [];
  private readonly argValStart: number[] = [];
  private readonly argValEnd: number[] = [];
  private readonly argValKind: number[] = [];

  constructor(
    private readonly path: string,
    private readonly visitor: TraceVisitor,
    private readonly eventCap: number,
    private readonly known: NameTable | undefined,
  ) {
    this.view = new JsonEventView(this);
    this.stats = {
      format: 'chrome-json',
      path,
      bytes: 0,
      events: 0,
      eventsDelivered: 0,
      originPs: '0',
      capped: false,
      lateNames: false,
      warnings: [],
    };
  }

  offsetOf(at: number): number {
    return this.consumedBytes + at;
  }

  /**
   * Scan the next chunk. The unscanned tail of the previous chunk (the element the chunk boundary cut)
   * is kept and finished in a small buffer of itself and the chunk's head; the rest of the chunk is then
   * scanned in place, without copying it into a joined buffer first.
   */
  feed(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.bytes += chunk.length;
    let buf = chunk;
    const carry = this.carry;
    this.carry = undefined;
    if (carry !== undefined) {
      if (carry.length < BOUNDARY_BYTES && chunk.length > BOUNDARY_BYTES) {
        const head = Buffer.concat([carry, chunk.subarray(0, BOUNDARY_BYTES)]);
        const used = this.scanBytes(head);
        buf =
          used >= carry.length
            ? chunk.subarray(used - carry.length)
            : Buffer.concat([carry.subarray(used), chunk]); // an element longer than the head
      } else buf = Buffer.concat([carry, chunk]);
    }
    const used = this.scanBytes(buf);
    if (used < buf.length) this.carry = Buffer.from(buf.subarray(used));
  }

  /** Scan whatever is left. */
  feedEnd(): void {
    const rest = this.carry;
    this.carry = undefined;
    if (rest === undefined) return;
    const used = this.scanBytes(rest);
    if (used < rest.length) this.carry = Buffer.from(rest.subarray(used));
  }

  /** Scan `buf` as one text; returns the bytes used (the rest starts an element cut by its end). */
  private scanBytes(buf: Buffer): number {
    this.text = buf;
    this.words = viewOf(buf);
    this.textGeneration++;
    this.strings.reset(buf);
    let p: number;
    try {
      p = this.scan(buf);
    } catch (err) {
      if (err !== NEED_MORE) throw err;
      p = this.resumeAt;
    }
    this.consumedBytes += p;
    return p;
  }

  /** Where to restart after NEED_MORE: the start of the element being parsed. */
  private resumeAt = 0;

  private scan(text: Buffer): number {
    let p = 0;
    for (;;) {
      this.resumeAt = p;
      switch (this.mode) {
        case Mode.Start: {
          p = skipSpace(text, p);
          if (p >= text.length) return p;
          const c = byteAt(text, p);
          if (c === 123) this.mode = Mode.Object;
          else if (c === 91) {
            this.mode = Mode.Events;
            this.bareArray = true;
            this.sawEvents = true;
          } else if (
            c === 0xef &&
            (p + 1 >= text.length || text[p + 1] === 0xbb) &&
            (p + 2 >= text.length || text[p + 2] === 0xbf)
          ) {
            // A UTF-8 byte order mark (or the start of one cut by the chunk's end).
            if (p + 3 > text.length) throw NEED_MORE;
            p += 3;
            continue;
          } else {
            throw new JsonSyntaxError(
              p,
              `expected '{' or '[' at the start of a Chrome trace, found ${charAt(text, p)}`,
            );
          }
          p++;
          break;
        }
        case Mode.Object:
          p = this.objectMember(text, p);
          break;
        case Mode.Events:
          p = this.eventsElement(text, p);
          break;
        case Mode.Done:
          p = skipSpace(text, p);
          if (p < text.length) {
            if (this.bareArray) return text.length; // tolerate trailing junk after a bare array
            throw new JsonSyntaxError(p, `unexpected ${charAt(text, p)} after the end of the trace`);
          }
          return p;
      }
      if (p >= text.length) return p;
    }
  }

  /** One member of the top-level object (or its end); `traceEvents` switches to event mode. */
  private objectMember(text: Buffer, p: number): number {
    p = skipSpace(text, p);
    let c = byteAt(text, p);
    if (c === 44) {
      p = skipSpace(text, p + 1);
      c = byteAt(text, p);
    }
    if (c === 125) {
      this.mode = Mode.Done;
      return p + 1;
    }
    if (c !== 34) fail(text, p, "a member name or '}'");
    const keyEnd = this.strings.end(p + 1);
    const isEvents = keyEnd - p - 1 === 11 && bytesAt(text, p + 1, TRACE_EVENTS);
    // tsl writes displayTimeUnit first; jax's perfetto_trace.json.gz is a Python re-dump of the same.
    if (!this.sawEvents && keyEnd - p - 1 === 15 && bytesAt(text, p + 1, DISPLAY_TIME_UNIT)) {
      this.tslShape = true;
      this.keyValueSeparator = bytesAt(text, keyEnd, SPACED_SEPARATOR) ? '": "' : '":"';
      this.probes.clear();
      this.lastProbeKey = undefined;
    }
    p = skipSpace(text, keyEnd + 1);
    if (byteAt(text, p) !== 58) fail(text, p, "':'");
    p = skipSpace(text, p + 1);
    if (isEvents) {
      if (byteAt(text, p) !== 91) fail(text, p, '\'[\' after "traceEvents"');
      this.mode = Mode.Events;
      this.sawEvents = true;
      return p + 1;
    }
    return skipValue(text, p, this.strings);
  }

  /** One element of the events array (or its end). */
  private eventsElement(text: Buffer, p: number): number {
    p = skipSpace(text, p);
    let c = byteAt(text, p);
    if (c === 44) {
      p = skipSpace(text, p + 1);
      this.resumeAt = p;
      c = byteAt(text, p);
    }
    if (c === 93) {
      this.mode = this.bareArray ? Mode.Done : Mode.Object;
      return p + 1;
    }
    if (c !== 123) fail(text, p, "an event object, ',' or ']'");
    return this.event(text, p);
  }

  /** Parse the event object at `p` (its `{`), dispatch it, and return the index after its `}`. */
  private event(text: Buffer, p: number): number {
    this.resetEvent();
    if (this.tslShape && TSL_EVENT_HEAD.at(text, this.words, p)) {
      const end = this.tslEvent(text, p + TSL_EVENT_HEAD.length);
      if (end > 0) return end;
      this.resetEvent(); // not the exact tsl layout after all: parse it the general way
    }
    return this.anyEvent(text, p);
  }

  private resetEvent(): void {
    this.ph = 0;
    this.pid = undefined;
    this.tid = undefined;
    this.hasTs = false;
    this.durPs = 0;
    this.nameStart = -1;
    this.catStart = -1;
    this.argCount = 0;
    this.argsStart = -1;
    this.argsEnd = -1;
    this.argsParsed = false;
  }

  /**
   * An event in any layout. Kept apart from `event` so that the first metadata or odd event met after
   * the hot path was optimized deoptimizes only this function, not the per-event one with it.
   */
  private anyEvent(text: Buffer, p: number): number {
    const strings = this.strings;
    p = skipSpace(text, p + 1);
    if (byteAt(text, p) === 125) return p + 1; // {}
    for (;;) {
      if (byteAt(text, p) !== 34) fail(text, p, 'a member name');
      // Known keys are recognised by their characters; anything else is found with indexOf.
      const key = eventKey(text, p + 1);
      let ke: number;
      if (key === K_OTHER) ke = strings.end(p + 1);
      else ke = p + 1 + KEY_LENGTH[key]!;
      p = ke + 1;
      if (byteAt(text, p) !== 58) {
        p = skipSpace(text, p);
        if (byteAt(text, p) !== 58) fail(text, p, "':'");
      }
      p++;
      let c = byteAt(text, p);
      if (c === 32 || c === 10 || c === 13 || c === 9) {
        p = skipSpace(text, p);
        c = byteAt(text, p);
      }
      switch (key) {
        case K_PH: {
          if (c !== 34) fail(text, p, 'a string for "ph"');
          if (byteAt(text, p + 2) === 34) {
            this.ph = firstChar(text, p + 1, p + 2);
            p += 3;
          } else {
            const e = strings.end(p + 1);
            this.ph = e > p + 1 ? firstChar(text, p + 1, e) : 0;
            p = e + 1;
          }
          break;
        }
        case K_PID:
          p = this.laneIdValue(text, p, c!);
          this.pid = this.idValue;
          break;
        case K_TID:
          p = this.laneIdValue(text, p, c!);
          this.tid = this.idValue;
          break;
        case K_TS:
          if (this.originUs === undefined) {
            const us = parseInteger(text, p);
            this.originUs = Math.abs(us) >= EPOCH_US_THRESHOLD ? us : 0;
          }
          this.tsPs = parseTimePs(text, p, this.originUs);
          this.hasTs = true;
          p = numberEnd;
          break;
        case K_DUR:
          this.durPs = parseTimePs(text, p, 0);
          p = numberEnd;
          break;
        case K_NAME:
          if (c === 34) {
            this.nameStart = p + 1;
            this.nameEnd = strings.end(p + 1);
            this.nameKind = strings.escaped ? STR_ESCAPED : STR;
            p = this.nameEnd + 1;
          } else {
            this.nameStart = p;
            p = skipValue(text, p, strings);
            this.nameEnd = p;
            this.nameKind = RAW;
          }
          break;
        case K_ARGS:
          if (c === 123) {
            this.argsStart = p;
            if (this.ph === 77) {
              p = this.args(text, p);
              this.argsParsed = true;
            } else {
              // Args are parsed only if the visitor asks for one (see argString).
              p = this.tslShape ? this.skipTslArgs(text, p) : skipValue(text, p, strings);
              this.argsEnd = p;
            }
          } else p = skipValue(text, p, strings);
          break;
        case K_CAT:
          if (c === 34) {
            this.catStart = p + 1;
            this.catEnd = strings.end(p + 1);
            this.catKind = strings.escaped ? STR_ESCAPED : STR;
            p = this.catEnd + 1;
          } else p = skipValue(text, p, strings);
          break;
        default:
          p = skipValue(text, p, strings);
      }
      c = byteAt(text, p);
      if (c === 32 || c === 10 || c === 13 || c === 9) {
        p = skipSpace(text, p);
        c = byteAt(text, p);
      }
      if (c === 44) {
        p++;
        c = byteAt(text, p);
        if (c === 32 || c === 10 || c === 13 || c === 9) p = skipSpace(text, p);
        continue;
      }
      if (c === 125) {
        p++;
        break;
      }
      fail(text, p, "',' or '}' in an event");
    }
    // The event is complete; from here on nothing may throw NEED_MORE.
    if (this.ph === 88) this.complete();
    else if (this.ph === 77) this.metadata();
    else if (this.ph !== 0) {
      const key = String.fromCharCode(this.ph);
      this.otherPhases.set(key, (this.otherPhases.get(key) ?? 0) + 1);
    }
    return p;
  }

  /**
   * The complete event exactly as tsl writes it, from just after `{"ph":"X","pid":`:
   * `<pid>,"tid":<tid>,"ts":<µs>,"dur":<µs>,"name":"…"` then `}` or `,"args":{…}}`.
   * Returns the index after the event, or -1 when the text differs from that layout (no side effects
   * beyond the fields the caller resets).
   */
  private tslEvent(text: Buffer, p: number): number {
    this.ph = 88;
    const words = this.words;
    const pid = parseInteger(text, p);
    p = numberEnd;
    if (!TSL_TID.at(text, words, p)) return -1;
    const tid = parseInteger(text, p + 7);
    p = numberEnd;
    if (!TSL_TS.at(text, words, p)) return -1;
    p += 6;
    if (this.originUs === undefined) {
      const us = parseInteger(text, p);
      this.originUs = Math.abs(us) >= EPOCH_US_THRESHOLD ? us : 0;
    }
    this.tsPs = parseTimePs(text, p, this.originUs);
    this.hasTs = true;
    p = numberEnd;
    if (!TSL_DUR.at(text, words, p)) return -1;
    this.durPs = parseTimePs(text, p + 7, 0);
    p = numberEnd;
    if (!TSL_NAME.at(text, words, p)) return -1;
    this.nameStart = p + 9;
    this.nameEnd = this.strings.end(p + 9);
    this.nameKind = this.strings.escaped ? STR_ESCAPED : STR;
    p = this.nameEnd + 1;
    let c = byteAt(text, p);
    if (c === 44) {
      if (!TSL_ARGS.at(text, words, p)) return -1;
      this.argsStart = p + 8;
      p = this.skipTslArgs(text, p + 8);
      this.argsEnd = p;
      c = byteAt(text, p);
    }
    if (c !== 125) {
      if (p >= text.length) throw NEED_MORE;
      return -1;
    }
    this.pid = pid;
    this.tid = tid;
    this.complete();
    return p + 1;
  }

  /**
   * Skip an args object of a tsl-shaped file in one search. Its values are all strings, so it holds no
   * brackets outside strings and ends right before the `}` that closes the event; the next event starts
   * with `{"ph":`, which cannot occur inside a JSON string (its quote would end the string). Falls back to
   * a full scan when the shape does not match.
   */
  private skipTslArgs(text: Buffer, p: number): number {
    const next = text.indexOf(EVENT_START, p);
    if (next > p) {
      let q = next - 1;
      let c = text[q]!;
      while (c === 32 || c === 10 || c === 13 || c === 9) c = text[--q]!;
      if (c === 44) {
        c = text[--q]!;
        while (c === 32 || c === 10 || c === 13 || c === 9) c = text[--q]!;
        if (c === 125) {
          // q: the event's closing brace; before it, optional space and the args' closing brace.
          let r = q - 1;
          c = text[r]!;
          while (c === 32 || c === 10 || c === 13 || c === 9) c = text[--r]!;
          if (c === 125 && r > p) return r + 1;
        }
      }
    }
    return skipValue(text, p, this.strings);
  }

  private idValue: number | string = 0;

  /** Parse a pid/tid (number or string) into `idValue`. */
  private laneIdValue(text: Buffer, p: number, c: number): number {
    if (c === 34) {
      const e = this.strings.end(p + 1);
      this.idValue = this.decode(p + 1, e, STR); // as written, escapes and all
      return e + 1;
    }
    const v = parseInteger(text, p);
    const e = numberEnd;
    const next = byteAt(text, e);
    if (next === 46 || next === 101 || next === 69) {
      // A non-integer id: keep its text.
      const end = skipScalar(text, p);
      this.idValue = text.toString('latin1', p, end);
      return end;
    }
    if (e === p) fail(text, p, 'a number or string id');
    this.idValue = v;
    return e;
  }

  /** Record the members of an `args` object; returns the index after it. */
  private args(text: Buffer, p: number): number {
    const strings = this.strings;
    p = skipSpace(text, p + 1);
    if (byteAt(text, p) === 125) return p + 1;
    let n = 0;
    for (;;) {
      if (byteAt(text, p) !== 34) fail(text, p, 'an args member name');
      const ks = p + 1;
      const ke = strings.end(ks);
      const keyEscaped = strings.escaped;
      p = ke + 1;
      if (byteAt(text, p) !== 58) {
        p = skipSpace(text, p);
        if (byteAt(text, p) !== 58) fail(text, p, "':'");
      }
      p = skipSpace(text, p + 1);
      const c = byteAt(text, p);
      if (!keyEscaped) {
        this.argKeyStart[n] = ks;
        this.argKeyEnd[n] = ke;
        if (c === 34) {
          const e = strings.end(p + 1);
          this.argValStart[n] = p + 1;
          this.argValEnd[n] = e;
          this.argValKind[n] = strings.escaped ? STR_ESCAPED : STR;
          p = e + 1;
        } else {
          const e = skipValue(text, p, strings);
          this.argValStart[n] = p;
          this.argValEnd[n] = e;
          this.argValKind[n] = RAW;
          p = e;
        }
        n++;
      } else {
        p = skipValue(text, p, strings); // escaped arg names are not looked up
      }
      p = skipSpace(text, p);
      const d = byteAt(text, p);
      if (d === 44) {
        p = skipSpace(text, p + 1);
        continue;
      }
      if (d === 125) {
        this.argCount = n;
        return p + 1;
      }
      fail(text, p, "',' or '}' in args");
    }
  }

  private laneEntry(): LaneEntry {
    const pid = this.pid ?? '';
    const tid = this.tid ?? '';
    if (pid === this.lastPid && tid === this.lastTid && this.lastLane !== undefined) return this.lastLane;
    const dev = this.deviceEntry(pid);
    let entry = dev.lanes.get(tid);
    if (entry === undefined) {
      const knownName = this.known?.threads.get(`${pid}\u0000${tid}`);
      const lane: MutableLane = {
        index: this.laneCount++,
        device: dev.device,
        name: knownName ?? `tid ${tid}`,
        rawId: String(tid),
        named: knownName !== undefined,
      };
      entry = { lane, wanted: false, offered: false };
      dev.lanes.set(tid, entry);
    }
    if (!entry.offered) {
      entry.offered = true;
      dev.offered = true;
      entry.wanted = this.visitor.wantLane(entry.lane);
    }
    this.lastPid = pid;
    this.lastTid = tid;
    this.lastLane = entry;
    return entry;
  }

  private deviceEntry(pid: number | string): DeviceEntry {
    let dev = this.devices.get(pid);
    if (dev === undefined) {
      const device: MutableDevice = {
        index: this.deviceCount++,
        name: `pid ${pid}`,
        rawId: String(pid),
        kind: 'unknown',
        stats: {},
        labels: '',
      };
      dev = { device, processName: `pid ${pid}`, lanes: new Map(), named: false, offered: false };
      const known = this.known?.processes.get(pid);
      if (known !== undefined) {
        if (known.name !== undefined) {
          dev.processName = known.name;
          dev.named = true;
        }
        device.labels = known.labels;
        device.name = deviceDisplayName(dev.processName, device.labels);
        device.kind = deviceKindOf(device.name, device.labels);
      }
      this.devices.set(pid, dev);
    }
    return dev;
  }

  private complete(): void {
    this.stats.events++;
    const entry = this.laneEntry();
    if (!entry.wanted) return;
    if (!this.hasTs) return;
    const view = this.view;
    view.reset(this.tsPs, Math.max(this.durPs, 0));
    this.visitor.onEvent(entry.lane, view);
    this.stats.eventsDelivered++;
  }

  private metadata(): void {
    const kind = this.metaName();
    if (kind === undefined) return;
    const pid = this.pid ?? '';
    const dev = this.deviceEntry(pid);
    if (kind === 'process_name' || kind === 'process_labels') {
      const value = kind === 'process_name' ? this.argString('name') : this.argString('labels');
      if (value === undefined) return;
      const device = dev.device;
      if (kind === 'process_name') {
        if (dev.named && dev.processName === value) return;
        dev.processName = value;
        dev.named = true;
      } else {
        if (device.labels === value) return;
        device.labels = value;
      }
      device.name = deviceDisplayName(dev.processName, device.labels);
      device.kind = deviceKindOf(device.name, device.labels);
      if (dev.offered) this.stats.lateNames = true;
    } else if (kind === 'thread_name') {
      const value = this.argString('name');
      if (value === undefined) return;
      const tid = this.tid ?? '';
      let entry = dev.lanes.get(tid);
      if (entry === undefined) {
        const lane: MutableLane = {
          index: this.laneCount++,
          device: dev.device,
          name: value,
          rawId: String(tid),
          named: true,
        };
        entry = { lane, wanted: false, offered: false };
        dev.lanes.set(tid, entry);
        return;
      }
      if (entry.lane.named && entry.lane.name === value) return;
      entry.lane.name = value;
      entry.lane.named = true;
      if (entry.offered) this.stats.lateNames = true;
    }
  }

  /** The current event's `name` when it is one of the metadata names we use. */
  private metaName(): string | undefined {
    if (this.nameStart < 0 || this.nameKind === RAW) return undefined;
    const text = this.text;
    const len = this.nameEnd - this.nameStart;
    for (const { n, bytes } of META_NAMES) {
      if (len === bytes.length && bytesAt(text, this.nameStart, bytes)) return n;
    }
    return undefined;
  }

  // ---- accessors used by the event view -------------------------------------------------------------

  eventName(): string {
    if (this.nameStart < 0) return '';
    return this.decode(this.nameStart, this.nameEnd, this.nameKind);
  }

  eventCategory(): string | undefined {
    if (this.catStart < 0) return undefined;
    return this.decode(this.catStart, this.catEnd, this.catKind);
  }

  /** Parse the current event's args on first use. */
  private ensureArgs(): void {
    if (this.argsParsed) return;
    this.argsParsed = true;
    if (this.argsStart >= 0) this.args(this.text, this.argsStart);
  }

  /**
   * A string-valued arg of a tsl-shaped file found without parsing the args: `"key":"` cannot occur
   * inside a JSON string (its quotes would be escaped), so the first match inside the args is the key.
   * Returns FOUND (the value is text[fastStart, fastEnd)), ABSENT, or PARSE when this shortcut does not
   * apply.
   *
   * The first key of the args is checked in place; beyond it, each key remembers where its next
   * occurrence in the chunk is, so a key asked of every event costs one search over the chunk in all,
   * present or absent, and nothing is sliced or allocated per event.
   */
  private fastArg(key: string): number {
    if (this.argsParsed || !this.tslShape || this.argsEnd < 0) return PARSE;
    const probe = this.probe(key);
    const text = this.text;
    const a = this.argsStart;
    const b = this.argsEnd;
    if (probe.withValue.at(text, this.words, a + 1)) return this.fastValue(a + 1 + probe.withValue.length, b);
    if (probe.generation !== this.textGeneration) {
      probe.generation = this.textGeneration;
      probe.withValueFrom = Number.MAX_SAFE_INTEGER;
      probe.bareFrom = Number.MAX_SAFE_INTEGER;
    }
    // The next occurrence at or after the args' start: known when the last search began at or before
    // it and found nothing before it.
    if (probe.withValueFrom > a || (probe.withValueAt >= 0 && probe.withValueAt < a)) {
      probe.withValueFrom = a;
      probe.withValueAt = text.indexOf(probe.withValue.bytes, a);
    }
    const at = probe.withValueAt;
    if (at < 0 || at + probe.withValue.length > b) {
      // Absent, unless spelled another way (other spacing, a non-string value): then parse.
      if (probe.bareFrom > a || (probe.bareAt >= 0 && probe.bareAt < a)) {
        probe.bareFrom = a;
        probe.bareAt = text.indexOf(probe.bare, a);
      }
      const bare = probe.bareAt;
      return bare >= 0 && bare + probe.bare.length <= b ? PARSE : ABSENT;
    }
    return this.fastValue(at + probe.withValue.length, b);
  }

  /**
   * The string value starting at `start`, inside args that end at `b`: FOUND, or PARSE for escapes.
   * A short value of digits alone is read as a number on the way (`fastNumber`, else -1): numeric args
   * such as `device_duration_ps` are asked of every event.
   */
  private fastValue(start: number, b: number): number {
    const text = this.text;
    let end = start;
    const lim = Math.min(b, start + 32);
    let v = 0;
    let digits = true;
    for (; end < lim; end++) {
      const d = text[end]! - 48;
      if (d === -14) break; // the closing quote
      if (d >= 0 && d <= 9) v = v * 10 + d;
      else digits = false;
    }
    if (end === lim) {
      end = text.indexOf(34, end);
      digits = false;
    }
    if (end < 0 || end >= b || text[end - 1] === 92) return PARSE; // escapes: parse
    this.fastStart = start;
    this.fastEnd = end;
    this.fastNumber = digits && end > start ? v : -1;
    return FOUND;
  }

  private probe(key: string): ArgProbe {
    // The same few keys are asked of every event: the last one is kept by identity.
    if (key === this.lastProbeKey) return this.lastProbe!;
    let probe = this.probes.get(key);
    if (probe === undefined) {
      probe = {
        key: Buffer.from(key, 'utf8'),
        withValue: new Pattern(Buffer.from(`"${key}${this.keyValueSeparator}`, 'utf8')),
        bare: Buffer.from(`"${key}"`, 'utf8'),
        generation: -1,
        withValueFrom: 0,
        withValueAt: -1,
        bareFrom: 0,
        bareAt: -1,
      };
      this.probes.set(key, probe);
    }
    this.lastProbeKey = key;
    this.lastProbe = probe;
    return probe;
  }

  private lastProbeKey: string | undefined;
  private lastProbe: ArgProbe | undefined;
  /** The value found by the last `fastArg` that returned FOUND, and its digits as a number (or -1). */
  private fastStart = 0;
  private fastEnd = 0;
  private fastNumber = -1;

  argNumber(key: string): number | undefined {
    const fast = this.fastArg(key);
    if (fast === ABSENT) return undefined;
    if (fast === FOUND) {
      if (this.fastNumber >= 0) return this.fastNumber;
      const text = this.text;
      const start = this.fastStart;
      const end = this.fastEnd;
      let v = 0;
      for (let p = start; p < end; p++) {
        const c = text[p]! - 48;
        if (c < 0 || c > 9) return numberOrUndefined(text.toString('utf8', start, end));
        v = v * 10 + c;
      }
      return end > start ? v : undefined;
    }
    const s = this.argString(key);
    return s === undefined ? undefined : numberOrUndefined(s);
  }

  argString(key: string): string | undefined {
    const fast = this.fastArg(key);
    if (fast === ABSENT) return undefined;
    if (fast === FOUND) return this.decode(this.fastStart, this.fastEnd, STR);
    this.ensureArgs();
    const text = this.text;
    const bytes = this.probe(key).key;
    const klen = bytes.length;
    for (let k = 0; k < this.argCount; k++) {
      const ks = this.argKeyStart[k]!;
      if (this.argKeyEnd[k]! - ks === klen && bytesAt(text, ks, bytes)) {
        return this.decode(this.argValStart[k]!, this.argValEnd[k]!, this.argValKind[k]!);
      }
    }
    return undefined;
  }

  allArgs(): Record<string, string> {
    this.ensureArgs();
    const out: Record<string, string> = {};
    for (let k = 0; k < this.argCount; k++) {
      const key = this.decode(this.argKeyStart[k]!, this.argKeyEnd[k]!, STR);
      out[key] = this.decode(this.argValStart[k]!, this.argValEnd[k]!, this.argValKind[k]!);
    }
    return out;
  }

  /** The string for text[start, end): JSON-unescaped when needed, interned. */
  private decode(start: number, end: number, kind: number): string {
    const text = this.text;
    if (kind === STR) {
      const s = this.interned.get(text, this.words, start, end);
      return s ?? this.copy(text.toString('utf8', start, end));
    }
    const s = text.toString('utf8', start, end);
    return this.copy(kind === STR_ESCAPED ? (JSON.parse(`"${s}"`) as string) : s);
  }

  /** Intern `s` (decoded afresh from the bytes, so it shares no storage with anything). */
  private copy(s: string): string {
    const hit = this.intern.get(s);
    if (hit !== undefined) return hit;
    if (this.intern.size < INTERN_LIMIT) this.intern.set(s, s);
    return s;
  }

  exportNames(out: NameTable): void {
    for (const [pid, dev] of this.devices) {
      out.processes.set(pid, { name: dev.named ? dev.processName : undefined, labels: dev.device.labels });
      for (const [tid, entry] of dev.lanes)
        if (entry.lane.named) out.threads.set(`${pid}\u0000${tid}`, entry.lane.name);
    }
  }

  finish(aborted: boolean): ReadStats {
    const stats = this.stats;
    stats.bytes = this.bytes;
    stats.originPs = String(BigInt(this.originUs ?? 0) * 1_000_000n);
    if (!aborted) {
      const restBlank = this.carry === undefined || this.carry.toString('latin1').trim() === '';
      if (this.mode === Mode.Start) {
        throw new InputError(this.path, this.bytes === 0 ? 'the file is empty' : 'no JSON value in the file');
      }
      if (this.mode === Mode.Events && this.bareArray && restBlank) {
        stats.warnings.push('the JSON array has no closing "]" (allowed by the Chrome trace format)');
      } else if (this.mode !== Mode.Done) {
        const where =
          this.mode === Mode.Events ? 'inside the traceEvents array' : 'inside the top-level object';
        throw new InputError(this.path, `unexpected end of file ${where} (the trace is truncated)`, {
          hint: 'the file was cut short; capture or copy it again',
        });
      }
      if (!this.sawEvents) {
        throw new InputError(this.path, 'not a Chrome trace: no "traceEvents" array', {
          hint: 'expected the JSON written by jax.profiler (*.trace.json.gz or perfetto_trace.json.gz)',
        });
      }
    }
    if (stats.events === this.eventCap) {
      stats.capped = true;
      stats.warnings.push(
        `the trace holds exactly ${this.eventCap.toLocaleString('en-US')} events, the profiler's cap: later events were dropped; analyse the .xplane.pb instead`,
      );
    }
    if (this.otherPhases.size > 0) {
      const parts = [...this.otherPhases].map(([ph, n]) => `${n} "${ph}"`).join(', ');
      stats.warnings.push(`ignored events of phases other than X and M: ${parts}`);
    }
    return stats;
  }
}

/** The UTF-16 code of the first character of text[start, end). */
function firstChar(text: Buffer, start: number, end: number): number {
  const b = text[start]!;
  return b < 0x80 ? b : text.toString('utf8', start, end).charCodeAt(0);
}

/** Kineto names every process after the Python binary and tells devices apart by `process_labels`. */
function deviceDisplayName(processName: string, labels: string): string {
  return labels === '' ? processName : `${labels} (${processName})`;
}

/**
 * ASCII strings interned by their bytes: a string seen before is found by a hash of its bytes (read four
 * at a time) and one comparison with the bytes kept for it, with nothing decoded or allocated. Open
 * addressing over parallel arrays; the bytes of the strings are kept in one arena.
 */
class ByteInterner {
  private hashes = new Int32Array(1024);
  /** Where each string's bytes start in the arena. */
  private offsets = new Int32Array(1024);
  private strings: (string | undefined)[] = new Array<string | undefined>(1024).fill(undefined);
  private size = 0;
  private arena = Buffer.allocUnsafe(64 * 1024);
  private arenaWords = viewOf(this.arena);
  private arenaUsed = 0;

  /** The interned string for buf[start, end) (`words` views `buf`), or undefined when not ASCII. */
  get(buf: Buffer, words: DataView, start: number, end: number): string | undefined {
    const len = end - start;
    if (len > INTERN_MAX_BYTES) {
      for (let k = start; k < end; k++) if (buf[k]! >= 0x80) return undefined;
      return buf.toString('latin1', start, end);
    }
    let h = len;
    let high = 0;
    let k = start;
    for (; k + 4 <= end; k += 4) {
      const w = words.getInt32(k, true);
      high |= w;
      h = Math.imul(h ^ w, 0x9e3779b1);
      h ^= h >>> 15;
    }
    for (; k < end; k++) {
      const b = buf[k]!;
      high |= b;
      h = Math.imul(h ^ b, 0x9e3779b1);
    }
    if ((high & 0x80808080) !== 0) return undefined;
    const hashes = this.hashes;
    const strings = this.strings;
    const mask = hashes.length - 1;
    let i = (h ^ (h >>> 16)) & mask;
    for (;;) {
      const s = strings[i];
      if (s === undefined) break;
      if (hashes[i] === h && s.length === len && this.same(buf, words, start, end, this.offsets[i]!))
        return s;
      i = (i + 1) & mask;
    }
    const s = buf.toString('latin1', start, end);
    if (this.size < INTERN_LIMIT && this.keep(buf, start, end)) {
      hashes[i] = h;
      strings[i] = s;
      this.offsets[i] = this.arenaUsed - len;
      if (++this.size * 2 > hashes.length) this.grow();
    }
    return s;
  }

  /** Whether buf[start, end) equals the arena's bytes at `at`. */
  private same(buf: Buffer, words: DataView, start: number, end: number, at: number): boolean {
    const arenaWords = this.arenaWords;
    let k = start;
    for (; k + 4 <= end; k += 4, at += 4)
      if (words.getInt32(k, true) !== arenaWords.getInt32(at, true)) return false;
    const arena = this.arena;
    for (; k < end; k++, at++) if (buf[k] !== arena[at]) return false;
    return true;
  }

  /** Copy buf[start, end) to the arena; false when the arena is full. */
  private keep(buf: Buffer, start: number, end: number): boolean {
    const len = end - start;
    if (this.arenaUsed + len > this.arena.length) {
      if (this.arena.length >= ARENA_LIMIT) return false;
      const bigger = Buffer.allocUnsafe(Math.min(ARENA_LIMIT, 2 * (this.arena.length + len)));
      this.arena.copy(bigger, 0, 0, this.arenaUsed);
      this.arena = bigger;
      this.arenaWords = viewOf(bigger);
      if (this.arenaUsed + len > bigger.length) return false;
    }
    buf.copy(this.arena, this.arenaUsed, start, end);
    this.arenaUsed += len;
    return true;
  }

  private grow(): void {
    const oldHashes = this.hashes;
    const oldOffsets = this.offsets;
    const oldStrings = this.strings;
    const n = oldHashes.length * 2;
    this.hashes = new Int32Array(n);
    this.offsets = new Int32Array(n);
    this.strings = new Array<string | undefined>(n).fill(undefined);
    const mask = n - 1;
    for (let j = 0; j < oldHashes.length; j++) {
      const s = oldStrings[j];
      if (s === undefined) continue;
      const h = oldHashes[j]!;
      let i = (h ^ (h >>> 16)) & mask;
      while (this.strings[i] !== undefined) i = (i + 1) & mask;
      this.hashes[i] = h;
      this.offsets[i] = oldOffsets[j]!;
      this.strings[i] = s;
    }
  }
}

class JsonEventView implements TraceEventView {
  /** Start and duration; a typed array so updating them per event allocates nothing. */
  private readonly times = new Float64Array(2);
  private cachedName: string | undefined;

  constructor(private readonly scanner: ChromeJsonScanner) {}

  reset(startPs: number, durPs: number): void {
    this.times[0] = startPs;
    this.times[1] = durPs;
    this.cachedName = undefined;
  }

  get startPs(): number {
    return this.times[0]!;
  }

  get durPs(): number {
    return this.times[1]!;
  }

  get name(): string {
    this.cachedName ??= this.scanner.eventName();
    return this.cachedName;
  }

  get category(): string | undefined {
    return this.scanner.eventCategory();
  }

  /** JSON events carry their args inline, so only the name identifies an op across events. */
  get key(): unknown {
    return this.name;
  }

  longName(): string | undefined {
    return this.scanner.argString('long_name');
  }

  arg(key: string): string | undefined {
    return this.scanner.argString(key);
  }

  argNumber(key: string): number | undefined {
    return this.scanner.argNumber(key);
  }

  args(): Record<string, string> {
    return this.scanner.allArgs();
  }
}

function numberOrUndefined(s: string): number | undefined {
  if (s.trim() === '') return undefined;
  const n = Number(s);
  return Number.isFinite(n) ? n : undefined;
}
