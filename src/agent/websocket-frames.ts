/**
 * The client's side of a WebSocket connection (RFC 6455 §5), read frame by frame so the key proxy can
 * check each message before it reaches the model API. Frames are forwarded as they came, byte for byte,
 * once the whole message they belong to has been checked; control frames (ping, pong, close) go at once.
 * No extension is negotiated (the proxy drops `Sec-WebSocket-Extensions`), so a frame with a reserved
 * bit set is refused, as is a message over the size cap.
 */

export interface Pushed {
  /** Raw frames, in order, that may go on to the upstream. */
  forward: Buffer[];
  /** Why the connection must end instead; nothing after it is forwarded. */
  refused?: string;
}

/** A message's text is checked by the caller: a reason to refuse it, or undefined. */
/** Why a whole message (its payload, and its opcode: 1 text, 2 binary) must not go on, or undefined. */
export type MessageCheck = (payload: Buffer, opcode: number) => string | undefined;

export class WebSocketMessages {
  private pending: Buffer = Buffer.alloc(0);
  /** The frames and the unmasked payload of the message being received. */
  private frames: Buffer[] = [];
  private payload: Buffer[] = [];
  private size = 0;
  private failed: string | undefined;
  /** The opcode of the message being gathered (its first frame's). */
  private opcode = 0;

  constructor(private readonly maxMessageBytes: number) {}

  /** Bytes held: a partial frame, and the frames of a message not yet checked. */
  buffered(): number {
    return this.pending.length + 2 * this.size; // each frame raw, and its payload unmasked
  }

  push(chunk: Buffer, check: MessageCheck): Pushed {
    if (this.failed) return { forward: [], refused: this.failed };
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const forward: Buffer[] = [];
    for (;;) {
      const frame = this.nextFrame();
      if (frame === undefined) break;
      if ('refused' in frame) return this.fail(frame.refused, forward);
      const { raw, fin, opcode, data } = frame;
      if (opcode >= 8) {
        forward.push(raw); // control frames may come between a message's fragments
        continue;
      }
      if ((opcode === 0) === (this.frames.length === 0)) {
        return this.fail(
          'breaks the framing (a continuation without a message, or a message inside one)',
          forward,
        );
      }
      this.size += data.length;
      if (this.size > this.maxMessageBytes)
        return this.fail(`is over ${this.maxMessageBytes} bytes`, forward);
      if (this.frames.length === 0) this.opcode = opcode;
      this.frames.push(raw);
      this.payload.push(data);
      if (!fin) continue;
      const why = check(Buffer.concat(this.payload), this.opcode);
      if (why) return this.fail(why, forward);
      forward.push(...this.frames);
      this.frames = [];
      this.payload = [];
      this.size = 0;
    }
    return { forward };
  }

  private fail(why: string, forward: Buffer[]): Pushed {
    this.failed = why;
    return { forward, refused: why };
  }

  /** The next whole frame of `pending` (consumed), undefined until one is complete. */
  private nextFrame():
    | { raw: Buffer; fin: boolean; opcode: number; data: Buffer }
    | { refused: string }
    | undefined {
    const b = this.pending;
    if (b.length < 2) return undefined;
    const fin = (b[0]! & 0x80) !== 0;
    if ((b[0]! & 0x70) !== 0)
      return { refused: 'sets a reserved bit (an extension the proxy did not allow)' };
    const opcode = b[0]! & 0x0f;
    const masked = (b[1]! & 0x80) !== 0;
    if (!masked) return { refused: 'is not masked (RFC 6455: a client masks every frame)' };
    let length = b[1]! & 0x7f;
    let at = 2;
    if (length === 126) {
      if (b.length < 4) return undefined;
      length = b.readUInt16BE(2);
      at = 4;
    } else if (length === 127) {
      if (b.length < 10) return undefined;
      const big = b.readBigUInt64BE(2);
      if (big > BigInt(this.maxMessageBytes)) return { refused: `is over ${this.maxMessageBytes} bytes` };
      length = Number(big);
      at = 10;
    }
    if (length > this.maxMessageBytes) return { refused: `is over ${this.maxMessageBytes} bytes` };
    if (b.length < at + 4 + length) return undefined;
    const key = b.subarray(at, at + 4);
    const data = Buffer.from(b.subarray(at + 4, at + 4 + length));
    for (let i = 0; i < data.length; i++) data[i]! ^= key[i & 3]!;
    const raw = Buffer.from(b.subarray(0, at + 4 + length));
    this.pending = b.subarray(at + 4 + length);
    return { raw, fin, opcode, data };
  }
}
