import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalStore } from '../../../src/store/stores/local.js';
import { HillclimbError } from '../../../src/util/errors.js';
import { tempDir } from '../../helpers/paths.js';

let tmp: ReturnType<typeof tempDir>;
let store: LocalStore;
let src: string;

beforeEach(() => {
  tmp = tempDir('hc-local-store-');
  store = new LocalStore({ dir: join(tmp.dir, 'state', 'store') });
  src = join(tmp.dir, 'src');
  mkdirSync(join(src, 'trace', 'plugins'), { recursive: true });
  writeFileSync(join(src, 'metrics.json'), '{"mfu": 0.41}\n');
  writeFileSync(join(src, 'trace', 'plugins', 'host.xplane.pb'), Buffer.from([0, 1, 2, 255]));
});

afterEach(() => tmp.cleanup());

describe('local store', () => {
  it('puts a file under its key and gets it back; the URL is file://', async () => {
    const obj = await store.put('runs/r1/i001/metrics.json', join(src, 'metrics.json'));
    expect(obj).toMatchObject({ key: 'runs/r1/i001/metrics.json', bytes: 14 });
    expect(fileURLToPath(obj.url)).toBe(join(store.dir, 'runs/r1/i001/metrics.json'));
    const dest = join(tmp.dir, 'out', 'm.json');
    await store.get('runs/r1/i001/metrics.json', dest);
    expect(readFileSync(dest, 'utf8')).toBe('{"mfu": 0.41}\n');
    expect(store.publiclyReadable).toBe(false);
  });

  it('overwrites atomically, leaving no temp files', async () => {
    await store.put('a/metrics.json', join(src, 'metrics.json'));
    writeFileSync(join(src, 'metrics.json'), '{"mfu": 0.5}\n');
    await store.put('a/metrics.json', join(src, 'metrics.json'));
    expect(readFileSync(join(store.dir, 'a', 'metrics.json'), 'utf8')).toBe('{"mfu": 0.5}\n');
    expect(readdirSync(join(store.dir, 'a'))).toEqual(['metrics.json']);
  });

  it('stores a folder under a prefix and lists keys by prefix, sorted', async () => {
    const stored = await store.putDir('runs/r1/i003', src);
    expect(stored.map((o) => o.key)).toEqual([
      'runs/r1/i003/metrics.json',
      'runs/r1/i003/trace/plugins/host.xplane.pb',
    ]);
    await store.put('runs/r1/i010/metrics.json', join(src, 'metrics.json'));
    expect(await store.list('runs/r1/i00')).toEqual([
      'runs/r1/i003/metrics.json',
      'runs/r1/i003/trace/plugins/host.xplane.pb',
    ]);
    expect(await store.list('')).toHaveLength(3);
    expect(await store.list('nothing/')).toEqual([]);
    await store.get('runs/r1/i003/trace/plugins/host.xplane.pb', join(tmp.dir, 'x.pb'));
    expect([...readFileSync(join(tmp.dir, 'x.pb'))]).toEqual([0, 1, 2, 255]);
  });

  it('lists nothing before the first write', async () => {
    expect(await store.list('')).toEqual([]);
  });

  it('names the key that is missing, and refuses keys that escape the store', async () => {
    const err = await store.get('runs/none.json', join(tmp.dir, 'n')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HillclimbError);
    expect((err as Error).message).toContain('runs/none.json');
    await expect(store.put('../escape', join(src, 'metrics.json'))).rejects.toThrow(/invalid store key/);
    await expect(store.put('x', join(src, 'missing'))).rejects.toThrow(/not a file/);
    await expect(store.putDir('p', join(src, 'metrics.json'))).rejects.toThrow(/not a folder/);
    expect(() => store.url('/abs')).toThrow(/invalid store key/);
  });
});
