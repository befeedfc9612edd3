// The github forge against the contract server (tests/helpers/github-contract-server.ts): real
// Octokit with its retry and throttling plugins on a fast clock, real git pushing to a bare repo.
import { chmodSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ForeignCommitsError, ForgeApiError } from '../../../src/forge/errors.js';
import type { CommentStamp, PullRequestSpec } from '../../../src/forge/forge.js';
import { defaultGitUrl, GitHubForge, type GitHubForgeOptions } from '../../../src/forge/forges/github.js';
import { RATE_LIMIT_WAIT_BUDGET_SECONDS } from '../../../src/forge/forges/github-client.js';
import { BODY_CAP_CHARS } from '../../../src/forge/limits.js';
import { decodeStamp, stickyMarker } from '../../../src/forge/sticky.js';
import { httpAuthEnv } from '../../../src/git/index.js';
import { memoryLogger } from '../../../src/util/log.js';
import {
  type ContractUser,
  GitHubContractServer,
  installGitHubPushRules,
} from '../../helpers/github-contract-server.js';
import { REPO_ROOT, tempDir } from '../../helpers/paths.js';
import {
  bareBranchSha,
  detachedCommit,
  git,
  initBareRemote,
  initRepo,
  PERSON,
  personCommitOn,
} from '../git-fixtures.js';

const REPO = 'octo/kernels';
const TOKEN = 'ghs_installationtoken0001';
const BOT = 'hillclimb-app[bot]';
const BRANCH = 'hillclimb/gdn/r1/i001';
const FAST = { secondMs: 1, writeSpacingMs: 0 };
const STAMP: CommentStamp = {
  runStartedAt: '2026-11-21T10:00:00Z',
  runId: '1001',
  iteration: 1,
  commit: 'abc',
};
const WRITE_ALL: ContractUser['permissions'] = { pull_requests: 'write', issues: 'write', contents: 'write' };

let tmp: ReturnType<typeof tempDir>;
let work: string;
let bare: string;
let server: GitHubContractServer;
let logger: ReturnType<typeof memoryLogger>;

function forgeWith(opts: Partial<GitHubForgeOptions> = {}): GitHubForge {
  return new GitHubForge({
    repository: REPO,
    token: TOKEN,
    apiUrl: server.url,
    gitUrl: bare,
    logger,
    timing: FAST,
    ...opts,
  });
}

function spec(over: Partial<PullRequestSpec> = {}): PullRequestSpec {
  return {
    branch: BRANCH,
    base: 'main',
    title: 'gdn: fuse gate',
    body: 'evidence',
    draft: true,
    labels: [],
    ...over,
  };
}

/** A branch with one change, pushed to the bare remote by the forge. */
async function pushedBranch(forge: GitHubForge, branch = BRANCH): Promise<string> {
  const sha = detachedCommit(work, `${branch.replaceAll('/', '_')}.py`, `${branch}\n`);
  await forge.pushBranch(work, branch, sha);
  return sha;
}

async function openPr(forge: GitHubForge): Promise<number> {
  await pushedBranch(forge);
  return (await forge.upsertPullRequest(spec())).pr.number;
}

beforeEach(async () => {
  tmp = tempDir('hc-github-forge-');
  work = initRepo(join(tmp.dir, 'work'));
  bare = initBareRemote(join(tmp.dir, 'remote.git'), work);
  server = await GitHubContractServer.start();
  server.addRepo(REPO, bare);
  server.addToken(TOKEN, { login: BOT, kind: 'installation', permissions: WRITE_ALL });
  logger = memoryLogger();
});

afterEach(async () => {
  await server.close();
  tmp.cleanup();
  expect(server.violations).toEqual([]);
});

