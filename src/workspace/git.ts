/**
 * The loop's handle on its repository, built on src/git's runGit (the one place git is started). Modelled on create-pull-request's git command manager:
 * an async factory that verifies the work tree and resolves the binary once, one method per git verb,
 * argument arrays with pathspecs after `--`, expected non-zero exits opted into, and a `close()` that
 * undoes the state this instance created (worktrees), called by the loop in `finally`.
 *
 * Every command runs with repository hooks and fsmonitor disabled: an agent that can write `.git`
 * must not get code executed by the harness's own git calls, which may run with more privilege.
 * Lock contention (`index.lock`, "Another git process seems to be running") is retried a few times
 * with a short sleep, as the seed loop's wrapper did; every other failure throws a GitError at once.
 */
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { displayCommand, type ExecResult, findOnPath } from '../exec/index.js';
import {
  assertIdentity,
  DEFAULT_GIT_TIMEOUT_MS,
  HARDENING_CONFIG,
  HARNESS_IDENTITY,
  type Identity,
  identityEnv,
  runGit,
} from '../git/index.js';
import { assertBranchName, ExitCode, HillclimbError, type Logger, secretsFromEnv } from '../util/index.js';

export { HARNESS_IDENTITY, type Identity };

/** Prefix of the refs that pin stashes by SHA (see stashChanges). */
export const STASH_PIN_PREFIX = 'refs/hillclimb/stashes/';

const LOCK_CONTENTION = /index\.lock|Another git process seems to be running|\.lock': File exists/;
const DEFAULT_LOCK_RETRIES = 3;
const DEFAULT_LOCK_RETRY_DELAY_MS = 1000;

export interface GitOptions {
  /** git to run. Default: `git` found on PATH when the instance is created. */
  binary?: string;
  logger?: Logger;
  /** Retries after a lock-contention failure. Default 3. */
  lockRetries?: number;
  /** Sleep between those retries. Default 1000 ms. */
  lockRetryDelayMs?: number;
  /** Per-command time limit. Default 10 minutes. */
  timeoutMs?: number;
}

interface GitRunOptions {
  /** Exit codes that are expected answers rather than failures (e.g. `merge-base --is-ancestor`). */
  allowedExitCodes?: readonly number[] | 'any';
  cwd?: string;
  input?: string;
  env?: Record<string, string>;
  /** Extra `-c key=value` settings for this one command. */
  config?: Record<string, string>;
}

/** A candidate's commits were refused on import (shape of the bundle or of its history). */
export class CandidateRefused extends HillclimbError {
  override name = 'CandidateRefused';
  constructor(message: string) {
    super(message, { exitCode: ExitCode.badInput });
  }
}

/** A git command failed. Carries the command, its exit code and what git printed. */
export class GitError extends HillclimbError {
  override name = 'GitError';
  readonly commandLine: string;
  readonly gitExitCode: number | null;
  readonly stderr: string;

  constructor(commandLine: string, result: ExecResult, hint?: string) {
    const lines = (result.stderr || result.stdout).trim().split('\n');
    // git puts the cause first ("fatal: …") and advice after it: keep both ends.
    const shown = lines.length > 6 ? [...lines.slice(0, 3), '…', ...lines.slice(-2)] : lines;
    const tail = shown.join('\n  ').trim();
    super(`${commandLine}: exit code ${result.exitCode}${tail ? `\n  ${tail}` : ''}`, {
      hint,
      exitCode: ExitCode.infra,
    });
    this.commandLine = commandLine;
    this.gitExitCode = result.exitCode;
    this.stderr = result.stderr;
  }
}

/** One entry of `git status --porcelain=v2`. */
export interface StatusEntry {
  kind: 'tracked' | 'renamed' | 'unmerged' | 'untracked';
  path: string;
  /** The old path of a rename or copy. */
  origPath?: string;
  /** Status letter in the index ('.' = unchanged; '?' for untracked). */
  index: string;
  /** Status letter in the working tree ('.' = unchanged; '?' for untracked). */
  worktree: string;
}

/** One changed file between two commits (`git diff --name-status -M`). */
export interface FileChange {
  /** A added, M modified, D deleted, T type changed, R renamed, C copied. */
  status: 'A' | 'M' | 'D' | 'T' | 'R' | 'C' | 'U' | 'X';
  path: string;
  /** For R and C: where it came from. */
  oldPath?: string;
}

export interface NumstatEntry {
  path: string;
  oldPath?: string;
  /** Lines added and deleted; undefined for a binary file. */
  added: number | undefined;
  deleted: number | undefined;
}

export interface StashEntry {
  sha: string;
  /** Its current reflog selector, e.g. `stash@{1}`: valid only until the next stash operation. */
  selector: string;
  message: string;
}

export type StashRestore =
  | { restored: true; sha: string }
  /** The stash was kept (in the stash list and pinned) and the working tree left as it was. */
  | { restored: false; sha: string; reason: string };

export type MergeResult =
  | { status: 'merged' | 'up-to-date'; head: string }
  /** The merge was aborted; the tree is back where it was. */
  | { status: 'conflict'; paths: string[] };

export type RevertResult =
  | { status: 'reverted'; head: string }
  /** The revert was aborted; the tree is back where it was. */
  | { status: 'conflict'; paths: string[] };

export interface CommitOptions {
  /** Sets committer (and author, unless `author` is given) through `-c user.name/user.email`. */
  identity?: Identity;
  author?: Identity;
  allowEmpty?: boolean;
  /** Author and committer date (ISO 8601); with the same parent, tree and message the SHA is then reproducible. */
  date?: string;
}

export class Git {
  /** Worktrees this instance added; `close()` removes them. */
  private readonly createdWorktrees = new Set<string>();
  private readonly secrets: string[];

  private constructor(
    /** The top of the work tree. */
    readonly root: string,
    /** Absolute path of the git binary. */
    readonly binary: string,
    private readonly opts: GitOptions,
  ) {
    this.secrets = secretsFromEnv();
  }

