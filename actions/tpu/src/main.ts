/**
 * tpu: a Cloud TPU VM's lifecycle for a workflow.
 *   allocate  create one (zone fallback, TTL labels, setup_command); `hold: true` hands it to later
 *             jobs (output `allocation`), otherwise this step's post releases it at the end of the job
 *   attach    take over an allocation from an earlier job, so the tpu-vm backend uses it; released by
 *             this step's post at the end of the job unless `hold: true`
 *   release   delete the named TPU, the one allocate named for `run-id`, or what this runner recorded
 *   janitor   delete labelled TPU resources whose TTL has passed
 * The post step always runs (post-if: always()); a lost runner is covered by the TTL and the janitor.
 */
import * as core from '@actions/core';
import {
  actionsRun,
  allocationInput,
  allocationReport,
  choice,
  flag,
  janitorReport,
  list,
  optionalText,
  releaseReport,
  runAction,
  setOutputs,
  type TpuStepReport,
  tpuContext,
  tpuInputs,
  writeSummary,
} from '../../../src/actions/index.js';
import {
  allocateTpu,
  defaultRunId,
  janitorSweep,
  releaseRecorded,
  tpuNames,
  writeRecord,
} from '../../../src/compute/index.js';

await runAction(async ({ logger }) => {
  const mode = choice('mode', ['allocate', 'attach', 'release', 'janitor'] as const, { required: true });
  const inputs = tpuInputs();
  const ctx = tpuContext(inputs, logger);
  let report: TpuStepReport;
  if (mode === 'allocate' || mode === 'attach') {
    // Saved before anything exists, so the post step can clean up after a failure half way.
    core.saveState('inputs', JSON.stringify(inputs));
    const runId = mode === 'allocate' ? (optionalText('run-id') ?? runIdOfThisRun()) : undefined;
    if (runId) core.saveState('run-id', runId);
    const allocation = runId
      ? await logger.group('hillclimb: allocate a TPU', () =>
          allocateTpu(ctx, { runId, owner: 'cli', setup: flag('setup', true) }),
        )
      : allocationInput();
    if (mode === 'attach') {
      core.saveState('run-id', allocation.runId);
      writeRecord(ctx.stateDir, allocation);
      logger.info(`tpu: attached ${allocation.name} in ${allocation.zone}`);
    }
    if (flag('hold', false)) core.saveState('held', 'true');
    report = allocationReport(allocation);
  } else if (mode === 'release') {
    const runId = optionalText('run-id');
    const name = optionalText('name') ?? (runId ? tpuNames(ctx.config, runId).node : undefined);
    report = releaseReport(
      await logger.group('hillclimb: release TPUs', () => releaseRecorded(ctx, { name })),
    );
  } else {
    report = janitorReport(
      await logger.group('hillclimb: janitor', () => janitorSweep(ctx, { zones: list('zones') })),
    );
  }
  setOutputs(report.outputs);
  await writeSummary(report.summary, logger);
  if (report.failure) throw report.failure;
});

/** As defaultRunId orders it: HILLCLIMB_RUN_ID first, then the Actions run as the toolkit reads it. */
function runIdOfThisRun(): string {
  return process.env.HILLCLIMB_RUN_ID || (actionsRun()?.resourceRunId ?? defaultRunId());
}
