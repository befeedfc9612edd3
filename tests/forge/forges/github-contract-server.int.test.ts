// The contract server must catch what the GitHub contract does not allow, or the forge tests prove
// nothing. Each case sends a bad request directly and checks that it is answered as GitHub would and
// recorded as a violation.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GitHubContractServer } from '../../helpers/github-contract-server.js';
import { tempDir } from '../../helpers/paths.js';
import { initBareRemote, initRepo } from '../git-fixtures.js';

const TOKEN = 'ghp_contracttest0001';
let server: GitHubContractServer;
let tmp: ReturnType<typeof tempDir>;

beforeEach(async () => {
  tmp = tempDir('hc-gh-contract-');
  server = await GitHubContractServer.start();
  const work = initRepo(`${tmp.dir}/work`);
  server.addRepo('octo/kernels', initBareRemote(`${tmp.dir}/remote.git`, work));
  server.addToken(TOKEN, { login: 'octocat', kind: 'user' });
});

afterEach(async () => {
  await server.close();
  tmp.cleanup();
});

async function call(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `token ${TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json().catch(() => undefined) };
}

describe('GitHub contract server', () => {
  it('rejects an operation outside the contract with 404', async () => {
    const r = await call('GET', '/repos/octo/kernels/branches');
    expect(r.status).toBe(404);
    expect(r.json).toMatchObject({ message: 'Not Found' });
    expect(server.violations).toEqual([
      'GET /repos/octo/kernels/branches: no such operation in the GitHub contract',
    ]);
  });

  it('rejects undeclared and ill-typed parameters with 422', async () => {
    const r = await call('GET', '/repos/octo/kernels/pulls?heads=octo:x&per_page=lots');
    expect(r.status).toBe(422);
    expect(r.json).toMatchObject({ message: 'Validation Failed' });
    expect(server.violations.join('\n')).toMatch(/undeclared parameter "heads"/);
    expect(server.violations.join('\n')).toMatch(/parameter per_page=lots: .*must be integer/);
  });

  it('rejects bodies that break the schema, and undeclared body properties', async () => {
    await call('POST', '/repos/octo/kernels/pulls', { head: 'x', base: 'main', title: 5 });
    await call('POST', '/repos/octo/kernels/pulls', { head: 'x', base: 'main', title: 't', drafts: true });
    await call('POST', '/repos/octo/kernels/issues/1/comments', {});
    const text = server.violations.join('\n');
    expect(text).toMatch(/pulls\/create.*\/title must be string/);
    expect(text).toMatch(/undeclared body property "drafts"/);
    expect(text).toMatch(/issues\/create-comment.*must have required property 'body'/);
  });

  it('answers unknown GraphQL documents with an error and records them', async () => {
    const r = await call('POST', '/graphql', { query: 'query { viewer { login email } }' });
    expect(r.json).toMatchObject({ errors: [{ message: expect.stringContaining('unsupported') }] });
    expect(server.violations[0]).toMatch(/graphql: unsupported document/);
  });

  it('answers a valid request without recording anything', async () => {
    const r = await call('GET', '/repos/octo/kernels/pulls?state=open&per_page=100');
    expect(r).toEqual({ status: 200, json: [] });
    expect(server.violations).toEqual([]);
  });

  it('fails any fetch that leaves loopback while it runs', async () => {
    await expect(fetch('https://api.github.com/user')).rejects.toThrow(/network access is disabled/);
    expect(server.violations).toEqual(['network access outside loopback: https://api.github.com/user']);
  });
});
