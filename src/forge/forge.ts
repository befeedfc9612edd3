/**
 * Where iterations become reviewable: the `Forge` interface. Implementations in ./forges/ (`local`:
 * branches in the repository plus PR records on disk; `github`: Octokit), chosen by `forge.kind`
 * through ./factory.ts. Every operation is idempotent: running an iteration's publish step twice
 * updates, never duplicates.
 */

export interface PullRequestSpec {
  /** Head branch, e.g. hillclimb/gdn/<run>/i003. */
  branch: string;
  /** Base branch, e.g. main. */
  base: string;
  title: string;
  /** Markdown; implementations cap it below the forge's limit with a pointer to the full evidence. */
  body: string;
  draft: boolean;
  /** Labels to set; labels with the `hillclimb:` prefix not listed here are removed, others are kept. */
  labels: string[];
}

export interface PullRequest {
  number: number;
  url: string;
  branch: string;
  base: string;
  title: string;
  body: string;
  state: 'open' | 'closed' | 'merged';
  draft: boolean;
  labels: string[];
  /** Commit at the head of the branch when last read. */
  headSha?: string;
}

export type UpsertOperation = 'created' | 'updated' | 'unchanged';

/**
 * Orders sticky-comment writes. A write whose stamp is older than the stamp already in the comment is
 * skipped, so a slow, older run can never overwrite a newer result.
 */
export interface CommentStamp {
  /** When the loop run started (ISO 8601); a later run is newer. */
  runStartedAt: string;
  /** Run id, for display and tie-breaks. */
  runId: string;
  /** Iteration within the run; a later iteration is newer. */
  iteration: number;
  /** Commit the comment describes. */
  commit: string;
}

export interface StickyResult {
  commentId: number;
  operation: UpsertOperation | 'skipped-stale';
  /** True when the body was cut to fit the forge's limit (see ./limits.ts); the caller may warn. */
  truncated?: boolean;
}

export interface UpsertPullRequestResult {
  pr: PullRequest;
  operation: UpsertOperation;
  /** True when the body was cut to fit the forge's limit (see ./limits.ts); the caller may warn. */
  truncated?: boolean;
}

export interface Forge {
  readonly name: string;
  /**
   * Make `branch` on the forge point at `commit` from the local repository `repoDir`. What the branch
   * held before is replaced only when it is hillclimb's own work (earlier harness or agent commits);
   * commits anybody else made there stop the push with ForeignCommitsError (./errors.ts).
   */
  pushBranch(repoDir: string, branch: string, commit: string): Promise<void>;
  /**
   * Find the PR whose head is `spec.branch` — the open one, else the newest one a person closed or
   * merged — or create it; bring title, body, base and labels up to date. A closed PR is updated and
   * stays closed: never reopened, never duplicated. `draft` applies when the PR is created; an existing
   * PR keeps its draft state, because a reviewer may have marked it ready. When `spec.base` no longer
   * exists (a stacked base, merged and deleted), the forge's default base is used if it has one.
   */
  upsertPullRequest(spec: PullRequestSpec): Promise<UpsertPullRequestResult>;
  /** The PR for a head branch (open first, else the newest closed or merged one), if any was opened. */
  findPullRequest(branch: string): Promise<PullRequest | undefined>;
  /**
   * Create or update the single comment on PR `number` that carries the marker for `key`, unless the
   * comment already holds a newer stamp. Only the forge identity's own, non-minimized comments match.
   */
  upsertStickyComment(number: number, key: string, body: string, stamp: CommentStamp): Promise<StickyResult>;
  /** Close a PR (e.g. a superseded iteration), optionally leaving a comment first. */
  closePullRequest(number: number, comment?: string): Promise<void>;
}
