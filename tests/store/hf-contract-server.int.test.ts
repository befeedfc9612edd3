// The Hub contract server must catch request shapes the store relies on being right, or the store
// tests prove nothing. Each case sends a bad request directly and checks it is refused and recorded.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HfContractServer } from '../helpers/hf-contract-server.js';

const TOKEN = 'hf_contracttest0001';
const REPO = 'org/ev';
let server: HfContractServer;

beforeEach(async () => {
  server = await HfContractServer.start();
  server.addToken(TOKEN, { name: 'alice', canWrite: ['org'] });
  server.addRepo(REPO);
});

afterEach(() => server.close());

function post(path: string, body: string, contentType = 'application/json') {
  return fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': contentType },
    body,
  });
}

describe('Hub contract server', () => {
  it('refuses endpoints outside the contract', async () => {
    const res = await fetch(`${server.url}/api/models/org/ev`);
    expect(res.status).toBe(404);
    expect(server.violations).toEqual(['GET /api/models/org/ev: not an endpoint of this Hub contract']);
  });

  it('checks preupload and create-repo bodies', async () => {
    expect(
      (await post(`/api/datasets/${REPO}/preupload/main`, JSON.stringify({ files: [{ path: 'a' }] }))).status,
    ).toBe(400);
    expect((await post('/api/repos/create', JSON.stringify({ name: 'x', type: 'model' }))).status).toBe(400);
    const text = server.violations.join('\n');
    expect(text).toMatch(/preupload .*must have required property 'size'/);
    expect(text).toMatch(/repos\/create: \/type must be equal to one of the allowed values/);
  });

  it('checks the NDJSON commit: header first, binary content through LFS, LFS objects uploaded', async () => {
    const ndjson = (...lines: unknown[]) => lines.map((l) => JSON.stringify(l)).join('\n');
    const header = { key: 'header', value: { summary: 'x' } };
    const commit = (body: string) => post(`/api/datasets/${REPO}/commit/main`, body, 'application/x-ndjson');
    expect(
      (await commit(ndjson({ key: 'file', value: { path: 'a', content: '', encoding: 'base64' } }))).status,
    ).toBe(400);
    const binary = Buffer.from([0, 1, 2]).toString('base64');
    expect(
      (
        await commit(
          ndjson(header, { key: 'file', value: { path: 'b', content: binary, encoding: 'base64' } }),
        )
      ).status,
    ).toBe(400);
    const lfs = { key: 'lfsFile', value: { path: 'c', algo: 'sha256', oid: 'a'.repeat(64), size: 3 } };
    expect((await commit(ndjson(header, lfs))).status).toBe(422);
    expect(server.violations).toHaveLength(3);
    expect(server.violations[0]).toMatch(/first line must be the header/);
    expect(server.violations[1]).toMatch(/must go through LFS/);
    expect(server.violations[2]).toMatch(/was not uploaded/);
    expect(server.repo(REPO)!.commits).toEqual([]);
  });

  it('answers an anonymous read of a private or missing repository 401, a token that cannot see it 404', async () => {
    server.addToken('hf_outsider0001', { name: 'eve', canWrite: ['eve'] });
    for (const path of [`/api/datasets/${REPO}/tree/main`, '/api/datasets/org/missing/tree/main']) {
      const anonymous = await fetch(`${server.url}${path}`);
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('x-error-code')).toBe('RepoNotFound');
      const outsider = await fetch(`${server.url}${path}`, {
        headers: { authorization: 'Bearer hf_outsider0001' },
      });
      expect(outsider.status).toBe(404);
      expect(outsider.headers.get('x-error-code')).toBe('RepoNotFound');
    }
    expect(server.violations).toEqual([]);
  });

  it('serves files, not folders: resolve/main/<folder> is a 404', async () => {
    const ndjson = [
      { key: 'header', value: { summary: 'x' } },
      { key: 'file', value: { path: 'trace/host.trace.json', content: 'e30=', encoding: 'base64' } },
    ]
      .map((l) => JSON.stringify(l))
      .join('\n');
    expect((await post(`/api/datasets/${REPO}/commit/main`, ndjson, 'application/x-ndjson')).status).toBe(
      200,
    );
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect(
      (await fetch(`${server.url}/datasets/${REPO}/resolve/main/trace/host.trace.json`, { headers: auth }))
        .status,
    ).toBe(200);
    expect((await fetch(`${server.url}/datasets/${REPO}/resolve/main/trace`, { headers: auth })).status).toBe(
      404,
    );
  });

  it('fails any fetch that leaves loopback while it runs', async () => {
    await expect(fetch('https://huggingface.co/api/whoami-v2')).rejects.toThrow(/network access is disabled/);
    expect(server.violations).toEqual([
      'network access outside loopback: https://huggingface.co/api/whoami-v2',
    ]);
  });
});
