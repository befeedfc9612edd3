/**
 * The loop's repository: worktrees, bundles, the path guard and the static scan. Other modules import
 * from this entry, never from its files.
 */
export { readAgentHead, snapshotTree } from './agent-tree.js';
export { loopBranchName } from './branch-name.js';
export { changeFingerprint } from './change-fingerprint.js';
export { CandidateRefused, Git, HARNESS_IDENTITY } from './git.js';
export { matchAny } from './glob.js';
export { classifyChanges, describeViolations } from './guard.js';
export { OBSERVES_RULE_PREFIX } from './scan-rules.js';
export { scanCommits } from './static-scan.js';
export { globsWithoutFiles } from './unmatched-globs.js';
