/**
 * The `local` forge: real branches in a git repository and PR records on disk. It implements the
 * whole Forge contract with GitHub's semantics (find-or-create by head branch, managed labels, one
 * sticky comment per key with stale protection, the same body caps), so the local demo behaves like
 * the real thing. Record layout: ./local-records.ts.
 */

import {
  branchSha,
  foreignCommits,
  type GitOptions,
  remoteBranchSha,
  resolveCommit,
  updateBranch,
  worktreesOnBranch,
} from '../../git/index.js';
import {
  assertBranchName,
  HillclimbError,
  type Logger,
  type WaitingLockOptions,
  withFileLock,
} from '../../util/index.js';
import { ForeignCommitsError } from '../errors.js';
import type {
  CommentStamp,
  Forge,
  PullRequest,
  PullRequestSpec,
  StickyResult,
  UpsertPullRequestResult,
} from '../forge.js';
import { planLabels } from '../labels.js';
import { BODY_CAP_CHARS, capBody, capTitle } from '../limits.js';
import { pushReplacingOwnCommits } from '../push.js';
import { composeStickyBody, decodeStamp, hasStickyMarker, mayOverwrite } from '../sticky.js';
import { type LocalCommentRecord, type LocalPullRecord, LocalRecords } from './local-records.js';

export interface LocalForgeOptions {
  /** The repository whose branches PRs refer to (the project root). */
  repoDir: string;
  /** hillclimb's state folder; records go to `<stateDir>/forge/`. */
  stateDir: string;
  /**
   * A bare repository (path or URL) to push branches to, like a real remote. Default: none, and
   * `pushBranch` moves `refs/heads/<branch>` in the repository itself.
   */
  remote?: string;
  /** Author of the comments this forge writes. Default `hillclimb`. */
  author?: string;
  logger: Logger;
  /** How long a writer waits for the records' lock, and when a holder's lock counts as abandoned. */
  lock?: WaitingLockOptions;
  git?: GitOptions;
}

export const LOCAL_FORGE_AUTHOR = 'hillclimb';
/** A writer holds the records' lock for milliseconds: one ten minutes old was left by a crash. */
const RECORDS_LOCK_STALE_MS = 10 * 60_000;

export class LocalForge implements Forge {
  readonly name = 'local';
  readonly records: LocalRecords;
  private readonly author: string;

  constructor(private readonly opts: LocalForgeOptions) {
    this.records = new LocalRecords(opts.stateDir);
    this.author = opts.author ?? LOCAL_FORGE_AUTHOR;
  }

  async pushBranch(repoDir: string, branch: string, commit: string): Promise<void> {
    const g = this.opts.git;
    assertBranchName(branch);
    const sha = await resolveCommit(repoDir, commit, g);
    const { remote, logger } = this.opts;
    if (remote !== undefined) {
      await pushReplacingOwnCommits(repoDir, remote, branch, sha, g);
      logger.info(`pushed ${branch} → ${sha.slice(0, 12)} to ${remote}`);
      return;
    }
    const current = await branchSha(repoDir, branch, g);
    if (current === sha) {
      logger.info(`branch ${branch} already at ${sha.slice(0, 12)}`);
      return;
    }
    // Like a push to GitHub: never move a branch off commits somebody else made on it.
    if (current !== undefined) {
      const theirs = await foreignCommits(repoDir, current, sha, g);
      if (theirs.length > 0) throw new ForeignCommitsError(branch, repoDir, theirs);
    }
    // Moving a branch under a worktree that has it checked out would leave that worktree inconsistent.
    const busy = await worktreesOnBranch(repoDir, branch, g);
    if (busy.length > 0) {
      throw new HillclimbError(`branch ${branch} is checked out in ${busy.join(', ')}; not moving it`, {
        hint: 'publish from a detached HEAD or another branch, or configure a bare remote for the local forge',
      });
    }
    await updateBranch(repoDir, branch, sha, g);
    logger.info(`branch ${branch} → ${sha.slice(0, 12)}`);
  }

  async upsertPullRequest(spec: PullRequestSpec): Promise<UpsertPullRequestResult> {
    assertBranchName(spec.branch);
    const headSha = await this.headSha(spec.branch);
    if (headSha === undefined) {
      throw new HillclimbError(`branch ${spec.branch} does not exist${this.whereBranchesLive()}`, {
        hint: 'push the branch (Forge.pushBranch) before opening its pull request',
      });
    }
    const title = capTitle(spec.title);
    const body = capBody(spec.body, BODY_CAP_CHARS);
    if (body.truncated) this.warnTruncated(`PR body for ${spec.branch}`, body.originalChars);

    const { record, operation } = await this.locked(() => {
      const now = new Date().toISOString();
      const existing = this.pullFor(spec.branch);
      if (!existing) {
        const record = this.records.newPull({
          number: this.records.take('nextPull'),
          branch: spec.branch,
          base: spec.base,
          title: title.text,
          body: body.text,
          draft: spec.draft,
          state: 'open',
          labels: planLabels([], spec.labels).result,
          createdAt: now,
          updatedAt: now,
        });
        this.records.writePull(record);
        return { record, operation: 'created' as const };
      }
      // Draft state is set at creation only: a person who marked the PR ready for review wins.
      // A closed PR keeps its base: it is history (GitHub's forge does the same).
      const next: LocalPullRecord = {
        ...existing,
        base: existing.state === 'open' ? spec.base : existing.base,
        title: title.text,
        body: body.text,
        labels: planLabels(existing.labels, spec.labels).result,
      };
      if (sameContent(existing, next)) return { record: existing, operation: 'unchanged' as const };
      const record = { ...next, updatedAt: now };
      this.records.writePull(record);
      return { record, operation: 'updated' as const };
    });
    this.opts.logger.info(`PR #${record.number} (${spec.branch}): ${operation}`);
    return { pr: this.toPullRequest(record, headSha), operation, truncated: body.truncated };
  }

