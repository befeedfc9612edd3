/**
 * Packaging a working tree for a remote machine. The tree is taken as it is on disk (tracked files plus
 * untracked files that are not ignored), like the local backend sees it, without touching the
 * repository's index, refs or stash: git writes the snapshot through a temporary index file. The
 * snapshot's tree id is a content hash, so identical trees get identical package names.
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { runGit } from '../git/index.js';
import { HillclimbError } from '../util/index.js';

export interface SnapshotOptions {
  /** Files added to the snapshot (path relative to the tree → content), replacing any file of that name. */
  extraFiles?: Record<string, string>;
  /** Paths left out, as git glob pathspecs relative to the tree (e.g. "tests/fixtures/**"). */
  excludes?: readonly string[];
  /** Paths (relative to the tree) added even where ignore rules would leave them out. */
  include?: readonly string[];
}

const GIT_TIMEOUT_MS = 5 * 60_000;

async function git(
  workdir: string,
  args: string[],
  env: Record<string, string> = {},
  input?: string,
): Promise<string> {
  const r = await runGit(args, {
    cwd: workdir,
    env,
    timeoutMs: GIT_TIMEOUT_MS,
    ...(input !== undefined ? { input } : {}),
  });
  return r.stdout.trim();
}

/**
 * Snapshot `workdir` (a git working tree, or a folder inside one) and return the git tree id of its
 * contents. Writes objects to the repository's object store (unreferenced, so `git gc` drops them).
 */
export async function snapshotTree(workdir: string, opts: SnapshotOptions = {}): Promise<string> {
  let prefix: string;
  let realIndex: string;
  try {
    prefix = await git(workdir, ['rev-parse', '--show-prefix']);
    realIndex = await git(workdir, ['rev-parse', '--path-format=absolute', '--git-path', 'index']);
  } catch (e) {
    throw new HillclimbError(`${workdir} is not inside a git working tree: ${(e as Error).message}`, {
      hint: 'jobs run in git worktrees of the repository; pass a checkout as the job workdir',
      cause: e,
    });
  }
  const tmp = mkdtempSync(join(tmpdir(), 'hc-index-'));
  try {
    const index = join(tmp, 'index');
    // Starting from a copy of the real index keeps git's stat cache, so unchanged files are not re-hashed.
    if (existsSync(realIndex)) copyFileSync(realIndex, index);
    const env = { GIT_INDEX_FILE: index };
    await git(workdir, ['add', '--all', '--', '.'], env);
    const included = (opts.include ?? []).filter((p) => existsSync(join(workdir, p)));
    if (included.length > 0) await git(workdir, ['add', '--all', '--force', '--', ...included], env);
    const excludes = (opts.excludes ?? []).map((p) => `:(glob)${p}`);
    if (excludes.length > 0) {
      await git(workdir, ['rm', '-r', '-q', '--cached', '--ignore-unmatch', '--', ...excludes], env);
    }
    for (const [path, content] of Object.entries(opts.extraFiles ?? {})) {
      if (isAbsolute(path) || path.split('/').includes('..')) throw new Error(`bad extra file path: ${path}`);
      const blob = await git(workdir, ['hash-object', '-w', '--stdin'], env, content);
      await git(workdir, ['update-index', '--add', '--cacheinfo', `100644,${blob},${prefix}${path}`], env);
    }
    return await git(workdir, prefix ? ['write-tree', `--prefix=${prefix}`] : ['write-tree'], env);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Write a snapshot as an archive file (`zip` for Ray packages, `tar.gz` for TPU VMs). */
export async function archiveTree(
  workdir: string,
  treeId: string,
  format: 'zip' | 'tar.gz',
  outFile: string,
): Promise<void> {
  await git(workdir, ['archive', `--format=${format}`, `--output=${outFile}`, treeId]);
}
