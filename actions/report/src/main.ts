/**
 * report: the publish phase of one iteration — record it (log entry, history row) and publish it (the
 * bundle to the store, the branch, a draft PR labelled by verdict, and the sticky comment with the
 * MFU delta, updated in place on every re-run). With `pull-request`, the sticky comment goes on that
 * (person's) PR instead; with `baseline`, the measurement of main joins the baseline series. Neither
 * touches the loop's history. Runs no candidate code; the only job with a write token.
 */
import {
  flag,
  iterationSummary,
  phaseOptions,
  positiveInteger,
  runAction,
  setIterationOutputs,
  setOutputs,
  writeSummary,
} from '../../../src/actions/index.js';
import { publishToPullRequest, recordBaseline, runPhase } from '../../../src/loop/index.js';
import { ExitCode, HillclimbError } from '../../../src/util/index.js';

await runAction(async ({ logger }) => {
  const opts = phaseOptions(logger);
  const pullRequest = positiveInteger('pull-request');
  const baseline = flag('baseline', false);
  if (pullRequest && baseline) {
    throw new HillclimbError('inputs pull-request and baseline exclude each other', {
      exitCode: ExitCode.badInput,
    });
  }
  const [what, publish] = pullRequest
    ? [`comment on PR #${pullRequest}`, () => publishToPullRequest(opts, pullRequest)]
    : baseline
      ? ['record the baseline', () => recordBaseline(opts)]
      : ['publish (record, PR, sticky comment)', () => runPhase('publish', opts)];
  const result = await logger.group(`hillclimb: ${what}`, publish);
  const published = result.evidence.publish;
  setIterationOutputs(result);
  setOutputs({
    'pr-number': published?.prNumber,
    'pr-url': published?.prUrl,
    'pr-operation': published?.prOperation,
    'comment-id': published?.commentId,
    'comment-operation': published?.commentOperation,
    branch: published?.branch,
    'bundle-url': published?.bundleUrl,
  });
  for (const warning of published?.warnings ?? []) logger.warn(warning);
  await writeSummary(iterationSummary(result), logger);
  // The engine marks a record/publish step that ran out of retries as failed and moves on; fail here.
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