describe('pushBranch', () => {
  it('force-pushes the commit to the remote branch', async () => {
    const forge = forgeWith();
    const first = await pushedBranch(forge);
    expect(bareBranchSha(bare, BRANCH)).toBe(first);
    const other = detachedCommit(work, 'other.py', 'rewritten history\n');
    await forge.pushBranch(work, BRANCH, other);
    expect(bareBranchSha(bare, BRANCH)).toBe(other);
  });

  it('passes the token to git through the environment, never the command line, and redacts it', async () => {
    // A git wrapper records what it was given, then runs the real git against the local bare repo.
    const record = join(tmp.dir, 'git-call');
    const wrapper = join(tmp.dir, 'git-wrapper.sh');
    const url = 'https://github.example.test/octo/kernels.git';
    writeFileSync(
      wrapper,
      [
        '#!/bin/sh',
        `printf '%s\\n' "$@" > '${record}.argv'`,
        `env | grep '^GIT_CONFIG_' > '${record}.env'`,
        `for a do shift; if [ "$a" = '${url}' ]; then set -- "$@" '${bare}'; else set -- "$@" "$a"; fi; done`,
        'exec git "$@"',
      ].join('\n'),
    );
    chmodSync(wrapper, 0o755);
    const forge = forgeWith({ gitUrl: url, git: { binary: wrapper } });
    const sha = await pushedBranch(forge);
    expect(bareBranchSha(bare, BRANCH)).toBe(sha);

    const argv = readFileSync(`${record}.argv`, 'utf8');
    const env = readFileSync(`${record}.env`, 'utf8');
    const basic = Buffer.from(`x-access-token:${TOKEN}`).toString('base64');
    expect(argv).toContain(url);
    expect(argv).not.toContain(TOKEN);
    expect(argv).not.toContain(basic);
    expect(env).toContain('GIT_CONFIG_KEY_1=http.https://github.example.test/.extraheader');
    expect(env).toContain(`GIT_CONFIG_VALUE_1=AUTHORIZATION: basic ${basic}`);
    expect(logger.lines.join('\n')).not.toContain(TOKEN);
  });

  it('derives the push URL from the API URL (github.com and GitHub Enterprise)', () => {
    expect(defaultGitUrl('https://api.github.com', REPO)).toBe('https://github.com/octo/kernels.git');
    expect(defaultGitUrl('https://ghe.example.com/api/v3', REPO)).toBe(
      'https://ghe.example.com/octo/kernels.git',
    );
  });

  it('appends its git config after entries already in the environment', () => {
    const { env } = httpAuthEnv('https://github.com/o/r.git', TOKEN, { GIT_CONFIG_COUNT: '2' });
    expect(env.GIT_CONFIG_COUNT).toBe('4');
    expect(env.GIT_CONFIG_KEY_2).toBe('http.https://github.com/.extraheader');
    expect(env.GIT_CONFIG_VALUE_2).toBe('');
    expect(env.GIT_CONFIG_VALUE_3).toMatch(/^AUTHORIZATION: basic /);
    expect(httpAuthEnv('/srv/remote.git', TOKEN).env).toEqual({});
  });

  it('wraps a failed push into ForgeApiError without leaking the token', async () => {
    const forge = forgeWith({ gitUrl: join(tmp.dir, 'missing.git') });
    const sha = detachedCommit(work, 'k.py', 'x\n');
    const err = await forge.pushBranch(work, BRANCH, sha).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ForgeApiError);
    expect((err as ForgeApiError).operation).toBe('git push');
    expect((err as ForgeApiError).hint).toMatch(/could not push/);
    expect(String((err as Error).message)).not.toContain(TOKEN);
  });
});

