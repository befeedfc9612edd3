/**
 * tpu: a Cloud TPU VM's lifecycle for a workflow.
 *   allocate  create one (zone fallback, TTL labels, setup_command); `hold: true` hands it to later
 *             jobs (output `allocation`), otherwise this step's post releases it at the end of the job
 *   attach    take over an allocation from an earlier job, so the tpu-vm backend uses it; released by
 *             this step's post at the end of the job unless `hold: true`
 *   release   delete what this runner recorded, or the named TPU (looked up in every zone)
 *   janitor   delete labelled TPU resources whose TTL has passed
 * The post step always runs (post-if: always()); a lost runner is covered by the TTL and the janitor.
 */
import * as core from '@actions/core';
import { choice, flag, list, optionalText } from '../../../src/actions/inputs.js';
import { runAction, setOutputs, writeSummary } from '../../../src/actions/run.js';
import { allocationInput, tpuContext, tpuInputs } from '../../../src/actions/tpu.js';
import {
  allocateTpu,
  defaultRunId,
  janitorSweep,
  releaseRecorded,
  tpuNames,
} from '../../../src/compute/tpu/lifecycle.js';
import { type TpuAllocation, writeRecord } from '../../../src/compute/tpu/state.js';
import { ExitCode, HillclimbError } from '../../../src/util/errors.js';

const allocationOutputs = (a: TpuAllocation) => ({
  name: a.name,
  zone: a.zone,
  'queued-resource': a.queuedResource,
  'expires-at': new Date(a.expiresAt * 1000).toISOString(),
  allocation: JSON.stringify(a),
});

await runAction(async ({ logger }) => {
  const mode = choice('mode', ['allocate', 'attach', 'release', 'janitor'] as const, { required: true });
  const inputs = tpuInputs();
  const ctx = tpuContext(inputs, logger);
  if (mode === 'allocate' || mode === 'attach') {
    // Saved before anything exists, so the post step can clean up after a failure half way.
    core.saveState('inputs', JSON.stringify(inputs));
    const allocation =
      mode === 'allocate'
        ? await (async () => {
            const runId = optionalText('run-id') ?? defaultRunId();
            core.saveState('run-id', runId);
            return logger.group('hillclimb: allocate a TPU', () =>
              allocateTpu(ctx, { runId, owner: 'cli', setup: flag('setup', true) }),
            );
          })()
        : allocationInput();
    if (mode === 'attach') {
      core.saveState('run-id', allocation.runId);
      writeRecord(ctx.stateDir, allocation);
      logger.info(`tpu: attached ${allocation.name} in ${allocation.zone}`);
    }
    if (flag('hold', false)) core.saveState('held', 'true');
    setOutputs(allocationOutputs(allocation));
    await writeSummary(
      `## hillclimb TPU\n\n${allocation.acceleratorType} \`${allocation.name}\` in ${allocation.zone} (${allocation.provisioning}), expires ${allocationOutputs(allocation)['expires-at']}\n`,
      logger,
    );
    return;
  }
  if (mode === 'release') {
    // By name, else the name allocate gave this run id, else whatever this runner recorded.
    const runId = optionalText('run-id');
    const name = optionalText('name') ?? (runId ? tpuNames(ctx.config, runId).node : undefined);
    const reports = await logger.group('hillclimb: release TPUs', () => releaseRecorded(ctx, { name }));
    for (const r of reports)
      logger.info(`tpu: ${r.name} ${r.zone}: ${r.outcome}${r.error ? ` (${r.error})` : ''}`);
    if (reports.length === 0)
      logger.info('tpu: nothing recorded on this runner and no name given: nothing to release');
    setOutputs({
      released: JSON.stringify(reports),
      count: reports.filter((r) => r.outcome === 'deleted').length,
    });
    const failed = reports.filter((r) => r.outcome === 'failed');
    if (failed.length > 0) {
      throw new HillclimbError(
        `could not release ${failed.map((r) => `${r.name} in ${r.zone}: ${r.error}`).join('; ')}`,
        {
          hint: 'the janitor deletes it once its TTL passes; or delete it with gcloud',
          exitCode: ExitCode.infra,
        },
      );
    }
    return;
  }
  const report = await logger.group('hillclimb: janitor', () => janitorSweep(ctx, { zones: list('zones') }));
  setOutputs({
    deleted: report.deleted.filter((d) => d.outcome === 'deleted').length,
    report: JSON.stringify(report),
  });
  const rows = [
    ...report.deleted.map(
      (d) =>
        `| ${d.outcome} | ${d.kind} | \`${d.name}\` | ${d.zone} | ${d.reason}${d.error ? `: ${d.error}` : ''} |`,
    ),
    ...report.kept.map((k) => `| kept | ${k.kind} | \`${k.name}\` | ${k.zone} | ${k.reason} |`),
  ];
  await writeSummary(
    `## hillclimb TPU janitor\n\n${rows.length > 0 ? `| outcome | kind | name | zone | why |\n|---|---|---|---|---|\n${rows.join('\n')}` : 'No hillclimb TPU resources found.'}\n${report.errors.map((e) => `\n> error: ${e}`).join('')}\n`,
    logger,
  );
  if (report.errors.length > 0 || report.deleted.some((d) => d.outcome === 'failed')) {
    throw new HillclimbError(
      `janitor: ${[...report.errors, ...report.deleted.filter((d) => d.error).map((d) => `${d.name}: ${d.error}`)].join('; ')}`,
      {
        exitCode: ExitCode.infra,
      },
    );
  }
});
