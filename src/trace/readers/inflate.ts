/**
 * A file's bytes, gunzipped when it is gzip, as a sequence of chunks in one reused buffer.
 *
 * `createGunzip()` piped from a read stream inflates on libuv's threadpool into a fresh 1 MiB buffer per
 * chunk: every buffer is new memory the kernel has to fault in and zero, and every chunk is two thread
 * hand-offs. At 1 GB of JSON that was a quarter of the inflate's CPU time. Here the zlib handle of a
 * Gunzip is driven synchronously (what Node's own `gunzipSync` does) into one buffer that is reused
 * for every chunk. zlib still checks the gzip CRC-32 and length, and its errors are the stream's own.
 *
 * Each chunk is only valid until the next is requested: the consumer must copy what it keeps.
 */

import { open } from 'node:fs/promises';
import { constants, createGunzip, type Gunzip } from 'node:zlib';

/** The zlib binding of a Gunzip (Node internals, present from Node 12 through 24). */
interface ZlibHandle {
  writeSync(
    flush: number,
    input: Buffer,
    inOff: number,
    inLen: number,
    out: Buffer,
    outOff: number,
    outLen: number,
  ): void;
}

interface GunzipInternals {
  _handle?: ZlibHandle | null;
  /** After each write: [output bytes left, input bytes left]. */
  _writeState?: Uint32Array;
}

type FileHandle = Awaited<ReturnType<typeof open>>;

/**
 * The file's (gunzipped) bytes in chunks of at most `chunkBytes`, or undefined when this Node's zlib
 * does not expose what the synchronous drive needs (the caller then streams).
 */
export function inflatedChunks(
  path: string,
  gzip: boolean,
  chunkBytes: number,
): AsyncGenerator<Buffer> | undefined {
  if (!gzip) return fileChunks(path, chunkBytes);
  const gunzip = createGunzip();
  const internals = gunzip as unknown as GunzipInternals;
  const handle = internals._handle;
  const state = internals._writeState;
  if (typeof handle?.writeSync !== 'function' || !(state instanceof Uint32Array) || state.length < 2) {
    gunzip.close();
    return undefined;
  }
  return gunzipChunks(path, gunzip, handle, state, chunkBytes);
}

async function* fileChunks(path: string, chunkBytes: number): AsyncGenerator<Buffer> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(chunkBytes);
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, chunkBytes, null);
      if (bytesRead === 0) return;
      yield buf.subarray(0, bytesRead);
    }
  } finally {
    await fh.close();
  }
}

async function* gunzipChunks(
  path: string,
  gunzip: Gunzip,
  handle: ZlibHandle,
  state: Uint32Array,
  chunkBytes: number,
): AsyncGenerator<Buffer> {
  // zlib errors arrive through the stream's destroy(): `errored` is set at once, the event follows.
  gunzip.on('error', () => {});
  let fh: FileHandle | undefined;
  try {
    fh = await open(path, 'r');
    const input = Buffer.allocUnsafe(chunkBytes);
    const out = Buffer.allocUnsafe(chunkBytes);
    for (;;) {
      const { bytesRead } = await fh.read(input, 0, chunkBytes, null);
      // At the end of the file, Z_FINISH makes a cut stream fail ("unexpected end of file").
      const flush = bytesRead === 0 ? constants.Z_FINISH : constants.Z_NO_FLUSH;
      let inOff = 0;
      let inLeft = bytesRead;
      for (;;) {
        handle.writeSync(flush, input, inOff, inLeft, out, 0, chunkBytes);
        if (gunzip.errored !== null) throw gunzip.errored;
        const outLeft = state[0]!;
        inOff += inLeft - state[1]!;
        inLeft = state[1]!;
        if (outLeft < chunkBytes) yield out.subarray(0, chunkBytes - outLeft);
        if (outLeft === 0) continue; // the output was full: more may come from the same input
        if (inLeft > 0 || flush === constants.Z_FINISH) return; // the gzip stream ended (later bytes ignored)
        break;
      }
    }
  } finally {
    gunzip.close();
    await fh?.close();
  }
}
