// The hf store against the Hub contract server (tests/helpers/hf-contract-server.ts), through the
// real @huggingface/hub library.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreApiError } from '../../../src/store/errors.js';
import { perfettoLinkFor } from '../../../src/store/perfetto.js';
import { HfStore, type HfStoreOptions } from '../../../src/store/stores/hf.js';
import { HillclimbError } from '../../../src/util/errors.js';
import { memoryLogger } from '../../../src/util/log.js';
import { HfContractServer } from '../../helpers/hf-contract-server.js';
import { tempDir } from '../../helpers/paths.js';

const TOKEN = 'hf_writetoken0123456789';
const REPO = 'my-org/hillclimb-evidence';

let server: HfContractServer;
let tmp: ReturnType<typeof tempDir>;
let logger: ReturnType<typeof memoryLogger>;
let src: string;

function storeWith(opts: Partial<HfStoreOptions> = {}): HfStore {
  return new HfStore({ repo: REPO, endpoint: server.url, token: TOKEN, logger, ...opts });
}

beforeEach(async () => {
  server = await HfContractServer.start();
  server.addToken(TOKEN, { name: 'alice', canWrite: ['alice', 'my-org'] });
  tmp = tempDir('hc-hf-store-');
  logger = memoryLogger();
  src = join(tmp.dir, 'bundle');
  mkdirSync(join(src, 'trace', 'plugins', 'profile'), { recursive: true });
  writeFileSync(join(src, 'metrics.json'), '{"mfu": 0.41}\n');
  writeFileSync(join(src, 'summary.md'), '# iteration 3\n');
  // Binary (gzip magic, NUL bytes): the Hub sends these through LFS.
  writeFileSync(
    join(src, 'trace', 'plugins', 'profile', 'host.trace.json.gz'),
    Buffer.concat([Buffer.from([0x1f, 0x8b, 0]), randomBytes(3000)]),
  );
});

afterEach(async () => {
  await server.close();
  tmp.cleanup();
  expect(server.violations).toEqual([]);
});