describe('pull requests', () => {
  it('opens a draft PR, then finds and updates it instead of duplicating', async () => {
    const forge = forgeWith();
    const sha = await pushedBranch(forge);
    const created = await forge.upsertPullRequest(spec());
    expect(created.operation).toBe('created');
    expect(created.pr).toMatchObject({ number: 1, branch: BRANCH, base: 'main', draft: true, state: 'open' });
    expect(created.pr.headSha).toBe(sha);
    expect(created.pr.url).toBe(`https://github.com/${REPO}/pull/1`);

    // A second run of the same publish step (a fresh forge, as in a new job).
    const again = await forgeWith().upsertPullRequest(spec());
    expect(again.operation).toBe('unchanged');
    const updated = await forgeWith().upsertPullRequest(spec({ body: 'more evidence' }));
    expect(updated).toMatchObject({ operation: 'updated', pr: { number: 1, body: 'more evidence' } });
    expect(server.pullsOf(REPO)).toHaveLength(1);
    expect(server.countRequests('pulls/create')).toBe(1);
    expect((await forge.findPullRequest(BRANCH))?.number).toBe(1);
    expect(await forge.findPullRequest('hillclimb/none')).toBeUndefined();
  });

  it('keeps a PR that a reviewer marked ready as it is', async () => {
    const forge = forgeWith();
    await openPr(forge);
    server.markReady(REPO, 1);
    const r = await forge.upsertPullRequest(spec({ body: 'v2' }));
    expect(r.pr.draft).toBe(false);
    expect(server.pullsOf(REPO)[0]!.draft).toBe(false);
  });

  it('opens a ready PR (with a warning) where the repository has no draft PRs', async () => {
    server.addRepo('octo/nodrafts', bare, { draftsSupported: false });
    const forge = forgeWith({ repository: 'octo/nodrafts' });
    await pushedBranch(forge);
    const r = await forge.upsertPullRequest(spec({ draft: true }));
    expect(r).toMatchObject({ operation: 'created', pr: { draft: false } });
    expect(server.requests.filter((q) => q.operationId === 'pulls/create').map((q) => q.status)).toEqual([
      422, 201,
    ]);
    expect(logger.lines.some((l) => l.includes('does not support draft PRs'))).toBe(true);
  });

  it('recovers from 422 "A pull request already exists" when another run wins the race', async () => {
    const a = forgeWith();
    const b = forgeWith();
    await pushedBranch(a);
    // Both list (and see nothing) before either creates.
    server.holdUntil(2, 'GET', /\/pulls$/);
    const [ra, rb] = await Promise.all([
      a.upsertPullRequest(spec({ body: 'from a' })),
      b.upsertPullRequest(spec({ body: 'from b' })),
    ]);
    expect(ra.pr.number).toBe(rb.pr.number);
    expect([ra.operation, rb.operation].sort()).toEqual(['created', 'updated']);
    expect(server.pullsOf(REPO)).toHaveLength(1);
    expect(
      server.requests
        .filter((r) => r.operationId === 'pulls/create')
        .map((r) => r.status)
        .sort(),
    ).toEqual([201, 422]);
    expect(logger.lines.some((l) => l.includes('appeared meanwhile'))).toBe(true);
  });

  it('manages hillclimb: labels with verdict colours and leaves other labels alone', async () => {
    const forge = forgeWith();
    await pushedBranch(forge);
    await forge.upsertPullRequest(spec({ labels: ['hillclimb:improved', 'perf'] }));
    server.addLabelToIssue(REPO, 1, 'needs-review');
    const r = await forge.upsertPullRequest(spec({ labels: ['hillclimb:regressed'] }));
    expect(r.operation).toBe('updated');
    expect(r.pr.labels).toEqual(['hillclimb:regressed', 'needs-review', 'perf']);
    expect(server.pullsOf(REPO)[0]!.labels.sort()).toEqual(['hillclimb:regressed', 'needs-review', 'perf']);
    const colours = Object.fromEntries(server.labelsOf(REPO).map((l) => [l.name, l.color]));
    expect(colours['hillclimb:improved']).toBe('0e8a16');
    expect(colours['hillclimb:regressed']).toBe('d93f0b');
    // A label that exists already is fine: "already_exists" counts as success.
    await forgeWith().upsertPullRequest(spec({ labels: ['hillclimb:improved'] }));
    expect(server.pullsOf(REPO)[0]!.labels.sort()).toEqual(['hillclimb:improved', 'needs-review', 'perf']);
    const creates = server.requests
      .filter((q) => q.operationId === 'issues/create-label')
      .map((q) => q.status);
    expect(creates).toEqual([201, 201, 422]);
  });

  it("caps an oversized body below GitHub's limit and says so", async () => {
    const forge = forgeWith();
    await pushedBranch(forge);
    const body = '| a | b |\n'.repeat(10_000);
    const r = await forge.upsertPullRequest(spec({ body, title: 'x'.repeat(300) }));
    expect(r.truncated).toBe(true);
    const stored = server.pullsOf(REPO)[0]!;
    expect(stored.body!.length).toBeLessThanOrEqual(BODY_CAP_CHARS);
    expect(stored.body).toContain('Truncated by hillclimb');
    expect(stored.title.length).toBe(256);
    expect(logger.lines.some((l) => l.startsWith('warning:') && l.includes('truncated'))).toBe(true);
  });

  it('closes a PR, commenting first', async () => {
    const forge = forgeWith();
    const n = await openPr(forge);
    await forge.closePullRequest(n, 'superseded by #2');
    expect(server.pullsOf(REPO)[0]!.state).toBe('closed');
    expect(server.commentsOn(REPO, n).map((c) => c.body)).toEqual(['superseded by #2']);
    // Found again (closed), so a re-run updates it instead of opening a second one.
    expect(await forge.findPullRequest(BRANCH)).toMatchObject({ number: n, state: 'closed' });
  });
});

