import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { inflatedChunks } from '../../../src/trace/readers/inflate.js';
import { tempDir } from '../../helpers/paths.js';

/** Every chunk copied out (a chunk is only valid until the next is asked for). */
async function readAll(path: string, gzip: boolean, chunkBytes: number): Promise<Buffer> {
  const chunks = inflatedChunks(path, gzip, chunkBytes);
  expect(chunks).toBeDefined();
  const parts: Buffer[] = [];
  for await (const chunk of chunks!) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

async function errorOf(path: string): Promise<Error> {
  return readAll(path, true, 4096).then(
    () => {
      throw new Error('expected the read to fail');
    },
    (e: unknown) => e as Error,
  );
}

describe('inflatedChunks', () => {
  // Text that compresses well, so one input chunk fills the output buffer many times over.
  const text = Buffer.from(
    Array.from({ length: 20_000 }, (_, i) => `{"ph":"X","ts":${i},"name":"op.${i % 37}"},`).join(''),
  );

  it('gives the gunzipped bytes whatever the chunk size, and plain files as they are', async () => {
    const t = tempDir();
    try {
      const gz = join(t.dir, 'a.json.gz');
      const plain = join(t.dir, 'a.json');
      writeFileSync(gz, Buffer.concat([gzipSync(text), gzipSync(text), Buffer.alloc(50)]));
      writeFileSync(plain, text);
      const both = Buffer.concat([text, text]); // two gzip members, then zero padding
      for (const size of [1000, 4096, 1 << 20]) {
        expect((await readAll(gz, true, size)).equals(both)).toBe(true);
        expect((await readAll(plain, false, size)).equals(text)).toBe(true);
      }
    } finally {
      t.cleanup();
    }
  });

  it('refuses a cut stream, a wrong CRC-32 or length, and corrupt data, with zlib’s errors', async () => {
    const t = tempDir();
    try {
      const whole = gzipSync(Buffer.concat([text, randomBytes(5000)]));
      const cases: [string, Buffer, RegExp][] = [
        ['cut', whole.subarray(0, whole.length >> 1), /unexpected end of file/],
        ['crc', flip(whole, whole.length - 6), /incorrect data check/],
        ['length', flip(whole, whole.length - 2), /incorrect length check/],
        ['header', flip(whole, 0), /incorrect header check/],
      ];
      for (const [name, bytes, message] of cases) {
        const path = join(t.dir, `${name}.gz`);
        writeFileSync(path, bytes);
        const err = await errorOf(path);
        expect(err.message).toMatch(message);
        expect((err as { code?: string }).code).toMatch(/^Z_(BUF|DATA)_ERROR$/);
      }
    } finally {
      t.cleanup();
    }
  });
});

function flip(bytes: Buffer, at: number): Buffer {
  const copy = Buffer.from(bytes);
  copy[at]! ^= 0x01;
  return copy;
}
