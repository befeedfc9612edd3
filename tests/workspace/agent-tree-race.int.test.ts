/**
 * snapshotTree (src/workspace/agent-tree.ts) against an agent that is still running: a tool call
 * (src/loop/steps/agent-tools.ts) snapshots the tree while the agent's processes can change it, so any
 * check the harness makes of an entry can be raced. Here the race is won every time: the first time the
 * harness touches an entry's path (a stat, an open, a listing), the entry is swapped for a link to a
 * secret outside the tree, or for a pipe. A snapshot that checks and reads through one descriptor copies
 * the file it checked or nothing; one that checks a path and then reads the path copies the secret (the
 * harness's own `/proc/self/environ` holds the model API key), or blocks the whole harness on the pipe.
 */
import { execFileSync, spawn } from 'node:child_process';
import * as realFs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';

/** The entry to swap at the harness's first touch, and what it becomes. */
const swap: { path?: string; to?: (path: string) => void } = {};

vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  // A path through an open folder's descriptor (/proc/self/fd/N/name) names the entry it reaches.
  const resolved = (p: string) => {
    const m = /^\/proc\/self\/fd\/(\d+)(\/.*)?$/.exec(p);
    if (!m) return p;
    try {
      return fs.readlinkSync(`/proc/self/fd/${m[1]}`) + (m[2] ?? '');
    } catch {
      return p;
    }
  };
  const touched = (p: unknown) => {
    if (swap.path !== undefined && swap.to && resolved(String(p)) === swap.path) {
      const to = swap.to;
      swap.to = undefined;
      to(swap.path);
    }
  };
  const wrap =
    <A extends unknown[], R>(f: (...a: A) => R) =>
    (...a: A): R => {
      const r = f(...a);
      touched(a[0]);
      return r;
    };
  const wrapped = {
    ...fs,
    lstatSync: wrap(fs.lstatSync),
    statSync: wrap(fs.statSync),
    openSync: wrap(fs.openSync),
    opendirSync: wrap(fs.opendirSync),
    readdirSync: wrap(fs.readdirSync),
    existsSync: wrap(fs.existsSync),
  };
  return { ...wrapped, default: wrapped };
});

const { snapshotTree } = await import('../../src/workspace/index.js');
const { DEFAULT_SNAPSHOT_LIMITS } = await import('../../src/workspace/agent-tree.js');
const {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} = realFs;

let root: string;
let tree: string;
let dest: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'hc-tree-race-'));
  mkdirSync(join(root, 'secrets'));
  writeFileSync(join(root, 'secrets', 'k.py'), 'SECRET\n');
  writeFileSync(join(root, 'secret.py'), 'SECRET\n');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));
beforeEach(() => {
  tree = mkdtempSync(join(root, 'tree-'));
  dest = mkdtempSync(join(root, 'dest-'));
  mkdirSync(join(tree, 'd'));
  writeFileSync(join(tree, 'd', 'k.py'), 'inside\n');
  writeFileSync(join(tree, 'f.py'), 'inside\n');
});

/** Every file's text under `dir`, joined. */
function allText(dir: string): string {
  let out = '';
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    out += statSync(p).isDirectory() ? allText(p) : readFileSync(p, 'utf8');
  }
  return out;
}

/** The snapshot's result, or its error's message: either way nothing outside the tree is copied. */
function snapshot(): string {
  try {
    return JSON.stringify(snapshotTree(tree, dest).refused);
  } catch (e) {
    return (e as Error).message;
  } finally {
    swap.path = undefined;
  }
}

describe('a snapshot of a tree its agent is still changing', () => {
  it('never copies the file a link swapped in after the check points at', () => {
    swap.path = join(tree, 'f.py');
    swap.to = (p) => {
      renameSync(p, `${p}.hold`);
      symlinkSync(join(root, 'secret.py'), p);
    };
    snapshot();
    expect(swap.to).toBeUndefined(); // the harness touched the entry: the swap happened
    expect(allText(dest)).not.toContain('SECRET');
  });

  it('never lists a folder a link swapped in after the check, nor copies what is in it', () => {
    swap.path = join(tree, 'd');
    swap.to = (p) => {
      renameSync(p, `${p}.hold`);
      symlinkSync(join(root, 'secrets'), p);
    };
    snapshot();
    expect(swap.to).toBeUndefined();
    expect(allText(dest)).not.toContain('SECRET');
  });

  it('never reads through a folder above the file that became a link after it was listed', () => {
    swap.path = join(tree, 'd', 'k.py'); // the folder `d` is swapped as its file is first touched
    swap.to = () => {
      renameSync(join(tree, 'd'), join(tree, 'd.hold'));
      symlinkSync(join(root, 'secrets'), join(tree, 'd'));
    };
    snapshot();
    expect(swap.to).toBeUndefined();
    expect(allText(dest)).not.toContain('SECRET');
  });

  it('never opens a pipe swapped in after the check (an open would block the harness for good)', () => {
    const pipe = join(root, `pipe-${Date.now()}`);
    execFileSync('python3', ['-c', 'import os, sys; os.mkfifo(sys.argv[1])', pipe]); // Node has no mkfifo
    swap.path = join(tree, 'f.py');
    swap.to = (p) => renameSync(pipe, p);
    // A blocking open would wait for a writer for good, and no test timeout can end a blocked thread:
    // a writer comes 3 s after `started` (and gives up at 6), so such a snapshot takes 3 s at least.
    const started = Date.now();
    spawn('timeout', ['6', 'sh', '-c', 'sleep 3; echo > "$1"', 'sh', swap.path], {
      detached: true,
      stdio: 'ignore',
    }).unref();
    snapshot();
    expect(swap.to).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(3000);
  }, 10_000);
});

describe('a snapshot of a tree holding what is not its own', () => {
  it('refuses a hard link to a file outside the tree, a link, and a pipe, and copies none of them', () => {
    realFs.linkSync(join(root, 'secret.py'), join(tree, 'hard.py'));
    symlinkSync(join(root, 'secret.py'), join(tree, 'soft.py'));
    execFileSync('python3', ['-c', 'import os, sys; os.mkfifo(sys.argv[1])', join(tree, 'pipe.py')]);
    const taken = snapshotTree(tree, dest);
    expect(taken.refused).toEqual([
      'hard.py: a hard link',
      'pipe.py: not a regular file',
      'soft.py: a symbolic link',
    ]);
    expect(allText(dest)).not.toContain('SECRET');
    realFs.unlinkSync(join(tree, 'hard.py'));
  });
});

describe('a snapshot of a tree of too many entries', () => {
  it('stops at the limit and takes nothing (empty files count for nothing against the bytes)', () => {
    for (let i = 0; i < 5; i++) writeFileSync(join(tree, `e${i}.py`), '');
    const taken = snapshotTree(tree, dest, { ...DEFAULT_SNAPSHOT_LIMITS, maxEntries: 4 });
    expect(taken.refused).toEqual(['.: more than 4 files and folders (the limit); nothing was taken']);
    expect(taken.removed).toEqual([]);
    expect(DEFAULT_SNAPSHOT_LIMITS.maxEntries).toBe(100_000);
  });
});