describe('sticky comment', () => {
  it('is created, then updated in place when other comments fill several pages', async () => {
    const forge = forgeWith();
    const n = await openPr(forge);
    for (let i = 0; i < 150; i++) server.seedComment(REPO, n, 'reviewer', `comment ${i}`);
    const first = await forge.upsertStickyComment(n, 'mfu', 'MFU +1.0%', STAMP);
    expect(first.operation).toBe('created');
    for (let i = 0; i < 60; i++) server.seedComment(REPO, n, 'reviewer', `later ${i}`);
    const second = await forge.upsertStickyComment(n, 'mfu', 'MFU +2.5%', { ...STAMP, iteration: 2 });
    expect(second).toMatchObject({ commentId: first.commentId, operation: 'updated' });

    const all = server.commentsOn(REPO, n);
    expect(all).toHaveLength(211);
    const sticky = all.filter((c) => c.body.includes(stickyMarker('mfu')));
    expect(sticky).toHaveLength(1);
    expect(sticky[0]!.body).toContain('MFU +2.5%');
    // The finder read every page (100 per page) on each pass.
    const pages = server.requests
      .filter((r) => r.operationId === 'issues/list-comments')
      .map((r) => `${r.query.per_page}:${r.query.page ?? '1'}`);
    expect(pages).toContain('100:3');
    expect(new Set(pages.map((p) => p.split(':')[0]))).toEqual(new Set(['100']));
  });

  it('two concurrent writers leave one comment, holding the newer stamp', async () => {
    const a = forgeWith();
    const b = forgeWith();
    const n = await openPr(a);
    // Both list (and find nothing) before either creates: the race the reference warns about.
    server.holdUntil(2, 'GET', /\/issues\/\d+\/comments$/);
    const [ra, rb] = await Promise.all([
      a.upsertStickyComment(n, 'mfu', 'from older', { ...STAMP, iteration: 1 }),
      b.upsertStickyComment(n, 'mfu', 'from newer', { ...STAMP, iteration: 2 }),
    ]);
    expect(server.countRequests('issues/create-comment')).toBe(2);
    const sticky = server.commentsOn(REPO, n).filter((c) => c.body.includes(stickyMarker('mfu')));
    expect(sticky).toHaveLength(1);
    expect(decodeStamp(sticky[0]!.body)?.iteration).toBe(2);
    expect(ra.commentId).toBe(sticky[0]!.id);
    expect(rb.commentId).toBe(sticky[0]!.id);
  });

  it('an older stamp never overwrites a newer one; the same stamp refreshes', async () => {
    const forge = forgeWith();
    const n = await openPr(forge);
    await forge.upsertStickyComment(n, 'mfu', 'iteration 5', { ...STAMP, iteration: 5 });
    const stale = await forgeWith().upsertStickyComment(n, 'mfu', 'iteration 3', { ...STAMP, iteration: 3 });
    expect(stale.operation).toBe('skipped-stale');
    expect(server.commentsOn(REPO, n)[0]!.body).toContain('iteration 5');
    expect(server.countRequests('issues/update-comment')).toBe(0);
    const same = await forge.upsertStickyComment(n, 'mfu', 'iteration 5', { ...STAMP, iteration: 5 });
    expect(same.operation).toBe('unchanged');
    const retried = await forge.upsertStickyComment(n, 'mfu', 'iteration 5 (re-rendered)', {
      ...STAMP,
      iteration: 5,
    });
    expect(retried.operation).toBe('updated');
  });

  it('only matches its own, visible comments', async () => {
    const forge = forgeWith();
    const n = await openPr(forge);
    const quoted = server.seedComment(REPO, n, 'reviewer', `> ${stickyMarker('mfu')}`);
    const first = await forge.upsertStickyComment(n, 'mfu', 'v1', STAMP);
    expect(first.commentId).not.toBe(quoted.id);
    server.minimize(first.commentId);
    const second = await forge.upsertStickyComment(n, 'mfu', 'v2', { ...STAMP, iteration: 2 });
    expect(second.operation).toBe('created');
    const bodies = server.commentsOn(REPO, n).map((c) => c.body);
    expect(bodies).toHaveLength(3);
    expect(bodies[0]).toBe(`> ${stickyMarker('mfu')}`);
    expect(bodies[1]).toContain('v1');
    expect(bodies[2]).toContain('v2');
  });

  it('removes duplicates left by an earlier race, keeping the oldest', async () => {
    const forge = forgeWith();
    const n = await openPr(forge);
    const oldest = await forge.upsertStickyComment(n, 'mfu', 'v1', STAMP);
    const dup = server.seedComment(REPO, n, BOT, server.commentsOn(REPO, n)[0]!.body);
    const r = await forge.upsertStickyComment(n, 'mfu', 'v2', { ...STAMP, iteration: 2 });
    expect(r).toMatchObject({ commentId: oldest.commentId, operation: 'updated' });
    expect(server.commentsOn(REPO, n).map((c) => c.id)).toEqual([oldest.commentId]);
    expect(dup.id).toBeGreaterThan(oldest.commentId);
  });

  it('caps an oversized comment and keeps marker and stamp', async () => {
    const forge = forgeWith();
    const n = await openPr(forge);
    const r = await forge.upsertStickyComment(n, 'mfu', 'x\n'.repeat(50_000), STAMP);
    expect(r.truncated).toBe(true);
    const body = server.commentsOn(REPO, n)[0]!.body;
    expect(body.length).toBeLessThanOrEqual(BODY_CAP_CHARS);
    expect(body).toContain(stickyMarker('mfu'));
    expect(decodeStamp(body)).toEqual(STAMP);
  });
});

