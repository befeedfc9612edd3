import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CommentStamp, PullRequestSpec } from '../../../src/forge/forge.js';
import { LocalForge } from '../../../src/forge/forges/local.js';
import { LocalRecords } from '../../../src/forge/forges/local-records.js';
import { BODY_CAP_CHARS } from '../../../src/forge/limits.js';
import {
  formatPull,
  formatPullList,
  listLocalPulls,
  showLocalPull,
} from '../../../src/forge/local-reader.js';
import { decodeStamp, stickyMarker } from '../../../src/forge/sticky.js';
import { HillclimbError } from '../../../src/util/errors.js';
import { memoryLogger } from '../../../src/util/log.js';
import { tempDir } from '../../helpers/paths.js';
import {
  bareBranchSha,
  commitOnBranch,
  detachedCommit,
  git,
  initBareRemote,
  initRepo,
} from '../git-fixtures.js';

const run = promisify(execFile);
const BRANCH = 'hillclimb/gdn/r1/i001';
const STAMP: CommentStamp = {
  runStartedAt: '2026-11-21T10:00:00Z',
  runId: '42',
  iteration: 1,
  commit: 'abc',
};

let tmp: ReturnType<typeof tempDir>;
let repo: string;
let stateDir: string;
let logger: ReturnType<typeof memoryLogger>;
let forge: LocalForge;

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

function forgeDirFiles(): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else out.push(join(d, e.name));
    }
  };
  walk(join(stateDir, 'forge'));
  return out;
}

beforeEach(() => {
  tmp = tempDir('hc-local-forge-');
  repo = initRepo(join(tmp.dir, 'repo'));
  stateDir = join(tmp.dir, 'state');
  logger = memoryLogger();
  forge = new LocalForge({ repoDir: repo, stateDir, logger });
});

afterEach(() => tmp.cleanup());

describe('pushBranch', () => {
  it('points a branch in the repository at the commit, and moves it on the next push', async () => {
    const first = detachedCommit(repo, 'k.py', 'a = 1\n');
    await forge.pushBranch(repo, BRANCH, first);
    expect(git(repo, 'rev-parse', `refs/heads/${BRANCH}`)).toBe(first);
    const second = detachedCommit(repo, 'k.py', 'a = 2\n');
    await forge.pushBranch(repo, BRANCH, second.slice(0, 10));
    expect(git(repo, 'rev-parse', `refs/heads/${BRANCH}`)).toBe(second);
  });

  it('refuses to move a branch that a worktree has checked out', async () => {
    const sha = commitOnBranch(repo, BRANCH, 'k.py', 'a = 1\n');
    git(repo, 'worktree', 'add', '-q', join(tmp.dir, 'wt'), BRANCH);
    const other = detachedCommit(repo, 'k.py', 'a = 3\n');
    await expect(forge.pushBranch(repo, BRANCH, other)).rejects.toThrow(/checked out in .*wt/);
    expect(git(repo, 'rev-parse', `refs/heads/${BRANCH}`)).toBe(sha);
    // Already there: nothing to move, so no complaint.
    await forge.pushBranch(repo, BRANCH, sha);
  });

  it('rejects bad branch names and unknown commits', async () => {
    const sha = detachedCommit(repo, 'k.py', 'x\n');
    await expect(forge.pushBranch(repo, 'bad..name', sha)).rejects.toThrow(/invalid branch name/);
    await expect(forge.pushBranch(repo, '-f', sha)).rejects.toThrow(/invalid branch name/);
    await expect(forge.pushBranch(repo, BRANCH, 'f'.repeat(40))).rejects.toThrow(/not found/);
  });

  it('pushes to a configured bare remote, which then holds the PR head', async () => {
    const bare = initBareRemote(join(tmp.dir, 'remote.git'), repo);
    const remoteForge = new LocalForge({ repoDir: repo, stateDir, remote: bare, logger });
    const sha = detachedCommit(repo, 'k.py', 'x\n');
    await remoteForge.pushBranch(repo, BRANCH, sha);
    expect(bareBranchSha(bare, BRANCH)).toBe(sha);
    expect(() => git(repo, 'rev-parse', '--verify', `refs/heads/${BRANCH}`)).toThrow();
    const { pr } = await remoteForge.upsertPullRequest(spec());
    expect(pr.headSha).toBe(sha);
  });
});