  /** Open the work tree containing `dir`. Throws a HillclimbError when git is missing or `dir` is not in one. */
  static async create(dir: string, opts: GitOptions = {}): Promise<Git> {
    const binary = opts.binary ?? findOnPath('git');
    if (!binary) {
      throw new HillclimbError('git not found on PATH', { hint: 'install git', exitCode: ExitCode.infra });
    }
    const cwd = resolve(dir);
    const probe = await runGit(['rev-parse', '--is-inside-work-tree', '--show-toplevel'], {
      binary,
      cwd,
      allowedExitCodes: 'any',
    }).catch((e: unknown) => {
      throw new HillclimbError(`cannot run git in ${cwd}: ${(e as Error).message}`, {
        exitCode: ExitCode.infra,
      });
    });
    const [inside, top] = probe.stdout.trim().split('\n');
    if (probe.exitCode !== 0 || inside !== 'true' || !top) {
      throw new HillclimbError(`${cwd} is not inside a git work tree`, {
        hint: 'run hillclimb from a clone of the repository (git init or git clone first)',
        exitCode: ExitCode.badInput,
      });
    }
    return new Git(top, binary, opts);
  }

  /**
   * Clone `source` (a path or URL) into `dest` and open the clone. Used by the demo to work on a
   * scratch copy, so the user's checkout never changes.
   */
  static async clone(source: string, dest: string, opts: GitOptions = {}): Promise<Git> {
    const binary = opts.binary ?? findOnPath('git');
    if (!binary)
      throw new HillclimbError('git not found on PATH', { hint: 'install git', exitCode: ExitCode.infra });
    mkdirSync(dirname(resolve(dest)), { recursive: true });
    await runGit(['clone', '--quiet', '--no-hardlinks', '--', source, resolve(dest)], {
      binary,
      ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
    });
    return Git.create(dest, opts);
  }

  /**
   * A repository of its own for an agent at `dest`, checked out (detached) at `commit` of this one. It
   * borrows this repository's objects read-only (alternates) and keeps its own `.git`: the agent may
   * commit there and change anything under it, and none of it is this repository's config, hooks or refs.
   */
  async cloneForAgent(dest: string, commit: string): Promise<void> {
    assertSha(commit);
    rmSync(dest, { recursive: true, force: true });
    mkdirSync(dirname(resolve(dest)), { recursive: true });
    await this.git(['clone', '--quiet', '--shared', '--no-checkout', '--', this.root, resolve(dest)]);
    await this.git(['-C', resolve(dest), 'checkout', '--quiet', '--detach', commit], {
      config: { 'advice.detachedHead': 'false' },
    });
  }

  /** The absolute path of this repository's object folder (shared by its worktrees). */
  async objectsDir(): Promise<string> {
    return (await this.git(['rev-parse', '--path-format=absolute', '--git-path', 'objects'])).stdout.trim();
  }

  /**
   * Messages of the commits in `base..head`, oldest first, read from another repository's object folder
   * without copying its objects or reading anything else of it (its config and hooks could be an
   * agent's). Undefined when the objects are not there or not readable.
   */
  async messagesVia(objectsDir: string, base: string, head: string): Promise<string[] | undefined> {
    assertSha(base);
    assertSha(head);
    const r = await this.git(['log', '--reverse', '-z', '--format=%B', `${base}..${head}`, '--'], {
      env: { GIT_ALTERNATE_OBJECT_DIRECTORIES: resolve(objectsDir) },
      allowedExitCodes: 'any',
    });
    if (r.exitCode !== 0) return undefined;
    return r.stdout
      .split('\0')
      .map((m) => m.trim())
      .filter((m) => m !== '');
  }

  // ---------------------------------------------------------------------------------------------
  // Reading state

  /** The full SHA of HEAD. */
  async head(): Promise<string> {
    return this.revParse('HEAD');
  }

  /** The full SHA of the commit `ref` names. Throws when it names none. */
  async revParse(ref: string): Promise<string> {
    const sha = await this.tryRevParse(ref);
    if (sha === undefined) {
      throw new HillclimbError(`git: "${ref}" does not name a commit in ${this.root}`, {
        exitCode: ExitCode.badInput,
      });
    }
    return sha;
  }