describe('identity', () => {
  it('installation tokens: GET /user is refused, so the GraphQL viewer names the bot', async () => {
    const forge = forgeWith();
    const n = await openPr(forge);
    await forge.upsertStickyComment(n, 'mfu', 'x', STAMP);
    await forge.upsertStickyComment(n, 'mfu', 'y', { ...STAMP, iteration: 2 });
    expect(server.requests.filter((r) => r.path === '/user').map((r) => r.status)).toEqual([403]);
    expect(server.commentsOn(REPO, n)).toHaveLength(1);
  });

  it('user tokens: GET /user names the author', async () => {
    server.addToken('ghp_personaltoken0001', { login: 'octocat', kind: 'user' });
    const forge = forgeWith({ token: 'ghp_personaltoken0001' });
    const n = await openPr(forge);
    await forge.upsertStickyComment(n, 'mfu', 'x', STAMP);
    expect(server.commentsOn(REPO, n)[0]!.user.login).toBe('octocat');
    expect(server.requests.filter((r) => r.path === '/user').map((r) => r.status)).toEqual([200]);
    expect(server.requests.filter((r) => r.path === '/graphql')).toHaveLength(1);
  });

  it('a configured comment_author is used as is, with or without the [bot] suffix', async () => {
    const forge = forgeWith({ commentAuthor: 'hillclimb-app' });
    const n = await openPr(forge);
    await forge.upsertStickyComment(n, 'mfu', 'x', STAMP);
    await forge.upsertStickyComment(n, 'mfu', 'y', { ...STAMP, iteration: 2 });
    expect(server.requests.filter((r) => r.path === '/user')).toEqual([]);
    expect(server.commentsOn(REPO, n)).toHaveLength(1);
  });
});

