// The `gh` stand-in the workflow tests put on act's PATH (tests/helpers/act-gh.mjs), against the GitHub
// contract server: the calls pr-evidence's authorize job and hillclimb.yml's continue job make, answered
// as GitHub answers them, and the PR refs GitHub keeps that authorize and prepare fetch.
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitHubContractServer } from '../helpers/github-contract-server.js';
import { REPO_ROOT, tempDir } from '../helpers/paths.js';
import { gitIn } from '../loop/toy-repo.js';

const execFileP = promisify(execFile);
const REPO = 'octo/toy';
const TOKEN = 'ghs_runnertokenforghshim000000001';

describe('the gh stand-in against the contract server', () => {
  const t = tempDir('hc-act-gh-');
  const bare = join(t.dir, 'remote.git');
  let server: GitHubContractServer;
  let head = '';
  let base = '';
  const log = join(t.dir, 'gh-calls.jsonl');

  const gh = (...args: string[]) =>
    execFileP(process.execPath, [join(REPO_ROOT, 'tests', 'helpers', 'act-gh.mjs'), ...args], {
      env: { PATH: process.env.PATH, GITHUB_API_URL: server.url, GH_TOKEN: TOKEN, HILLCLIMB_ACT_GH_LOG: log },
    }).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({
        code: e.code,
        stdout: e.stdout,
        stderr: e.stderr,
      }),
    );

  beforeAll(async () => {
    server = await GitHubContractServer.start();
    const seed = join(t.dir, 'seed');
    mkdirSync(join(seed, '.github', 'workflows'), { recursive: true });
    writeFileSync(
      join(seed, '.github', 'workflows', 'hillclimb.yml'),
      'on:\n  workflow_dispatch:\n    inputs:\n      iterations: {type: string}\n      resume: {type: string}\njobs: {}\n',
    );
    writeFileSync(join(seed, 'kernel.py'), 'DELAY = 2\n');
    execFileSync('git', ['init', '-q', '-b', 'main', seed]);
    gitIn(seed, 'add', '-A');
    gitIn(seed, 'commit', '-q', '-m', 'base');
    gitIn(seed, 'checkout', '-q', '-b', 'faster');
    writeFileSync(join(seed, 'kernel.py'), 'DELAY = 1\n');
    gitIn(seed, 'commit', '-q', '-am', 'faster');
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
    gitIn(seed, 'push', '-q', bare, 'main', 'faster');
    head = gitIn(seed, 'rev-parse', 'faster').trim();
    base = gitIn(seed, 'rev-parse', 'main').trim();
    server.addRepo(REPO, bare);
    server.addToken(TOKEN, {
      login: 'github-actions[bot]',
      kind: 'installation',
      permissions: { pull_requests: 'write', issues: 'write', contents: 'read', actions: 'write' },
    });
    server.setCollaborator(REPO, 'octocat', 'maintain');
    const res = await fetch(`${server.url}/repos/${REPO}/pulls`, {
      method: 'POST',
      headers: { authorization: `token ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'faster', head: 'faster', base: 'main' }),
    });
    expect(res.status).toBe(201);
  });

  afterAll(async () => {
    await server?.close();
    t.cleanup();
  });

  it('gh api reads a PR, with --jq printing strings raw', async () => {
    const r = await gh('api', `repos/${REPO}/pulls/1`, '--jq', '.head.sha');
    expect(r).toMatchObject({ code: 0, stdout: `${head}\n` });
    const pr = JSON.parse((await gh('api', `repos/${REPO}/pulls/1`)).stdout);
    expect(pr).toMatchObject({ number: 1, head: { sha: head, ref: 'faster' }, base: { sha: base } });
  });

  it("reads a collaborator's permission as GitHub does (maintain reads as write), a stranger's as 404", async () => {
    expect(
      (await gh('api', `repos/${REPO}/collaborators/octocat/permission`, '--jq', '.permission')).stdout,
    ).toBe('write\n');
    const stranger = await gh('api', `repos/${REPO}/collaborators/someone/permission`, '--jq', '.permission');
    expect(stranger.code).toBe(1);
    expect(stranger.stderr).toContain('gh: Not Found (HTTP 404)');
  });

  it('keeps refs/pull/N/head and the test merge commit refs/pull/N/merge (first parent the base)', () => {
    const rev = (r: string) =>
      execFileSync('git', ['--git-dir', bare, 'rev-parse', r], { encoding: 'utf8' }).trim();
    expect(rev('refs/pull/1/head')).toBe(head);
    expect(rev('refs/pull/1/merge^1')).toBe(base);
    expect(rev('refs/pull/1/merge^2')).toBe(head);
  });

  it('gh workflow run dispatches through the API; GitHub refuses an input the workflow does not declare', async () => {
    const ok = await gh(
      'workflow',
      'run',
      'hillclimb.yml',
      '--repo',
      REPO,
      '--ref',
      'main',
      '-f',
      'iterations=2',
    );
    expect(ok.code, ok.stderr).toBe(0);
    expect(server.dispatchesOf(REPO)).toEqual([
      { workflow: 'hillclimb.yml', ref: 'main', inputs: { iterations: '2' }, by: 'github-actions[bot]' },
    ]);
    const bad = await gh(
      'workflow',
      'run',
      'hillclimb.yml',
      '--repo',
      REPO,
      '--ref',
      'main',
      '-f',
      'bogus=1',
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('gh: Unexpected inputs provided: ["bogus"] (HTTP 422)');
    const noRef = await gh('workflow', 'run', 'hillclimb.yml', '--repo', REPO, '--ref', 'nope');
    expect(noRef.stderr).toContain('gh: No ref found for: nope (HTTP 422)');
    expect(server.dispatchesOf(REPO)).toHaveLength(1);
    expect(server.violations).toEqual([]);
  });
});
