// The JSON reader's fallback for a Node whose zlib lacks the handle the synchronous inflate drives
// (src/trace/readers/inflate.ts returns undefined there): the gzip stream reads the same events, and a
// cut or corrupt file gives the same one-line error as the synchronous path.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { tslToJson, xspaceToTsl } from '../../../bench/traces/tsl-json.js';
import { ChromeJsonSource } from '../../../src/trace/readers/chrome-json.js';
import { collectEvents } from '../../../src/trace/readers/model.js';
import { REAL_TRACES, tempDir } from '../../helpers/paths.js';

const synchronous = vi.hoisted(() => ({ available: true }));
vi.mock('../../../src/trace/readers/inflate.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../../src/trace/readers/inflate.js')>();
  return {
    ...original,
    inflatedChunks: (...args: Parameters<typeof original.inflatedChunks>) =>
      synchronous.available ? original.inflatedChunks(...args) : undefined,
  };
});

const MI300X = join(REAL_TRACES, 'TraceLens/tests/traces/mi300/jax08_gemm/tw003.xplane.pb');

/** Read `path` with or without the synchronous inflate: its events and stats, or the error it gave. */
async function readWith(sync: boolean, path: string): Promise<unknown> {
  synchronous.available = sync;
  try {
    return await collectEvents(new ChromeJsonSource(path));
  } catch (e) {
    return e instanceof Error ? `${e.constructor.name}: ${e.message}` : e;
  } finally {
    synchronous.available = true;
  }
}

describe('the gzip stream fallback of the JSON reader', () => {
  const t = tempDir('hc-inflate-fallback-');
  afterAll(t.cleanup);

  it('reads the same events, and refuses a cut or corrupt file with the same error', async () => {
    const whole = gzipSync(tslToJson(await xspaceToTsl(MI300X)));
    const good = join(t.dir, 'good.trace.json.gz');
    writeFileSync(good, whole);
    const cut = join(t.dir, 'cut.trace.json.gz');
    writeFileSync(cut, whole.subarray(0, Math.floor(whole.length / 2)));
    const corrupt = join(t.dir, 'corrupt.trace.json.gz');
    const bad = Buffer.from(whole);
    bad.writeUInt32LE((bad.readUInt32LE(bad.length - 8) ^ 1) >>> 0, bad.length - 8); // the CRC-32
    writeFileSync(corrupt, bad);

    const events = await readWith(true, good);
    expect((events as { events: unknown[] }).events.length).toBeGreaterThan(100);
    expect(await readWith(false, good)).toEqual(events);
    for (const path of [cut, corrupt]) {
      const error = await readWith(true, path);
      expect(error).toMatch(/^InputError: .*(truncated gzip stream|corrupt gzip data|incorrect data check)/);
      expect(await readWith(false, path)).toEqual(error);
    }
  });
});