describe('retries, rate limits and errors', () => {
  it('retries 5xx answers and succeeds', async () => {
    const forge = forgeWith();
    await pushedBranch(forge);
    server.injectServerErrors(2, 502, /\/pulls$/);
    const r = await forge.upsertPullRequest(spec());
    expect(r.operation).toBe('created');
    const listStatuses = server.requests.filter((q) => q.operationId === 'pulls/list').map((q) => q.status);
    expect(listStatuses).toEqual([502, 502, 200]);
  });

  it('gives up after the retry budget with a ForgeApiError', async () => {
    const forge = forgeWith({ serverErrorRetries: 2 });
    await pushedBranch(forge);
    server.injectServerErrors(10, 503);
    const err = await forge.upsertPullRequest(spec()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ForgeApiError);
    expect(err).toMatchObject({ status: 503, operation: 'pulls.list' });
    expect((err as ForgeApiError).hint).toMatch(/server error/);
    expect(server.countRequests('pulls/list')).toBe(3);
  });

  it('waits out a secondary rate limit for retry-after, then retries', async () => {
    const forge = forgeWith({ timing: { secondMs: 20, writeSpacingMs: 0 } });
    await pushedBranch(forge);
    server.injectSecondaryRateLimit(3, 1, /\/pulls$/);
    const r = await forge.upsertPullRequest(spec());
    expect(r.operation).toBe('created');
    const lists = server.requests.filter((q) => q.operationId === 'pulls/list');
    expect(lists.map((q) => q.status)).toEqual([403, 200]);
    expect(lists[1]!.at - lists[0]!.at).toBeGreaterThanOrEqual(3 * 20 - 5);
    expect(logger.lines.some((l) => /secondary rate limit .* retrying in 3 s/.test(l))).toBe(true);
  });

  it('waits for the primary rate limit reset, then retries', async () => {
    const forge = forgeWith({ timing: { secondMs: 20, writeSpacingMs: 0 } });
    await pushedBranch(forge);
    server.injectPrimaryRateLimit(2, 1, /\/pulls$/);
    await forge.upsertPullRequest(spec());
    const lists = server.requests.filter((q) => q.operationId === 'pulls/list');
    expect(lists.map((q) => q.status)).toEqual([403, 200]);
    // Reset is 2 s away (rounded up, plus one second): at least 2 × 20 ms of waiting.
    expect(lists[1]!.at - lists[0]!.at).toBeGreaterThanOrEqual(2 * 20 - 5);
    expect(logger.lines.some((l) => /primary rate limit .* retrying in \d s/.test(l))).toBe(true);
  });

  it('does not sleep for a reset too far away; the error says when it resets', async () => {
    const forge = forgeWith({ maxRateLimitWaitSeconds: 60 });
    await pushedBranch(forge);
    server.injectPrimaryRateLimit(3600, 5);
    const err = await forge.upsertPullRequest(spec()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ForgeApiError);
    expect((err as ForgeApiError).status).toBe(403);
    expect((err as ForgeApiError).hint).toMatch(/rate limit exhausted \(resets at \d{4}-/);
    expect(server.countRequests('pulls/list')).toBe(1);
  });

  it('403 from a token without pull-requests: write names the missing permission', async () => {
    server.addToken('ghs_readonly0001', {
      login: BOT,
      kind: 'installation',
      permissions: { pull_requests: 'read' },
    });
    const forge = forgeWith({ token: 'ghs_readonly0001' });
    await pushedBranch(forge);
    const err = await forge.upsertPullRequest(spec()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ForgeApiError);
    expect(err).toMatchObject({ name: 'ForgeApiError', status: 403, operation: 'pulls.create' });
    expect((err as ForgeApiError).message).toContain('Resource not accessible by integration');
    expect((err as ForgeApiError).hint).toContain('pull-requests: write');
    expect(server.countRequests('pulls/create')).toBe(1);
  });

  it('403 when the repository does not let Actions open PRs names the setting', async () => {
    server.addRepo('octo/locked', bare, { actionsCanCreatePullRequests: false });
    server.addToken('ghs_actions0001', { login: 'github-actions[bot]', kind: 'installation' });
    const forge = forgeWith({ repository: 'octo/locked', token: 'ghs_actions0001' });
    await pushedBranch(forge);
    const err = await forge.upsertPullRequest(spec()).catch((e: unknown) => e);
    expect((err as ForgeApiError).hint).toContain('Allow GitHub Actions to create and approve pull requests');
  });

  it('401 names the token variable', async () => {
    const forge = forgeWith({ token: 'ghs_unknown0001', tokenEnv: 'HC_GH_TOKEN' });
    await pushedBranch(forgeWith());
    const err = await forge.findPullRequest(BRANCH).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 401, operation: 'pulls.list' });
    expect((err as ForgeApiError).hint).toContain('$HC_GH_TOKEN');
  });

  it('a repository the token cannot see is a 404 with a hint', async () => {
    const forge = forgeWith({ repository: 'octo/unknown' });
    const err = await forge.findPullRequest(BRANCH).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 404 });
    expect((err as ForgeApiError).hint).toContain('octo/unknown');
  });
});