  /** Like revParse, but undefined when `ref` names no commit. */
  async tryRevParse(ref: string): Promise<string | undefined> {
    assertRevision(ref);
    const r = await this.git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], {
      allowedExitCodes: [0, 1, 128],
    });
    return r.exitCode === 0 ? r.stdout.trim() : undefined;
  }

  /** The checked-out branch's short name; undefined on a detached HEAD. */
  async currentBranch(): Promise<string | undefined> {
    const r = await this.git(['symbolic-ref', '--quiet', '--short', 'HEAD'], { allowedExitCodes: [0, 1] });
    return r.exitCode === 0 ? r.stdout.trim() : undefined;
  }

  /** The URL of remote `name`; undefined when there is no such remote. */
  async remoteUrl(name: string): Promise<string | undefined> {
    assertRevision(name);
    const r = await this.git(['config', '--get', `remote.${name}.url`], { allowedExitCodes: [0, 1] });
    return r.exitCode === 0 ? r.stdout.trim() || undefined : undefined;
  }

  /** The branch remote `name`'s HEAD points at (its default branch, as last fetched); undefined if unknown. */
  async remoteDefaultBranch(name: string): Promise<string | undefined> {
    assertRevision(name);
    const r = await this.git(['symbolic-ref', '--quiet', '--short', `refs/remotes/${name}/HEAD`], {
      allowedExitCodes: [0, 1, 128],
    });
    const ref = r.exitCode === 0 ? r.stdout.trim() : '';
    return ref.startsWith(`${name}/`) ? ref.slice(name.length + 1) : undefined;
  }

  /** Changed, staged and untracked files (ignored files excluded), from `status --porcelain=v2 -z`. */
  async status(): Promise<StatusEntry[]> {
    const r = await this.git(['status', '--porcelain=v2', '-z', '--untracked-files=all'], {
      // A status must not take index.lock to refresh stat info: an agent may be running git too.
      env: { GIT_OPTIONAL_LOCKS: '0' },
    });
    return parsePorcelainV2(r.stdout);
  }

  async isClean(): Promise<boolean> {
    return (await this.status()).length === 0;
  }

  /** Commits reachable from `b` but not from `a`, oldest first. */
  async commitsBetween(a: string, b: string): Promise<string[]> {
    assertRevision(a);
    assertRevision(b);
    const r = await this.git(['rev-list', '--reverse', `${a}..${b}`, '--']);
    return r.stdout.split('\n').filter((l) => l !== '');
  }

  /** Files that differ between two commits, with renames and copies detected. */
  async changes(a: string, b: string): Promise<FileChange[]> {
    assertRevision(a);
    assertRevision(b);
    const r = await this.git([
      'diff',
      '--name-status',
      '-z',
      '-M',
      '--no-ext-diff',
      '--no-textconv',
      a,
      b,
      '--',
    ]);
    return parseNameStatus(r.stdout);
  }

  /** Every path that differs between two commits, sorted; a rename counts as both its paths. */
  async changedPaths(a: string, b: string): Promise<string[]> {
    const paths = new Set<string>();
    for (const c of await this.changes(a, b)) {
      paths.add(c.path);
      if (c.oldPath !== undefined) paths.add(c.oldPath);
    }
    return [...paths].sort();
  }

  /** The unified diff between two commits (optionally limited to paths), as text. */
  async diff(
    a: string,
    b: string,
    opts: { paths?: readonly string[]; context?: number; fullIndex?: boolean } = {},
  ): Promise<string> {
    assertRevision(a);
    assertRevision(b);
    const args = ['diff', '--no-ext-diff', '--no-textconv', '--no-color', '-M'];
    if (opts.context !== undefined) args.push(`--unified=${opts.context}`);
    // Whole blob ids on the `index` lines (the novelty fingerprint of a binary file is its blobs).
    if (opts.fullIndex) args.push('--full-index');
    args.push(a, b, '--', ...(opts.paths ?? []));
    return (await this.git(args)).stdout;
  }

  /** Lines added and deleted per file between two commits. */
  async numstat(a: string, b: string): Promise<NumstatEntry[]> {
    assertRevision(a);
    assertRevision(b);
    const r = await this.git(['diff', '--numstat', '-z', '-M', '--no-ext-diff', '--no-textconv', a, b, '--']);
    return parseNumstat(r.stdout);
  }

  /** Whether `a` is an ancestor of (or equal to) `b`. */
  async isAncestor(a: string, b: string): Promise<boolean> {
    assertRevision(a);
    assertRevision(b);
    const r = await this.git(['merge-base', '--is-ancestor', a, b], { allowedExitCodes: [0, 1] });
    return r.exitCode === 0;
  }

  /**
   * `b` merged into `a` from their merge base (three-way, `git merge-tree --write-tree`), built from
   * objects alone: the tree, or the paths both sides changed in ways that conflict.
   */
  async mergeTree(a: string, b: string): Promise<{ tree: string } | { conflicts: string[] }> {
    assertRevision(a);
    assertRevision(b);
    const r = await this.git(['merge-tree', '--write-tree', '-z', '--name-only', '--no-messages', a, b], {
      allowedExitCodes: [0, 1],
    });
    // <tree> NUL, then (on a conflict) each conflicted path NUL, an empty entry ending the list.
    const [tree, ...rest] = r.stdout.split('\0');
    if (r.exitCode === 0) return { tree: tree!.trim() };
    const end = rest.indexOf('');
    return { conflicts: [...new Set(end === -1 ? rest : rest.slice(0, end))].sort() };
  }

  /**
   * A content hash of a commit's tree, or of just some paths in it (e.g. `kernels/harness` for the
   * "harness hash" in provenance). Without paths: the git tree object id. With paths: sha256 of the
   * recursive `ls-tree` listing (mode, type, object id, path) of those paths, so it changes exactly when a
   * file under them is added, removed, renamed, re-moded or edited. Paths that do not exist add nothing.
   */
  async treeHash(commit: string, paths?: readonly string[]): Promise<string> {
    assertRevision(commit);
    if (paths === undefined || paths.length === 0) {
      return (await this.git(['rev-parse', '--verify', `${commit}^{tree}`])).stdout.trim();
    }
    const r = await this.git(['ls-tree', '-r', '-z', '--full-tree', commit, '--', ...paths]);
    return createHash('sha256').update(r.stdout).digest('hex');
  }

  /** A file's content at a commit; undefined when the file does not exist there. */
  async show(commit: string, path: string): Promise<string | undefined> {
    assertRevision(commit);
    const r = await this.git(['rev-parse', '--verify', '--quiet', `${commit}:${path}`], {
      allowedExitCodes: [0, 1, 128],
    });
    if (r.exitCode !== 0) return undefined;
    return (await this.git(['cat-file', 'blob', r.stdout.trim()])).stdout;
  }

  /**
   * Whether git accepts `name` as a branch name (`git check-ref-format --branch`): for names hillclimb
   * reads but did not make (`forge.base`); names it creates go through assertBranchName.
   */
  async checkBranchName(name: string): Promise<boolean> {
    if (name.startsWith('-')) return false;
    const r = await this.git(['check-ref-format', '--branch', name], { allowedExitCodes: [0, 1, 128] });
    return r.exitCode === 0;
  }

  // ---------------------------------------------------------------------------------------------
  // Stash by SHA

  /**
   * Stash every change, untracked files included, and return the stash commit's SHA (undefined when the
   * tree was clean). The SHA is read from `refs/stash` immediately after `stash push`, before anything
   * else can run in the tree, and the commit is pinned under refs/hillclimb/stashes/<sha>. From then on
   * the stash is addressed only by that SHA, never by `stash@{n}`: if the agent later stashes (shifting
   * every index), drops or even clears the stash list, apply/drop still find this exact commit and the
   * pin keeps it from garbage collection.
   */
  async stashChanges(message: string): Promise<string | undefined> {
    if (await this.isClean()) return undefined;
    const before = await this.stashTip();
    await this.git(['stash', 'push', '--include-untracked', '-m', message]);
    const sha = await this.stashTip();
    if (sha === undefined || sha === before) return undefined;
    await this.git([
      'update-ref',
      '-m',
      `hillclimb: pin stash "${message}"`,
      `${STASH_PIN_PREFIX}${sha}`,
      sha,
    ]);
    this.opts.logger?.debug(`stashed working-tree changes as ${sha}`);
    return sha;
  }

  /** The stash list, newest first. */
  async listStashes(): Promise<StashEntry[]> {
    const r = await this.git(['stash', 'list', '--format=%H%x1f%gd%x1f%gs']);
    return r.stdout
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => {
        const [sha = '', selector = '', message = ''] = l.split('\x1f');
        return { sha, selector, message };
      });
  }

  /**
   * Re-apply a stash by SHA. First a dry run in a temporary detached worktree at HEAD: if the stash does
   * not apply cleanly there, nothing is touched and the stash is kept ("not restored", with the SHA so a
   * person can apply it by hand). The working tree must also be clean, so the stash cannot mix with other
   * changes. Only after both checks is it applied here and dropped. A stash is never lost.
   */
  async restoreStash(sha: string): Promise<StashRestore> {
    assertSha(sha);
    const probe = await this.probeStashApply(sha);
    if (probe !== undefined) {
      return { restored: false, sha, reason: `does not apply cleanly on ${await this.head()}: ${probe}` };
    }
    if (!(await this.isClean())) {
      return { restored: false, sha, reason: 'the working tree has uncommitted changes' };
    }
    const r = await this.git(['stash', 'apply', '--quiet', sha], { allowedExitCodes: 'any' });
    if (r.exitCode !== 0) {
      // The dry run passed, so this is rare (e.g. a file appeared meanwhile). Undo the partial apply.
      await this.git(['reset', '--merge'], { allowedExitCodes: [0, 128] });
      return { restored: false, sha, reason: firstLines(r.stderr || r.stdout) };
    }
    await this.dropStash(sha);
    this.opts.logger?.debug(`restored stash ${sha}`);
    return { restored: true, sha };
  }

  /**
   * Forget a stash: drop it from the stash list (its index is looked up by SHA now, since indices shift)
   * and remove its pin. Returns false when it was neither listed nor pinned.
   */
  async dropStash(sha: string): Promise<boolean> {
    assertSha(sha);
    let found = false;
    const entry = (await this.listStashes()).find((s) => s.sha === sha);
    if (entry) {
      await this.git(['stash', 'drop', '--quiet', entry.selector]);
      found = true;
    }
    const pin = `${STASH_PIN_PREFIX}${sha}`;
    const pinned = await this.git(['rev-parse', '--verify', '--quiet', pin], { allowedExitCodes: [0, 1] });
    if (pinned.exitCode === 0) {
      await this.git(['update-ref', '-d', pin]);
      found = true;
    }
    return found;
  }

  private async stashTip(): Promise<string | undefined> {
    const r = await this.git(['rev-parse', '--verify', '--quiet', 'refs/stash'], {
      allowedExitCodes: [0, 1],
    });
    return r.exitCode === 0 ? r.stdout.trim() : undefined;
  }

  /** Apply the stash in a throwaway worktree at HEAD. Returns git's complaint, or undefined if it applied. */
  private async probeStashApply(sha: string): Promise<string | undefined> {
    const dir = mkdtempSync(join(tmpdir(), 'hc-stash-probe-'));
    const probe = join(dir, 'probe');
    try {
      await this.git(['worktree', 'add', '--detach', '--quiet', probe, 'HEAD']);
      const r = await this.git(['stash', 'apply', '--quiet', sha], { cwd: probe, allowedExitCodes: 'any' });
      return r.exitCode === 0 ? undefined : firstLines(r.stderr || r.stdout) || `exit code ${r.exitCode}`;
    } finally {
      await this.git(['worktree', 'remove', '--force', probe], { allowedExitCodes: [0, 128] });
      await this.git(['worktree', 'prune']);
      rmSync(dir, { recursive: true, force: true });
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Worktrees (A/B arms)

  /** Check out `commit` (detached) in a new worktree at `path`. Removed again by `close()`. */
  async addWorktree(path: string, commit: string): Promise<{ path: string; commit: string }> {
    const abs = resolve(path);
    const sha = await this.revParse(commit);
    await this.git(['worktree', 'add', '--detach', '--quiet', '--', abs, sha]);
    this.createdWorktrees.add(abs);
    return { path: abs, commit: sha };
  }

  async removeWorktree(path: string): Promise<void> {
    const abs = resolve(path);
    const r = await this.git(['worktree', 'remove', '--force', '--', abs], { allowedExitCodes: [0, 128] });
    if (r.exitCode !== 0) {
      // Already deleted from disk: forget its administrative files instead.
      rmSync(abs, { recursive: true, force: true });
      await this.git(['worktree', 'prune']);
    }
    this.createdWorktrees.delete(abs);
  }

  /** Undo what this instance created: remove every worktree it added. Safe to call more than once. */
  async close(): Promise<void> {
    const problems: string[] = [];
    for (const path of [...this.createdWorktrees]) {
      try {
        await this.removeWorktree(path);
      } catch (e) {
        problems.push(`${path}: ${(e as Error).message}`);
      }
    }
    if (problems.length > 0) {
      throw new HillclimbError(`could not remove worktrees:\n  ${problems.join('\n  ')}`, {
        exitCode: ExitCode.infra,
      });
    }
  }

  /** Forget worktrees whose folders were deleted behind git's back (e.g. by a killed run). */
  async pruneWorktrees(): Promise<void> {
    await this.git(['worktree', 'prune']);
  }

  // ---------------------------------------------------------------------------------------------
  // Moving commits between jobs

  /** Point a ref (e.g. refs/hillclimb/candidates/<run>/i003) at a commit, creating it if needed. */
  async updateRef(ref: string, commit: string): Promise<void> {
    assertRefName(ref);
    await this.git(['update-ref', ref, await this.revParse(commit)]);
  }

  /** Write the commits `base..ref` to a git bundle file, so another job can fetch them with their SHAs. */
  async createBundle(file: string, ref: string, base: string): Promise<void> {
    assertRefName(ref);
    assertRevision(base);
    mkdirSync(dirname(resolve(file)), { recursive: true });
    await this.git(['bundle', 'create', '--quiet', resolve(file), ref, `^${base}`]);
  }

  /** Fetch `ref` from a bundle file into the same ref here. The bundle's prerequisites must be present. */
  async fetchBundle(file: string, ref: string): Promise<void> {
    assertRefName(ref);
    await this.git(['fetch', '--quiet', '--no-tags', resolve(file), `+${ref}:${ref}`]);
  }

  /**
   * Take a candidate's commits from a git bundle that untrusted code may have shaped (another job's
   * artifact). The bundle must name exactly `ref`, need nothing but `champion`, and (when given) point at
   * `expectedHead`. Its objects land in a throwaway repository first; there the commits must form one
   * line of single-parent commits on top of the champion, changing only regular files. Only then is the
   * head fetched into this repository, which copies the objects it reaches and nothing else of the
   * bundle (extra commits, blobs, refs stay behind). Throws CandidateRefused naming the problem.
   */
  async importBundle(
    file: string,
    opts: { ref: string; champion: string; expectedHead?: string; maxCommits?: number },
  ): Promise<{ head: string; commits: string[] }> {
    assertRefName(opts.ref);
    assertSha(opts.champion);
    const refuse = (why: string) => new CandidateRefused(`${file}: ${why}`);
    const header = parseBundleHeader(readBundleHeader(file));
    if (!header) throw refuse('not a git bundle (v2 or v3)');
    if (header.refs.length !== 1 || header.refs[0]!.ref !== opts.ref) {
      throw refuse(
        `must hold exactly ${opts.ref}; it holds ${header.refs.map((r) => r.ref).join(', ') || 'nothing'}`,
      );
    }
    const head = header.refs[0]!.sha;
    if (opts.expectedHead !== undefined && head !== opts.expectedHead) {
      throw refuse(`its head ${head.slice(0, 12)} is not the expected ${opts.expectedHead.slice(0, 12)}`);
    }
    const foreign = header.prerequisites.filter((p) => p !== opts.champion);
    if (foreign.length > 0) throw refuse(`it needs commits other than the champion: ${foreign.join(', ')}`);

    const quarantine = mkdtempSync(join(tmpdir(), 'hc-import-'));
    try {
      await this.git(['init', '--quiet', '--bare', '--', quarantine]);
      writeFileSync(join(quarantine, 'objects', 'info', 'alternates'), `${await this.objectsDir()}\n`);
      const q = ['--git-dir', quarantine];
      const imported = 'refs/hillclimb/import';
      await this.git([...q, 'fetch', '--quiet', '--no-tags', resolve(file), `${opts.ref}:${imported}`]);
      const max = opts.maxCommits ?? 100;
      const lines = (
        await this.git([
          ...q,
          'rev-list',
          '--parents',
          `--max-count=${max + 1}`,
          imported,
          `^${opts.champion}`,
          '--',
        ])
      ).stdout
        .split('\n')
        .filter((l) => l !== '');
      if (lines.length === 0) throw refuse('it adds no commit on top of the champion');
      if (lines.length > max) throw refuse(`more than ${max} commits`);
      // Newest first: each commit's only parent is the next line's commit; the last one's is the champion.
      const chain = lines.map((l) => l.split(' '));
      for (const [i, [sha, ...parents]] of chain.entries()) {
        const expected = i + 1 < chain.length ? chain[i + 1]![0] : opts.champion;
        if (parents.length !== 1 || parents[0] !== expected) {
          throw refuse(
            `commit ${sha!.slice(0, 12)} is not a single-parent commit on the line from the champion`,
          );
        }
        const raw = (
          await this.git([...q, 'diff-tree', '-r', '-z', '--raw', '--no-renames', parents[0]!, sha!, '--'])
        ).stdout;
        for (const change of parseRawDiff(raw)) {
          if (!REGULAR_MODES.has(change.newMode)) {
            throw refuse(
              `commit ${sha!.slice(0, 12)} makes ${change.path} a ${describeMode(change.newMode)}`,
            );
          }
        }
      }
      await this.git(['fetch', '--quiet', '--no-tags', quarantine, `+${imported}:${opts.ref}`]);
      return { head, commits: chain.map(([sha]) => sha!).reverse() };
    } finally {
      rmSync(quarantine, { recursive: true, force: true });
    }
  }

  /** Changes between two commits that are not regular files: links, submodules (never a candidate's). */
  async nonRegularChanges(a: string, b: string): Promise<Array<{ path: string; mode: string }>> {
    assertRevision(a);
    assertRevision(b);
    const raw = (await this.git(['diff', '--raw', '-z', '--no-renames', '--no-ext-diff', a, b, '--'])).stdout;
    return parseRawDiff(raw)
      .filter((c) => !REGULAR_MODES.has(c.newMode))
      .map((c) => ({ path: c.path, mode: describeMode(c.newMode) }));
  }

  /** A commit's parents, in order. */
  async parents(commit: string): Promise<string[]> {
    assertRevision(commit);
    const r = await this.git(['rev-list', '--parents', '-n', '1', commit, '--']);
    return r.stdout.trim().split(' ').slice(1);
  }

  /** The commits `base..head` as mailbox patches (git format-patch --stdout), for humans and `git am`. */
  async formatPatch(base: string, head: string): Promise<string> {
    assertRevision(base);
    assertRevision(head);
    return (await this.git(['format-patch', '--stdout', '--no-signature', `${base}..${head}`])).stdout;
  }

  /** The committer date of a commit, ISO 8601 (strict). */
  async commitDate(commit: string): Promise<string> {
    assertRevision(commit);
    return (await this.git(['log', '-1', '--format=%cI', commit, '--'])).stdout.trim();
  }

  /** The first line of a commit message. */
  async subject(commit: string): Promise<string> {
    assertRevision(commit);
    return (await this.git(['log', '-1', '--format=%s', commit, '--'])).stdout.trim();
  }

  /** Every file path in a commit's tree, sorted (for hashing the protected paths matched by globs). */
  async listFiles(commit: string): Promise<Array<{ path: string; blob: string }>> {
    assertRevision(commit);
    const r = await this.git(['ls-tree', '-r', '-z', '--full-tree', commit]);
    return r.stdout
      .split('\0')
      .filter((l) => l !== '')
      .map((l) => {
        const [meta, path] = l.split('\t') as [string, string];
        return { path, blob: meta.split(' ')[2]! };
      })
      .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  // ---------------------------------------------------------------------------------------------
  // Changing history

  /** `git apply --index` a patch file (or only check that it applies). */
  async applyPatch(file: string, opts: { check?: boolean } = {}): Promise<void> {
    const args = ['apply', '--index', '--whitespace=nowarn'];
    if (opts.check) args.push('--check');
    args.push('--', resolve(file));
    await this.git(args);
  }

  /** Stage every change in the work tree, untracked files included, except the `exclude` paths. */
  async stageAll(opts: { exclude?: readonly string[] } = {}): Promise<void> {
    const excluded = (opts.exclude ?? [])
      .map((p) => relative(this.root, resolve(this.root, p)))
      .filter((rel) => rel !== '' && !rel.startsWith('..') && !isAbsolute(rel))
      .map((rel) => `:(top,literal,exclude)${rel}`);
    await this.git(['add', '--all', '--', ':/', ...excluded]);
  }

  /** Whether the index differs from HEAD (something is staged). */
  async hasStagedChanges(): Promise<boolean> {
    const r = await this.git(['diff', '--cached', '--quiet', '--no-ext-diff'], { allowedExitCodes: [0, 1] });
    return r.exitCode === 1;
  }

  /** Commit what is staged and return the new HEAD. The message goes through stdin, verbatim. */
  async commit(message: string, opts: CommitOptions = {}): Promise<string> {
    const args = ['commit', '--quiet', '--no-gpg-sign', '--file=-'];
    if (opts.allowEmpty) args.push('--allow-empty');
    if (opts.author) args.push(`--author=${formatIdentity(opts.author)}`);
    const env = opts.date ? { GIT_AUTHOR_DATE: opts.date, GIT_COMMITTER_DATE: opts.date } : undefined;
    await this.git(args, { input: message, config: identityConfig(opts.identity), ...(env ? { env } : {}) });
    return this.head();
  }

  /**
   * A commit with `tree` of `treeOf` on the single parent `parent`, by the harness, dated `date`: the
   * same inputs give the same SHA on any machine. Turns a person's change (a PR's merge commit) into one
   * commit on its base, the shape every candidate has.
   */
  async commitTreeOf(treeOf: string, parent: string, message: string, date: string): Promise<string> {
    assertRevision(treeOf);
    assertRevision(parent);
    const r = await this.git(['commit-tree', `${treeOf}^{tree}`, '-p', parent, '-F', '-'], {
      input: message,
      env: identityEnv(HARNESS_IDENTITY, date),
    });
    return r.stdout.trim();
  }

  /**
   * A file's content at a commit, read from the tree — only when it is a regular file there (a link in
   * a candidate's tree must never lead the harness to read what it points at). Undefined when absent.
   */
  async regularFileAt(commit: string, path: string): Promise<string | undefined> {
    assertRevision(commit);
    const entry = (await this.git(['ls-tree', '-z', commit, '--', path])).stdout.split('\0')[0] ?? '';
    if (entry === '') return undefined;
    const [meta] = entry.split('\t');
    const [mode, type, oid] = (meta ?? '').split(' ');
    if (type !== 'blob' || (mode !== '100644' && mode !== '100755')) {
      throw new HillclimbError(`${path} at ${commit.slice(0, 12)} is not a regular file (mode ${mode})`, {
        exitCode: ExitCode.badInput,
      });
    }
    return (await this.git(['cat-file', 'blob', oid!])).stdout;
  }

  /**
   * A commit on `parent` that sets one file to `content`, built from git objects alone: no checkout,
   * no working-tree read or write (nothing a link in the tree could redirect). Same inputs, same SHA.
   */
  async commitFile(
    parent: string,
    path: string,
    content: string,
    message: string,
    opts: { identity: Identity; date: string },
  ): Promise<string> {
    assertRevision(parent);
    const blob = (
      await this.git(['hash-object', '-w', '--no-filters', '--stdin'], { input: content })
    ).stdout.trim();
    const scratch = mkdtempSync(join(tmpdir(), 'hc-index-'));
    try {
      const env = { GIT_INDEX_FILE: join(scratch, 'index') };
      await this.git(['read-tree', parent], { env });
      await this.git(['update-index', '--add', '--cacheinfo', `100644,${blob},${path}`], { env });
      const tree = (await this.git(['write-tree'], { env })).stdout.trim();
      assertIdentity(opts.identity);
      const r = await this.git(['commit-tree', tree, '-p', parent, '-F', '-'], {
        input: message,
        env: identityEnv(opts.identity, opts.date),
      });
      return r.stdout.trim();
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }

  /** Revert one commit with a new commit by `identity` (default: the harness). Aborts on conflict. */
  async revert(commit: string, identity: Identity = HARNESS_IDENTITY): Promise<RevertResult> {
    const sha = await this.revParse(commit);
    const r = await this.git(['revert', '--no-edit', '--no-gpg-sign', sha], {
      allowedExitCodes: 'any',
      config: identityConfig(identity),
    });
    if (r.exitCode === 0) return { status: 'reverted', head: await this.head() };
    const paths = await this.unmergedPaths();
    await this.git(['revert', '--abort'], { allowedExitCodes: [0, 128] });
    if (paths.length > 0) return { status: 'conflict', paths };
    throw new GitError(this.shown(['revert', sha]), r);
  }

  /**
   * Move the current branch and the working tree to `commit`, discarding every uncommitted change.
   * The only safe place: the loop's own checkout of its own loop branch, after the tree's changes were
   * stashed by SHA (or the tree was verified clean) and the commits being discarded are recorded
   * elsewhere (an iteration branch, a patch in the evidence bundle). Never on a user's branch or tree.
   */
  async resetHard(commit: string): Promise<void> {
    const sha = await this.revParse(commit);
    await this.git(['reset', '--hard', '--quiet', sha]);
  }

  /**
   * Create (or with `force`, move) a branch at `commit`. The name must pass the allow-list of
   * src/util/branch-name.ts (which only names git accepts pass).
   */
  async createBranch(name: string, commit: string, opts: { force?: boolean } = {}): Promise<void> {
    assertBranchName(name);
    const sha = await this.revParse(commit);
    const args = ['branch', '--no-track'];
    if (opts.force) args.push('--force');
    args.push('--', name, sha);
    await this.git(args);
  }

  async deleteBranch(name: string, opts: { force?: boolean } = {}): Promise<void> {
    if (!(await this.checkBranchName(name))) {
      throw new HillclimbError(`invalid branch name "${name}"`, { exitCode: ExitCode.badInput });
    }
    await this.git(['branch', opts.force ? '-D' : '-d', '--', name]);
  }

  /** Check out a branch, or a commit detached. */
  async checkout(ref: string, opts: { detach?: boolean } = {}): Promise<void> {
    assertRevision(ref);
    await this.git(opts.detach ? ['switch', '--quiet', '--detach', ref] : ['switch', '--quiet', ref]);
  }

  /** Fetch one branch of a remote (name, URL or path); returns the fetched commit (FETCH_HEAD). */
  async fetch(remote: string, branch: string): Promise<string> {
    assertRevision(remote);
    if (!(await this.checkBranchName(branch))) {
      throw new HillclimbError(`invalid branch name "${branch}"`, { exitCode: ExitCode.badInput });
    }
    await this.git(['fetch', '--quiet', '--no-tags', '--', remote, `refs/heads/${branch}`]);
    return this.revParse('FETCH_HEAD');
  }

  /**
   * Merge `ref` into the current branch with a harness-identity merge commit. On conflict the merge is
   * aborted (the tree is left as before) and the conflicted paths are returned.
   */
  async merge(ref: string, identity: Identity = HARNESS_IDENTITY): Promise<MergeResult> {
    const sha = await this.revParse(ref);
    const before = await this.head();
    const r = await this.git(['merge', '--no-edit', '--no-gpg-sign', sha], {
      allowedExitCodes: 'any',
      config: identityConfig(identity),
    });
    if (r.exitCode === 0) {
      const head = await this.head();
      return { status: head === before ? 'up-to-date' : 'merged', head };
    }
    const paths = await this.unmergedPaths();
    await this.git(['merge', '--abort'], { allowedExitCodes: [0, 128] });
    if (paths.length > 0) return { status: 'conflict', paths };
    throw new GitError(this.shown(['merge', sha]), r);
  }

  private async unmergedPaths(): Promise<string[]> {
    const r = await this.git(['diff', '--name-only', '-z', '--diff-filter=U'], {
      allowedExitCodes: [0, 128],
    });
    return r.stdout.split('\0').filter((p) => p !== '');
  }

  // ---------------------------------------------------------------------------------------------
  // The funnel

  private shown(args: readonly string[]): string {
    return displayCommand('git', args);
  }

  private async git(args: readonly string[], opts: GitRunOptions = {}): Promise<ExecResult> {
    const allowed = opts.allowedExitCodes ?? [0];
    const retries = this.opts.lockRetries ?? DEFAULT_LOCK_RETRIES;
    for (let attempt = 0; ; attempt++) {
      const r = await runGit(args, {
        binary: this.binary,
        cwd: opts.cwd ?? this.root,
        config: { ...HARDENING_CONFIG, ...opts.config },
        ...(opts.env ? { env: opts.env } : {}),
        ...(opts.input !== undefined ? { input: opts.input } : {}),
        allowedExitCodes: 'any',
        redact: this.secrets,
        timeoutMs: this.opts.timeoutMs ?? DEFAULT_GIT_TIMEOUT_MS,
      });
      if (allowed === 'any' || (r.exitCode !== null && allowed.includes(r.exitCode))) return r;
      if (attempt < retries && LOCK_CONTENTION.test(r.stderr)) {
        this.opts.logger?.debug(
          `${this.shown(args)}: another git process holds a lock; retry ${attempt + 1}/${retries}`,
        );
        await sleep(this.opts.lockRetryDelayMs ?? DEFAULT_LOCK_RETRY_DELAY_MS);
        continue;
      }
      throw new GitError(
        this.shown(args),
        r,
        LOCK_CONTENTION.test(r.stderr) ? 'another git process kept a lock; is one still running?' : undefined,
      );
    }
  }
}

// -----------------------------------------------------------------------------------------------
// Parsers (pure; exported for unit tests)

/** Parse `git status --porcelain=v2 -z` output. */
export function parsePorcelainV2(out: string): StatusEntry[] {
  const records = out.split('\0');
  const entries: StatusEntry[] = [];
  for (let i = 0; i < records.length; i++) {
    const rec = records[i]!;
    if (rec === '') continue;
    const type = rec[0];
    if (type === '?' || type === '!') {
      if (type === '?') entries.push({ kind: 'untracked', path: rec.slice(2), index: '?', worktree: '?' });
      continue;
    }
    if (type === '1') {
      // 1 XY sub mH mI mW hH hI path
      const [xy, path] = [field(rec, 1), rest(rec, 8)];
      entries.push({ kind: 'tracked', path, index: xy[0]!, worktree: xy[1]! });
    } else if (type === '2') {
      // 2 XY sub mH mI mW hH hI Xscore path NUL origPath
      const [xy, path] = [field(rec, 1), rest(rec, 9)];
      const origPath = records[++i] ?? '';
      entries.push({ kind: 'renamed', path, origPath, index: xy[0]!, worktree: xy[1]! });
    } else if (type === 'u') {
      // u XY sub m1 m2 m3 mW h1 h2 h3 path
      const [xy, path] = [field(rec, 1), rest(rec, 10)];
      entries.push({ kind: 'unmerged', path, index: xy[0]!, worktree: xy[1]! });
    }
  }
  return entries;
}

/** Parse `git diff --name-status -z` output. */
export function parseNameStatus(out: string): FileChange[] {
  const tokens = out.split('\0');
  const changes: FileChange[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const status = tokens[i]!;
    if (status === '') continue;
    const letter = status[0] as FileChange['status'];
    if (letter === 'R' || letter === 'C') {
      const oldPath = tokens[++i] ?? '';
      const path = tokens[++i] ?? '';
      changes.push({ status: letter, path, oldPath });
    } else {
      changes.push({ status: letter, path: tokens[++i] ?? '' });
    }
  }
  return changes;
}

/** Parse `git diff --numstat -z` output. */
export function parseNumstat(out: string): NumstatEntry[] {
  const tokens = out.split('\0');
  const entries: NumstatEntry[] = [];
  const count = (s: string | undefined) => (s === undefined || s === '-' ? undefined : Number(s));
  for (let i = 0; i < tokens.length; i++) {
    const head = tokens[i]!;
    if (head === '') continue;
    const [added, deleted, path = ''] = head.split('\t');
    if (path === '') {
      // A rename: "added\tdeleted\t" NUL old NUL new
      const oldPath = tokens[++i] ?? '';
      const newPath = tokens[++i] ?? '';
      entries.push({ path: newPath, oldPath, added: count(added), deleted: count(deleted) });
    } else {
      entries.push({ path, added: count(added), deleted: count(deleted) });
    }
  }
  return entries;
}

/** The n-th space-separated field of a record. */
function field(rec: string, n: number): string {
  return rec.split(' ')[n] ?? '';
}

/** Everything after the first n space-separated fields (paths may contain spaces). */
function rest(rec: string, n: number): string {
  let at = 0;
  for (let k = 0; k < n; k++) at = rec.indexOf(' ', at) + 1;
  return rec.slice(at);
}

function firstLines(text: string, n = 3): string {
  return text.trim().split('\n').slice(0, n).join(' / ');
}

function formatIdentity(id: Identity): string {
  assertIdentity(id);
  return `${id.name} <${id.email}>`;
}

function identityConfig(id: Identity | undefined): Record<string, string> {
  if (!id) return {};
  assertIdentity(id);
  return { 'user.name': id.name, 'user.email': id.email };
}

/** Refuse anything git could read as an option, or that carries control characters. */
function assertRevision(ref: string): void {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we reject
  if (ref === '' || ref.startsWith('-') || /[\x00-\x1f\x7f]/.test(ref)) {
    throw new HillclimbError(`invalid git revision "${ref}"`, { exitCode: ExitCode.badInput });
  }
}

function assertSha(sha: string): void {
  if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(sha)) {
    throw new HillclimbError(`not a full commit SHA: "${sha}"`, { exitCode: ExitCode.badInput });
  }
}

/** A full ref name under refs/, without anything git or a shell could misread. */
function assertRefName(ref: string): void {
  if (
    !/^refs\/[A-Za-z0-9._/-]+$/.test(ref) ||
    ref.includes('..') ||
    ref.endsWith('/') ||
    ref.endsWith('.lock')
  ) {
    throw new HillclimbError(`refusing suspicious ref name ${JSON.stringify(ref)}`, {
      exitCode: ExitCode.badInput,
    });
  }
}

/** Modes a candidate may give a path: a regular file, an executable one, or none (deleted). */
const REGULAR_MODES = new Set(['100644', '100755', '000000']);

function describeMode(mode: string): string {
  return mode === '120000' ? 'symbolic link' : mode === '160000' ? 'submodule' : `mode ${mode} entry`;
}

/** Parse `git diff --raw -z --no-renames` output: `:old new oldsha newsha status\0path\0`. */
export function parseRawDiff(out: string): Array<{ path: string; oldMode: string; newMode: string }> {
  const parts = out.split('\0');
  const changes: Array<{ path: string; oldMode: string; newMode: string }> = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const meta = parts[i]!;
    if (!meta.startsWith(':')) break;
    const [oldMode, newMode] = meta.slice(1).split(' ');
    changes.push({ path: parts[i + 1]!, oldMode: oldMode!, newMode: newMode! });
  }
  return changes;
}

/** The first bytes of a bundle file, enough for its header. */
function readBundleHeader(file: string): string {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(64 * 1024);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return buf.subarray(0, n).toString('latin1');
  } catch {
    return '';
  } finally {
    closeSync(fd);
  }
}

/**
 * A git bundle's header (gitformat-bundle): the signature line, v3 capabilities, prerequisites
 * (`-<sha> <comment>`) and references (`<sha> <refname>`), up to the blank line before the pack.
 * Undefined when the text is not a complete bundle header.
 */
export function parseBundleHeader(
  text: string,
): { prerequisites: string[]; refs: Array<{ sha: string; ref: string }> } | undefined {
  const lines = text.split('\n');
  if (lines[0] !== '# v2 git bundle' && lines[0] !== '# v3 git bundle') return undefined;
  const prerequisites: string[] = [];
  const refs: Array<{ sha: string; ref: string }> = [];
  for (const line of lines.slice(1)) {
    if (line === '') return { prerequisites, refs };
    if (line.startsWith('@')) continue;
    const pre = /^-([0-9a-f]{40}|[0-9a-f]{64})(?: .*)?$/.exec(line);
    if (pre) {
      prerequisites.push(pre[1]!);
      continue;
    }
    const ref = /^([0-9a-f]{40}|[0-9a-f]{64}) (\S+)$/.exec(line);
    if (!ref) return undefined;
    refs.push({ sha: ref[1]!, ref: ref[2]! });
  }
  return undefined;
}