describe('pull requests', () => {
  beforeEach(async () => {
    await forge.pushBranch(repo, BRANCH, detachedCommit(repo, 'k.py', 'x\n'));
  });

  it('needs the branch to exist', async () => {
    await expect(forge.upsertPullRequest(spec({ branch: 'hillclimb/none' }))).rejects.toThrow(
      /does not exist/,
    );
  });

  it('creates once, then updates in place, never duplicating', async () => {
    const created = await forge.upsertPullRequest(spec());
    expect(created.operation).toBe('created');
    expect(created.pr).toMatchObject({ number: 1, branch: BRANCH, base: 'main', state: 'open', draft: true });
    expect(created.pr.url).toMatch(/^file:\/\/.*\/forge\/pulls\/1\.json$/);
    expect(created.pr.headSha).toBe(git(repo, 'rev-parse', BRANCH));

    expect((await forge.upsertPullRequest(spec())).operation).toBe('unchanged');
    const updated = await forge.upsertPullRequest(spec({ body: 'new evidence', title: 'gdn: fuse gate v2' }));
    expect(updated.operation).toBe('updated');
    expect(updated.pr.number).toBe(1);
    expect(listLocalPulls(stateDir)).toHaveLength(1);
    expect((await forge.findPullRequest(BRANCH))?.body).toBe('new evidence');
  });

  it('sets draft at creation and leaves it to people afterwards', async () => {
    await forge.upsertPullRequest(spec({ draft: true }));
    const records = new LocalRecords(stateDir);
    writeFileSync(records.pullFile(1), JSON.stringify({ ...records.pull(1), draft: false }));
    const again = await forge.upsertPullRequest(spec({ draft: true, body: 'changed' }));
    expect(again.pr.draft).toBe(false);
  });

  it("manages hillclimb: labels and keeps everyone else's", async () => {
    await forge.upsertPullRequest(spec({ labels: ['hillclimb:improved', 'perf'] }));
    const records = new LocalRecords(stateDir);
    const pr = records.pull(1)!;
    writeFileSync(records.pullFile(1), JSON.stringify({ ...pr, labels: [...pr.labels, 'needs-review'] }));
    const r = await forge.upsertPullRequest(spec({ labels: ['hillclimb:regressed'] }));
    expect(r.operation).toBe('updated');
    expect(r.pr.labels).toEqual(['hillclimb:regressed', 'needs-review', 'perf']);
  });

  it('caps a body over the limit, warns and says so', async () => {
    const body = 'row\n'.repeat(30_000);
    const r = await forge.upsertPullRequest(spec({ body }));
    expect(r.truncated).toBe(true);
    expect(r.pr.body.length).toBeLessThanOrEqual(BODY_CAP_CHARS);
    expect(r.pr.body).toContain('Truncated by hillclimb');
    expect(logger.lines.some((l) => l.includes('warning:') && l.includes('truncated'))).toBe(true);
  });

  it('closes with a comment; the next upsert for the branch finds it again, closed, instead of opening another', async () => {
    await forge.upsertPullRequest(spec());
    await forge.closePullRequest(1, 'superseded by a newer iteration');
    expect(await forge.findPullRequest(BRANCH)).toMatchObject({ number: 1, state: 'closed' });
    const view = showLocalPull(stateDir, 1)!;
    expect(view.pull.state).toBe('closed');
    expect(view.pull.closedAt).toBeDefined();
    expect(view.comments.map((c) => c.body)).toEqual(['superseded by a newer iteration']);
    await forge.closePullRequest(1);
    const again = await forge.upsertPullRequest(spec({ title: 'retitled' }));
    expect(again).toMatchObject({
      operation: 'updated',
      pr: { number: 1, state: 'closed', title: 'retitled' },
    });
    expect(listLocalPulls(stateDir)).toHaveLength(1);
  });

  it('fails clearly for a PR that does not exist', async () => {
    await expect(forge.closePullRequest(9)).rejects.toThrow(/no PR #9/);
    await expect(forge.upsertStickyComment(9, 'mfu', 'x', STAMP)).rejects.toBeInstanceOf(HillclimbError);
  });
});

describe('sticky comment', () => {
  beforeEach(async () => {
    await forge.pushBranch(repo, BRANCH, detachedCommit(repo, 'k.py', 'x\n'));
    await forge.upsertPullRequest(spec());
  });

  it('is created once and then updated in place', async () => {
    const a = await forge.upsertStickyComment(1, 'mfu', 'MFU +1.0%', STAMP);
    expect(a.operation).toBe('created');
    const b = await forge.upsertStickyComment(1, 'mfu', 'MFU +2.0%', { ...STAMP, iteration: 2 });
    expect(b).toMatchObject({ commentId: a.commentId, operation: 'updated' });
    expect(
      (await forge.upsertStickyComment(1, 'mfu', 'MFU +2.0%', { ...STAMP, iteration: 2 })).operation,
    ).toBe('unchanged');
    const comments = forge.comments(1);
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toContain('MFU +2.0%');
    expect(decodeStamp(comments[0]!.body)?.iteration).toBe(2);
  });

  it('keeps separate comments per key', async () => {
    await forge.upsertStickyComment(1, 'mfu', 'a', STAMP);
    await forge.upsertStickyComment(1, 'hotspots', 'b', STAMP);
    expect(forge.comments(1)).toHaveLength(2);
  });

  it('never lets an older stamp overwrite a newer one', async () => {
    await forge.upsertStickyComment(1, 'mfu', 'newer', { ...STAMP, iteration: 5 });
    const stale = await forge.upsertStickyComment(1, 'mfu', 'older', { ...STAMP, iteration: 3 });
    expect(stale.operation).toBe('skipped-stale');
    const olderRun = await forge.upsertStickyComment(1, 'mfu', 'older run', {
      ...STAMP,
      runStartedAt: '2026-11-20T10:00:00Z',
      iteration: 99,
    });
    expect(olderRun.operation).toBe('skipped-stale');
    expect(forge.comments(1)[0]!.body).toContain('newer');
    expect(logger.lines.some((l) => l.includes('skipped-stale (the comment holds a newer stamp)'))).toBe(
      true,
    );
  });

  it("ignores other authors' and hidden comments, and removes duplicates of its own", async () => {
    const records = new LocalRecords(stateDir);
    const foreign = records.newComment({
      id: 100,
      pull: 1,
      author: 'someone',
      body: `quoting ${stickyMarker('mfu')}`,
      minimized: false,
      createdAt: '',
      updatedAt: '',
    });
    records.writeComment(foreign);
    const first = await forge.upsertStickyComment(1, 'mfu', 'one', STAMP);
    records.writeComment({ ...records.comments(1).find((c) => c.id === first.commentId)!, id: 200 });
    const second = await forge.upsertStickyComment(1, 'mfu', 'two', { ...STAMP, iteration: 2 });
    expect(second).toMatchObject({ commentId: first.commentId, operation: 'updated' });
    expect(forge.comments(1).map((c) => c.id)).toEqual([first.commentId, 100]);

    records.writeComment({ ...records.comments(1).find((c) => c.id === first.commentId)!, minimized: true });
    const third = await forge.upsertStickyComment(1, 'mfu', 'three', { ...STAMP, iteration: 3 });
    expect(third.operation).toBe('created');
    expect(forge.comments(1).find((c) => c.id === first.commentId)!.body).toContain('two');
    expect(forge.comments(1).find((c) => c.id === 100)!.body).toBe(`quoting ${stickyMarker('mfu')}`);
  });

  it('concurrent upserts in one process leave one comment holding the newest stamp', async () => {
    const results = await Promise.all(
      [3, 7, 1, 6, 2, 5, 4].map((iteration) =>
        forge.upsertStickyComment(1, 'mfu', `iteration ${iteration}`, { ...STAMP, iteration }),
      ),
    );
    expect(results.filter((r) => r.operation === 'created')).toHaveLength(1);
    const comments = forge.comments(1);
    expect(comments).toHaveLength(1);
    expect(decodeStamp(comments[0]!.body)?.iteration).toBe(7);
  });
});

describe('across processes', () => {
  let writer: string;

  beforeAll(async () => {
    const out = tempDir('hc-local-forge-writer-');
    writer = join(out.dir, 'writer.mjs');
    await build({
      entryPoints: [join(import.meta.dirname, 'fixtures', 'local-forge-writer.ts')],
      outfile: writer,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      logLevel: 'warning',
      // execa's CommonJS dependencies need a real `require` inside an ESM bundle (as in scripts/build.mjs).
      banner: {
        js: "import { createRequire as __hcCreateRequire } from 'node:module'; const require = __hcCreateRequire(import.meta.url);",
      },
    });
  });

  /** Start `writers` processes, release them together once all are up, and collect their results. */
  async function race(mode: string, writers: number, count: number): Promise<Array<{ operation: string }>> {
    const go = join(tmp.dir, `go-${mode}`);
    const procs = Array.from({ length: writers }, (_, id) =>
      run(process.execPath, [writer, mode, repo, stateDir, String(id), String(count), go]),
    );
    const ready = () =>
      Array.from({ length: writers }, (_, id) => existsSync(`${go}.ready.${id}`)).every(Boolean);
    // A writer that dies before it is ready must fail the test, not leave this loop waiting for it.
    let failed: unknown;
    for (const p of procs) p.catch((e: unknown) => (failed ??= e));
    while (!ready()) {
      if (failed !== undefined) throw failed;
      await new Promise((r) => setTimeout(r, 5));
    }
    writeFileSync(go, '');
    const outs = await Promise.all(procs);
    return outs.flatMap((o) => JSON.parse(o.stdout) as Array<{ operation: string }>);
  }

  it('processes opening the same PR at once create one', async () => {
    await forge.pushBranch(repo, 'hc/race', detachedCommit(repo, 'k.py', 'x\n'));
    const results = await race('pr', 4, 1);
    expect(results.filter((r) => r.operation === 'created')).toHaveLength(1);
    expect(listLocalPulls(stateDir)).toHaveLength(1);
  });

  it('concurrent sticky writers leave one comment with the newest stamp; readers never see a torn file', async () => {
    await forge.pushBranch(repo, BRANCH, detachedCommit(repo, 'k.py', 'x\n'));
    await forge.upsertPullRequest(spec());
    const writers = 4;
    const perWriter = 25;
    let done = false;
    let reads = 0;
    const reader = (async () => {
      const dir = join(stateDir, 'forge', 'comments', '1');
      while (!done) {
        for (const name of existsSync(dir) ? readdirSync(dir) : []) {
          if (!/^\d+\.json$/.test(name)) continue;
          try {
            JSON.parse(readFileSync(join(dir, name), 'utf8'));
            reads += 1;
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
          }
        }
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    const results = await race('sticky', writers, perWriter);
    done = true;
    await reader;
    expect(results).toHaveLength(writers * perWriter);
    expect(results.filter((r) => r.operation === 'created')).toHaveLength(1);
    const comments = forge.comments(1);
    expect(comments).toHaveLength(1);
    expect(decodeStamp(comments[0]!.body)?.iteration).toBe(writers - 1 + (perWriter - 1) * 10);
    expect(reads).toBeGreaterThan(0);
    expect(forgeDirFiles().filter((f) => f.includes('.tmp-') || f.endsWith('/lock'))).toEqual([]);
    expect(JSON.parse(readFileSync(join(stateDir, 'forge', 'counters.json'), 'utf8'))).toEqual({
      nextPull: 2,
      nextComment: 2,
    });
  });
});

describe('lock', () => {
  beforeEach(async () => {
    await forge.pushBranch(repo, BRANCH, detachedCommit(repo, 'k.py', 'x\n'));
  });

  it('takes over a lock left by a dead process', async () => {
    const records = new LocalRecords(stateDir);
    const dead = await run(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
    mkdirSync(dirname(records.lockFile), { recursive: true });
    const holder = {
      pid: Number(dead.stdout),
      host: hostname(),
      token: 'x',
      acquiredAt: new Date().toISOString(),
    };
    writeFileSync(records.lockFile, JSON.stringify(holder));
    expect((await forge.upsertPullRequest(spec())).operation).toBe('created');
    expect(existsSync(records.lockFile)).toBe(false);
  });

  it('gives up on a live holder after the timeout, naming the lock file', async () => {
    const records = new LocalRecords(stateDir);
    mkdirSync(dirname(records.lockFile), { recursive: true });
    const holder = {
      pid: process.pid,
      host: hostname(),
      token: 'held',
      acquiredAt: new Date().toISOString(),
    };
    writeFileSync(records.lockFile, JSON.stringify(holder));
    const impatient = new LocalForge({ repoDir: repo, stateDir, logger, lock: { timeoutMs: 150 } });
    const err = await impatient.upsertPullRequest(spec()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HillclimbError);
    expect((err as HillclimbError).message).toContain(records.lockFile);
    expect((err as HillclimbError).hint).toMatch(/delete the lock file/);
    expect(listLocalPulls(stateDir)).toEqual([]);
  });
});

describe('reader', () => {
  it('lists PRs and shows one with its comments, without marker noise', async () => {
    await forge.pushBranch(repo, BRANCH, detachedCommit(repo, 'k.py', 'x\n'));
    await forge.upsertPullRequest(spec({ labels: ['hillclimb:improved'] }));
    await forge.upsertStickyComment(1, 'mfu', '| MFU | +3.0% |', STAMP);
    const list = listLocalPulls(stateDir);
    expect(list).toMatchObject([
      { number: 1, state: 'open', draft: true, comments: 1, labels: ['hillclimb:improved'] },
    ]);
    expect(formatPullList(list)).toContain(
      `#1  draft   ${BRANCH} → main  gdn: fuse gate  [hillclimb:improved]  (1 comments)`,
    );
    const text = formatPull(showLocalPull(stateDir, 1)!);
    expect(text).toContain('#1 gdn: fuse gate');
    expect(text).toContain('sticky (run 42, iteration 1)');
    expect(text).toContain('| MFU | +3.0% |');
    expect(text).not.toContain('hillclimb:sticky');
    expect(showLocalPull(stateDir, 7)).toBeUndefined();
    expect(formatPullList([])).toBe('no pull requests in the local forge');
  });
});
