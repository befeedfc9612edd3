/**
 * src/git: the one module that runs git. `runGit` (./command.ts) starts every git process through
 * src/exec; ./refs.ts reads, moves and pushes branches by path; ./auth.ts hands a token to git through
 * the environment; ./identity.ts says who hillclimb's commits are by. The loop's repository handle
 * (src/workspace/git.ts, class Git) is built on runGit.
 */
export { basicAuth, httpAuthEnv, redactUrl } from './auth.js';
export {
  DEFAULT_GIT_TIMEOUT_MS,
  GIT_ENV,
  type GitCommandOptions,
  HARDENING_CONFIG,
  runGit,
} from './command.js';
export {
  agentIdentity,
  assertIdentity,
  HARNESS_IDENTITY,
  type Identity,
  identityEnv,
  isOwnCommit,
} from './identity.js';
export {
  assertRemote,
  type BranchCommit,
  branchSha,
  fetchRemoteBranch,
  forcePush,
  foreignCommits,
  type GitOptions,
  remoteBranchSha,
  resolveCommit,
  updateBranch,
  worktreesOnBranch,
} from './refs.js';