describe('what people and GitHub do between runs', () => {
  it('a re-run finds the PR a person closed, updates it and leaves it closed: no second PR', async () => {
    const forge = forgeWith();
    const n = await openPr(forge);
    server.closeByPerson(REPO, n);
    const again = await forge.upsertPullRequest(spec({ title: 'gdn: fuse gate (re-measured)' }));
    expect(again.pr).toMatchObject({ number: n, state: 'closed', title: 'gdn: fuse gate (re-measured)' });
    expect(again.operation).toBe('updated');
    expect(server.pullsOf(REPO)).toHaveLength(1);
    expect(server.pullsOf(REPO)[0]!.state).toBe('closed');
    expect(logger.lines.join('\n')).toContain(
      `PR #${n} for ${BRANCH} was closed; updating it and leaving it`,
    );
  });

  it('a stacked PR whose base was merged and auto-deleted goes to forge.base', async () => {
    const forge = forgeWith({ defaultBase: 'main' });
    const champion = 'hillclimb/gdn/r1/i001';
    const next = 'hillclimb/gdn/r1/i002';
    const first = await pushedBranch(forge, champion);
    const a = (await forge.upsertPullRequest(spec({ branch: champion }))).pr.number;
    git(work, 'checkout', '-q', '--detach', first);
    git(work, 'commit', '-q', '--allow-empty', '-m', 'i002');
    const second = git(work, 'rev-parse', 'HEAD');
    git(work, 'checkout', '-q', 'main');
    await forge.pushBranch(work, next, second);
    const b = (await forge.upsertPullRequest(spec({ branch: next, base: champion }))).pr.number;
    server.mergeAndDeleteHead(REPO, a);

    // The open stacked PR was retargeted by GitHub; updating it with the old base keeps main.
    const updated = await forge.upsertPullRequest(spec({ branch: next, base: champion, body: 'v2' }));
    expect(updated.pr).toMatchObject({ number: b, base: 'main', state: 'open', body: 'v2' });
    // A new PR stacked on the deleted branch is opened against main.
    git(work, 'checkout', '-q', '--detach', second);
    git(work, 'commit', '-q', '--allow-empty', '-m', 'i003');
    const third = git(work, 'rev-parse', 'HEAD');
    git(work, 'checkout', '-q', 'main');
    await forge.pushBranch(work, 'hillclimb/gdn/r1/i003', third);
    const created = await forge.upsertPullRequest(spec({ branch: 'hillclimb/gdn/r1/i003', base: champion }));
    expect(created).toMatchObject({ operation: 'created', pr: { base: 'main' } });
    expect(logger.lines.join('\n')).toContain(`base branch ${champion} no longer exists`);
    const creates = server.requests.filter((q) => q.operationId === 'pulls/create').map((q) => q.status);
    expect(creates).toEqual([201, 201, 422, 201]);
  });

  it('without forge.base to fall back on, the deleted base is a clear 422', async () => {
    const forge = forgeWith();
    await pushedBranch(forge);
    const err = await forge.upsertPullRequest(spec({ base: 'gone' })).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'ForgeApiError', status: 422, operation: 'pulls.create' });
    expect((err as Error).message).toContain('base invalid');
  });

  it('a 422 "was submitted too quickly" is waited out (one minute) and retried', async () => {
    const forge = forgeWith({ timing: { secondMs: 2, writeSpacingMs: 0 } });
    const n = await openPr(forge);
    server.injectSubmittedTooQuickly(1, /\/comments$/);
    const r = await forge.upsertStickyComment(n, 'mfu', 'MFU +1.0%', STAMP);
    expect(r.operation).toBe('created');
    const creates = server.requests.filter((q) => q.operationId === 'issues/create-comment');
    expect(creates.map((q) => q.status)).toEqual([422, 201]);
    expect(creates[1]!.at - creates[0]!.at).toBeGreaterThanOrEqual(60 * 2 - 5);
    expect(logger.lines.join('\n')).toMatch(
      /issues\.createComment "was submitted too quickly".*retrying in 60 s/,
    );
    expect(server.commentsOn(REPO, n)).toHaveLength(1);
  });

  it('gives up on "submitted too quickly" when the rate-limit budget is spent, with a hint', async () => {
    const forge = forgeWith({ maxRateLimitWaitSeconds: 100 });
    const n = await openPr(forge);
    server.injectSubmittedTooQuickly(5, /\/comments$/);
    const err = await forge.upsertStickyComment(n, 'mfu', 'x', STAMP).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'ForgeApiError', status: 422, operation: 'issues.createComment' });
    expect((err as ForgeApiError).hint).toMatch(/secondary rate limit on creating content/);
    expect(server.countRequests('issues/create-comment')).toBe(2); // one wait of 60 s fits in 100 s
  });

  it('all rate-limit waits of a job together stay inside one budget', async () => {
    const forge = forgeWith({ maxRateLimitWaitSeconds: 150 });
    await pushedBranch(forge);
    server.injectPrimaryRateLimit(100, 2, /\/pulls$/);
    const err = await forge.upsertPullRequest(spec()).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'ForgeApiError', status: 403 });
    expect((err as ForgeApiError).hint).toMatch(
      /rate limit exhausted .*outlast this job's rate-limit budget/,
    );
    // The first 100 s wait fitted; the second would have made 200 s of the 150.
    expect(server.countRequests('pulls/list')).toBe(2);
    expect(logger.lines.join('\n')).toMatch(/left of this job's 150 s rate-limit budget; not waiting/);
  });

  it('the default budget leaves every report step most of its timeout', () => {
    const dir = join(REPO_ROOT, '.github', 'workflows');
    const timeouts = readdirSync(dir).flatMap((f) => {
      const text = readFileSync(join(dir, f), 'utf8');
      return [...text.matchAll(/uses: \.\/actions\/report\n\s+timeout-minutes: (\d+)/g)].map((m) =>
        Number(m[1]),
      );
    });
    expect(timeouts.length).toBeGreaterThan(0);
    expect(RATE_LIMIT_WAIT_BUDGET_SECONDS).toBeLessThanOrEqual((Math.min(...timeouts) * 60) / 2);
  });

  it('a branch protection rule on the iteration branches is named in the hint (GH006)', async () => {
    installGitHubPushRules(bare, undefined, [BRANCH]);
    const err = await pushedBranch(forgeWith()).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'ForgeApiError', operation: 'git push' });
    expect((err as Error).message).toContain(
      'GH006: Protected branch update failed for refs/heads/hillclimb/',
    );
    expect((err as ForgeApiError).hint).toBe(
      `a branch protection rule or ruleset covers ${BRANCH}: exclude hillclimb/** and hillclimb-data from it, ` +
        'or add the token\'s GitHub App to its bypass list (docs/setup.md, "Branch protection")',
    );
  });

  it("never force-pushes over a reviewer's commit on the iteration branch", async () => {
    const forge = forgeWith();
    await pushedBranch(forge);
    const reviewer = personCommitOn(bare, BRANCH, 'fix.py', 'reviewer fix\n');
    const rerun = detachedCommit(work, 'k.py', 're-measured candidate\n');
    const err = await forge.pushBranch(work, BRANCH, rerun).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ForeignCommitsError);
    expect(err).toMatchObject({ exitCode: 2 }); // not retried as infrastructure
    expect((err as Error).message).toContain(
      `${reviewer.slice(0, 12)} "Reviewer fix-up" by ${PERSON.name} <${PERSON.email}>`,
    );
    expect((err as ForeignCommitsError).hint).toMatch(/never force-pushes over commits it did not make/);
    expect(bareBranchSha(bare, BRANCH)).toBe(reviewer);
    // The checkout's branches are untouched by the check.
    expect(git(work, 'for-each-ref', '--format=%(refname)', 'refs/heads')).toBe('refs/heads/main');
  });
});
