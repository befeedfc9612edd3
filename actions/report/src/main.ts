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
  searchPhaseOptions,
  setIterationOutputs,
  setOutputs,
  setSearchOutputs,
  writeSummary,
} from '../../../src/actions/index.js';
import {
  type PhaseResult,
  publishToPullRequest,
  recordBaseline,
  runPhase,
  runSearchPhase,
  type SearchPhaseResult,
} from '../../../src/loop/index.js';
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
  // A search (candidates > 1): every candidate recorded, losers first; the winner alone opens a PR.
  const search = pullRequest || baseline ? undefined : searchPhaseOptions(logger);
  const [what, publish]: [string, () => Promise<PhaseResult | SearchPhaseResult>] = search
    ? [
        "publish the search (every candidate recorded, the winner's PR)",
        () => runSearchPhase('publish', search),
      ]
    : pullRequest
      ? [`comment on PR #${pullRequest}`, () => publishToPullRequest(opts, pullRequest)]
      : baseline
        ? ['record the baseline', () => recordBaseline(opts)]
        : ['publish (record, PR, sticky comment)', () => runPhase('publish', opts)];
  const outcome = await logger.group(`hillclimb: ${what}`, publish);
  const result = 'candidates' in outcome ? outcome.lead : outcome;
  const published = result.evidence.publish;
  if ('candidates' in outcome) setSearchOutputs(outcome);
  else setIterationOutputs(result);
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
  await writeSummary(iterationSummary(outcome), logger);
  // The engine marks a record/publish step that ran out of retries as failed and moves on; fail here.
  const results = 'candidates' in outcome ? outcome.candidates : [outcome];
  for (const step of ['record', 'publish'] as const) {
    const failed = results.find((r) => r.evidence.steps[step]?.status === 'failed');
    const r = failed?.evidence.steps[step];
    if (r) {
      throw new HillclimbError(`${step} failed: ${r.note ?? 'see the log'}`, {
        hint: 'the bundle keeps its progress: re-run the job to retry (nothing is duplicated)',
        exitCode: ExitCode.infra,
      });
    }
  }
});
