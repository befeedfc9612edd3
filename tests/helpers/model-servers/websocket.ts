/**
 * Just enough of RFC 6455 for a test server: accept an upgrade, read the client's text frames
 * (masked, possibly fragmented, any payload length), answer pings, send unmasked text frames and a
 * close frame. No extensions are negotiated: the client's `permessage-deflate` offer is declined by
 * leaving `Sec-WebSocket-Extensions` out of the 101 answer (RFC 7692 §5), so frames are never
 * compressed. Used by the fake Responses API, which codex reaches over a WebSocket first.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

/** RFC 6455 §1.3: the key is concatenated with this GUID, SHA-1 hashed and base64 encoded. */
const HANDSHAKE_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

const OPCODE = { continuation: 0x0, text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const;

export interface WebSocketConnection {
  send(text: string): void;
  /** Send a close frame (code 1000 unless told) and end the socket. */
  close(code?: number, reason?: string): void;
}

/**
 * Complete the handshake on an `upgrade` event's socket and call `onText` for every text message.
 * `headers` are added to the 101 answer.
 */
export function acceptWebSocket(
  req: IncomingMessage,
  socket: Duplex,
  onText: (text: string, ws: WebSocketConnection) => void,
  headers: Record<string, string> = {},
): WebSocketConnection {
  const key = req.headers['sec-websocket-key'];
  if (typeof key !== 'string') throw new Error('upgrade without Sec-WebSocket-Key');
  const accept = createHash('sha1').update(`${key}${HANDSHAKE_GUID}`).digest('base64');
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
  socket.write(
    `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n${extra.join('')}\r\n`,
  );

  let open = true;
  const ws: WebSocketConnection = {
    send(text) {
      if (open) socket.write(frame(OPCODE.text, Buffer.from(text, 'utf8')));
    },
    close(code = 1000, reason = '') {
      if (!open) return;
      open = false;
      const payload = Buffer.alloc(2 + Buffer.byteLength(reason));
      payload.writeUInt16BE(code, 0);
      payload.write(reason, 2);
      socket.end(frame(OPCODE.close, payload));
    },
  };

  let buffered = Buffer.alloc(0);
  let message: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    for (;;) {
      const parsed = parseFrame(buffered);
      if (!parsed) break;
      buffered = buffered.subarray(parsed.length);
      if (parsed.opcode === OPCODE.ping) socket.write(frame(OPCODE.pong, parsed.payload));
      else if (parsed.opcode === OPCODE.close) ws.close();
      else if (parsed.opcode === OPCODE.text || parsed.opcode === OPCODE.continuation) {
        message.push(parsed.payload);
        if (parsed.fin) {
          const text = Buffer.concat(message).toString('utf8');
          message = [];
          onText(text, ws);
        }
      }
    }
  });
  socket.on('error', () => {
    open = false;
  });
  socket.on('close', () => {
    open = false;
  });
  return ws;
}

interface Frame {
  fin: boolean;
  opcode: number;
  payload: Buffer;
  /** Bytes the frame took in the buffer. */
  length: number;
}

/** One frame from the front of `buf`, or undefined when it is not complete yet. */
function parseFrame(buf: Buffer): Frame | undefined {
  if (buf.length < 2) return undefined;
  const fin = (buf[0]! & 0x80) !== 0;
  const opcode = buf[0]! & 0x0f;
  const masked = (buf[1]! & 0x80) !== 0;
  let size = buf[1]! & 0x7f;
  let offset = 2;
  if (size === 126) {
    if (buf.length < 4) return undefined;
    size = buf.readUInt16BE(2);
    offset = 4;
  } else if (size === 127) {
    if (buf.length < 10) return undefined;
    size = Number(buf.readBigUInt64BE(2));
    offset = 10;
  }
  const maskLength = masked ? 4 : 0;
  if (buf.length < offset + maskLength + size) return undefined;
  const mask = buf.subarray(offset, offset + maskLength);
  const payload = Buffer.from(buf.subarray(offset + maskLength, offset + maskLength + size));
  if (masked) for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!;
  return { fin, opcode, payload, length: offset + maskLength + size };
}

/** A single unmasked frame (servers never mask, RFC 6455 §5.1). */
function frame(opcode: number, payload: Buffer): Buffer {
  const head =
    payload.length < 126
      ? Buffer.from([0x80 | opcode, payload.length])
      : payload.length < 0x10000
        ? Buffer.from([0x80 | opcode, 126, payload.length >> 8, payload.length & 0xff])
        : (() => {
            const h = Buffer.alloc(10);
            h[0] = 0x80 | opcode;
            h[1] = 127;
            h.writeBigUInt64BE(BigInt(payload.length), 2);
            return h;
          })();
  return Buffer.concat([head, payload]);
}
