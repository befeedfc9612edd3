/**
 * report: the publish phase of one iteration — record it (log entry, history row) and publish it (the
 * bundle to the store, the branch, a draft PR labelled by verdict, and the sticky comment with the
 * MFU delta, updated in place on every re-run). With `pull-request`, the sticky comment goes on that
 * (person's) PR instead and nothing is recorded. Runs no candidate code; the only job with a write token.
 */
import { positiveInteger } from '../../../src/actions/inputs.js';
import { iterationSummary, phaseOptions, setIterationOutputs } from '../../../src/actions/phase.js';
import { runAction, setOutputs, writeSummary } from '../../../src/actions/run.js';
import { publishToPullRequest } from '../../../src/loop/external.js';
import { runPhase } from '../../../src/loop/phases.js';
import { ExitCode, HillclimbError } from '../../../src/util/errors.js';

await runAction(async ({ logger }) => {
  const opts = phaseOptions(logger);
  const pullRequest = positiveInteger('pull-request');
  const result = await logger.group(
    pullRequest
      ? `hillclimb: comment on PR #${pullRequest}`
      : 'hillclimb: publish (record, PR, sticky comment)',
    () => (pullRequest ? publishToPullRequest(opts, pullRequest) : runPhase('publish', opts)),
  );
  const publish = result.evidence.publish;
  setIterationOutputs(result);
  setOutputs({
    'pr-number': publish?.prNumber,
    'pr-url': publish?.prUrl,
    'pr-operation': publish?.prOperation,
    'comment-id': publish?.commentId,
    'comment-operation': publish?.commentOperation,
    branch: publish?.branch,
    'bundle-url': publish?.bundleUrl,
  });
  for (const warning of publish?.warnings ?? []) logger.warn(warning);
  await writeSummary(iterationSummary(result), logger);
  // The engine records a record/publish step that ran out of retries and moves on; here it fails the step.
  for (const step of ['record', 'publish'] as const) {
    const r = result.evidence.steps[step];
    if (r?.status === 'failed') {
      throw new HillclimbError(`${step} failed: ${r.note ?? 'see the log'}`, {
        hint: 'the bundle keeps its progress: re-run the job to retry (nothing is duplicated)',
        exitCode: ExitCode.infra,
      });
    }
  }
});