describe('hf store', () => {
  it('creates the dataset repository on first write, private by default', async () => {
    const store = storeWith();
    await store.put('runs/r1/metrics.json', join(src, 'metrics.json'));
    expect(server.repo(REPO)?.private).toBe(true);
    expect(store.publiclyReadable).toBe(false);
    expect(logger.lines).toContain(`created private dataset repository ${REPO}`);
    // Known to exist now: the next write does not ask again.
    await store.put('runs/r1/summary.md', join(src, 'summary.md'));
    expect(server.requests.filter((r) => r.path === '/api/repos/create')).toHaveLength(1);
    expect(server.requests.filter((r) => r.path === `/api/datasets/${REPO}`)).toHaveLength(1);
  });

  it('creates a public repository when configured, and leaves an existing one alone', async () => {
    await storeWith({ private: false }).put('a.json', join(src, 'metrics.json'));
    expect(server.repo(REPO)?.private).toBe(false);
    server.addRepo('my-org/existing', { private: true });
    await storeWith({ repo: 'my-org/existing', private: false }).put('a.json', join(src, 'metrics.json'));
    expect(server.repo('my-org/existing')?.private).toBe(true);
    expect(server.requests.filter((r) => r.path === '/api/repos/create')).toHaveLength(1);
  });

  it('puts a file and returns its resolve URL and size', async () => {
    const obj = await storeWith().put('runs/r1/i003/metrics.json', join(src, 'metrics.json'));
    expect(obj).toEqual({
      key: 'runs/r1/i003/metrics.json',
      url: `${server.url}/datasets/${REPO}/resolve/main/runs/r1/i003/metrics.json`,
      bytes: 14,
    });
    expect(server.fileText(REPO, 'runs/r1/i003/metrics.json')).toBe('{"mfu": 0.41}\n');
  });

  it('stores a whole folder in one commit, binary files through LFS', async () => {
    const store = storeWith();
    const stored = await store.putDir('runs/r1/i003', src);
    expect(stored.map((o) => o.key)).toEqual([
      'runs/r1/i003/metrics.json',
      'runs/r1/i003/summary.md',
      'runs/r1/i003/trace/plugins/profile/host.trace.json.gz',
    ]);
    const repo = server.repo(REPO)!;
    expect(repo.commits).toHaveLength(1);
    expect(repo.commits[0]!.paths).toHaveLength(3);
    expect(repo.files.get('runs/r1/i003/trace/plugins/profile/host.trace.json.gz')?.lfs).toBe(true);
    expect(repo.files.get('runs/r1/i003/metrics.json')?.lfs).toBe(false);
    expect(server.requests.filter((r) => r.path.startsWith('/__lfs/'))).toHaveLength(1);
  });

  it('lists keys under a prefix across pages, sorted; nothing for a missing folder', async () => {
    server.treePageSize = 2;
    const store = storeWith();
    await store.putDir('runs/r1/i003', src);
    await store.put('runs/r1/i010/metrics.json', join(src, 'metrics.json'));
    expect(await store.list('runs/r1/i00')).toEqual([
      'runs/r1/i003/metrics.json',
      'runs/r1/i003/summary.md',
      'runs/r1/i003/trace/plugins/profile/host.trace.json.gz',
    ]);
    expect(await store.list('')).toHaveLength(4);
    expect(await store.list('runs/r2/')).toEqual([]);
    const treeCalls = server.requests.filter((r) => r.path.includes('/tree/'));
    expect(treeCalls.length).toBeGreaterThan(3);
  });

  it('gets text and binary objects byte for byte; a missing key is an error naming it', async () => {
    const store = storeWith();
    await store.putDir('b', src);
    const big = join(tmp.dir, 'big.bin');
    writeFileSync(big, randomBytes(1_500_000));
    await store.put('b/big.bin', big);
    for (const [key, file] of [
      ['b/metrics.json', join(src, 'metrics.json')],
      [
        'b/trace/plugins/profile/host.trace.json.gz',
        join(src, 'trace', 'plugins', 'profile', 'host.trace.json.gz'),
      ],
      ['b/big.bin', big],
    ] as const) {
      const dest = join(tmp.dir, 'out', key);
      await store.get(key, dest);
      expect(readFileSync(dest).equals(readFileSync(file)), key).toBe(true);
    }
    const err = await store.get('b/none.json', join(tmp.dir, 'none')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HillclimbError);
    expect((err as Error).message).toContain('b/none.json');
  });

  it('reads a public repository without a token', async () => {
    await storeWith({ private: false }).put('p/metrics.json', join(src, 'metrics.json'));
    const anonymous = storeWith({ token: undefined, private: false });
    expect(await anonymous.list('p/')).toEqual(['p/metrics.json']);
    await anonymous.get('p/metrics.json', join(tmp.dir, 'anon.json'));
    expect(readFileSync(join(tmp.dir, 'anon.json'), 'utf8')).toBe('{"mfu": 0.41}\n');
    await expect(anonymous.put('p/x', join(src, 'metrics.json'))).rejects.toThrow(/\$HF_TOKEN is not set/);
    expect(perfettoLinkFor(anonymous, 'p/t.json.gz')).toMatchObject({ ok: false, reason: /HTTPS/ });
  });

  it('an anonymous read of a private repository is an error that says no token is set, never an empty list', async () => {
    await storeWith().put('history/gdn.jsonl', join(src, 'metrics.json')); // private by default
    const anonymous = storeWith({ token: undefined, tokenEnv: 'HC_HF_TOKEN' });
    for (const read of [
      () => anonymous.list('history/'),
      () => anonymous.get('history/gdn.jsonl', join(tmp.dir, 'x.json')),
    ]) {
      const err = await read().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreApiError);
      expect(err).toMatchObject({ status: 401 });
      const e = err as StoreApiError;
      expect(e.message).toContain(`datasets/${REPO} refused a read without a token`);
      expect(e.message).toContain('$HC_HF_TOKEN is not set');
      expect(`${e.message} ${e.hint}`).not.toMatch(/token in \$HC_HF_TOKEN|was rejected/);
      expect(e.hint).toContain('give this job $HC_HF_TOKEN (read access is enough)');
    }
    // A missing repository looks the same to an anonymous reader.
    const missing = storeWith({ repo: 'my-org/not-there', token: undefined });
    await expect(missing.list('')).rejects.toMatchObject({ status: 401 });
    // With a token that can see it, a missing folder is simply empty.
    expect(await storeWith().list('nothing-here/')).toEqual([]);
  });

  it('encodes keys in URLs', () => {
    expect(storeWith().url('runs/r 1/a#b.json')).toBe(
      `${server.url}/datasets/${REPO}/resolve/main/runs/r%201/a%23b.json`,
    );
  });

  it('a rejected token is a clear error naming the variable, and the token is never logged', async () => {
    const store = storeWith({ token: 'hf_revokedtoken000', tokenEnv: 'HC_HF_TOKEN' });
    const err = await store.put('a.json', join(src, 'metrics.json')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreApiError);
    expect(err).toMatchObject({ status: 401 });
    expect((err as StoreApiError).message).toContain('$HC_HF_TOKEN');
    expect((err as StoreApiError).hint).toMatch(/export it as HC_HF_TOKEN/);
    expect(`${(err as Error).message} ${logger.lines.join(' ')}`).not.toContain('hf_revokedtoken000');
  });

  it('a token without write access to the namespace gets a hint', async () => {
    server.addToken('hf_readonly000000', { name: 'bob', canWrite: ['bob'] });
    server.addRepo(REPO, { private: false });
    const err = await storeWith({ token: 'hf_readonly000000' })
      .put('a.json', join(src, 'metrics.json'))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'StoreApiError', status: 403 });
    expect((err as StoreApiError).hint).toContain('my-org');
  });

  it('something that is not a Hugging Face token is named as such', async () => {
    const err = await storeWith({ token: 'ghp_wrongkind' })
      .put('a.json', join(src, 'metrics.json'))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreApiError);
    expect((err as StoreApiError).message).toContain('$HF_TOKEN is not a Hugging Face token');
  });
});
