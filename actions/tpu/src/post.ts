/**
 * tpu post step (runs at the end of the job, also after a failure or cancel): release what this
 * step allocated or attached, unless it was held for later jobs. Released = deleted or already gone.
 */
import * as core from '@actions/core';
import { runAction, type TpuInputs, tpuContext } from '../../../src/actions/index.js';
import { readRecords, releaseTpu } from '../../../src/compute/index.js';
import { ExitCode, errorMessage, HillclimbError } from '../../../src/util/index.js';

await runAction(async ({ logger }) => {
  const runId = core.getState('run-id');
  if (runId === '') {
    logger.info('tpu post: this step allocated nothing, nothing to release');
    return;
  }
  if (core.getState('held') === 'true') {
    logger.info(
      `tpu post: the TPU of run ${runId} is held for later jobs (released by them, by its TTL and by the janitor)`,
    );
    return;
  }
  const ctx = tpuContext(JSON.parse(core.getState('inputs')) as TpuInputs, logger);
  const records = readRecords(ctx.stateDir).filter((r) => r.runId === runId);
  if (records.length === 0) logger.info(`tpu post: no TPU of run ${runId} is recorded on this runner`);
  const failures: string[] = [];
  for (const rec of records) {
    try {
      await releaseTpu(ctx, rec);
    } catch (e) {
      failures.push(errorMessage(e));
    }
  }
  if (failures.length > 0) {
    throw new HillclimbError(failures.join('; '), {
      hint: 'the tpu-release job retries by name; the janitor deletes it once its TTL passes',
      exitCode: ExitCode.infra,
    });
  }
});