  async findPullRequest(branch: string): Promise<PullRequest | undefined> {
    const record = this.pullFor(branch);
    return record ? this.toPullRequest(record, await this.headSha(branch)) : undefined;
  }

  async upsertStickyComment(
    number: number,
    key: string,
    body: string,
    stamp: CommentStamp,
  ): Promise<StickyResult> {
    const composed = composeStickyBody(key, body, stamp);
    if (composed.truncated)
      this.warnTruncated(`sticky comment ${key} on PR #${number}`, composed.originalChars);
    const result = await this.locked((): StickyResult => {
      this.requirePull(number);
      const mine = this.records
        .comments(number)
        .filter((c) => c.author === this.author && !c.minimized && hasStickyMarker(c.body, key));
      const [kept, ...duplicates] = mine;
      for (const d of duplicates) this.records.deleteComment(number, d.id);
      if (duplicates.length > 0) {
        this.opts.logger.warn(
          `removed ${duplicates.length} duplicate sticky comment(s) ${key} on PR #${number}`,
        );
      }
      const now = new Date().toISOString();
      if (!kept) {
        const record = this.records.newComment({
          id: this.records.take('nextComment'),
          pull: number,
          author: this.author,
          body: composed.body,
          minimized: false,
          createdAt: now,
          updatedAt: now,
        });
        this.records.writeComment(record);
        return { commentId: record.id, operation: 'created' };
      }
      const existingStamp = decodeStamp(kept.body);
      if (!mayOverwrite(stamp, existingStamp)) {
        return { commentId: kept.id, operation: 'skipped-stale' };
      }
      if (kept.body === composed.body) return { commentId: kept.id, operation: 'unchanged' };
      this.records.writeComment({ ...kept, body: composed.body, updatedAt: now });
      return { commentId: kept.id, operation: 'updated' };
    });
    const why = result.operation === 'skipped-stale' ? ' (the comment holds a newer stamp)' : '';
    this.opts.logger.info(`sticky comment ${key} on PR #${number}: ${result.operation}${why}`);
    return { ...result, truncated: composed.truncated };
  }

  async closePullRequest(number: number, comment?: string): Promise<void> {
    await this.locked(() => {
      const pr = this.requirePull(number);
      const now = new Date().toISOString();
      if (comment !== undefined) {
        const capped = capBody(comment, BODY_CAP_CHARS);
        this.records.writeComment(
          this.records.newComment({
            id: this.records.take('nextComment'),
            pull: number,
            author: this.author,
            body: capped.text,
            minimized: false,
            createdAt: now,
            updatedAt: now,
          }),
        );
      }
      if (pr.state !== 'open') return;
      this.records.writePull({ ...pr, state: 'closed', closedAt: now, updatedAt: now });
    });
    this.opts.logger.info(`PR #${number}: closed`);
  }

  /** All comments on PR `number`, oldest first (for the reader and tests). */
  comments(number: number): LocalCommentRecord[] {
    return this.records.comments(number);
  }

  private locked<T>(fn: () => T): Promise<T> {
    return withFileLock(this.records.lockFile, async () => fn(), {
      staleMs: RECORDS_LOCK_STALE_MS,
      ...this.opts.lock,
    });
  }

  /** The open PR for a branch, else the newest closed one: found again, never duplicated (as on GitHub). */
  private pullFor(branch: string): LocalPullRecord | undefined {
    const all = this.records.pulls().filter((p) => p.branch === branch);
    return all.find((p) => p.state === 'open') ?? all.sort((a, b) => b.number - a.number)[0];
  }

  private requirePull(number: number): LocalPullRecord {
    const pr = this.records.pull(number);
    if (!pr) throw new HillclimbError(`local forge has no PR #${number} (in ${this.records.dir})`);
    return pr;
  }

  private headSha(branch: string): Promise<string | undefined> {
    const { remote, repoDir, git } = this.opts;
    return remote === undefined
      ? branchSha(repoDir, branch, git)
      : remoteBranchSha(repoDir, remote, branch, git);
  }

  private whereBranchesLive(): string {
    return this.opts.remote === undefined ? ` in ${this.opts.repoDir}` : ` in ${this.opts.remote}`;
  }

  private toPullRequest(r: LocalPullRecord, headSha: string | undefined): PullRequest {
    return {
      number: r.number,
      url: this.records.pullUrl(r.number),
      branch: r.branch,
      base: r.base,
      title: r.title,
      body: r.body,
      state: r.state,
      draft: r.draft,
      labels: [...r.labels],
      ...(headSha === undefined ? {} : { headSha }),
    };
  }

  private warnTruncated(what: string, originalChars: number): void {
    this.opts.logger.warn(
      `${what} has ${originalChars} characters, over the ${BODY_CAP_CHARS}-character cap; truncated (full text: job summary / evidence bundle)`,
    );
  }
}

function sameContent(a: LocalPullRecord, b: LocalPullRecord): boolean {
  return (
    a.base === b.base &&
    a.title === b.title &&
    a.body === b.body &&
    a.labels.length === b.labels.length &&
    a.labels.every((l, i) => l === b.labels[i])
  );
}
