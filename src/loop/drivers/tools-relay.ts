/**
 * The tools relay's serving job (the workflow's `tools-relay`, beside the propose jobs): open the
 * measuring machine this job holds credentials for and answer the agents' verifier sessions until every
 * propose job of the iteration has said it is done (loop/relay/serve.ts).
 */

import type { RelayStore } from '../../compute/index.js';
import { loadConfig, selectTarget } from '../../config/index.js';
import { ExitCode, HillclimbError } from '../../util/index.js';
import { openLoopContext } from '../open-context.js';
import { markRelayClosed, type ServeReport, serveToolsRelay } from '../relay/index.js';
import type { PhaseOptions } from './phases.js';

export interface ToolsRelayOptions extends PhaseOptions {
  store: RelayStore;
  /** Serve at most this long (minutes): the propose jobs' own timeout. */
  minutes: number;
  pollMs?: number;
}

/** The propose jobs of an iteration, by their names in the relay: c1 … ck for a search, else main. */
export function relayClients(candidates: number): string[] {
  return candidates > 1 ? Array.from({ length: candidates }, (_, i) => `c${i + 1}`) : ['main'];
}

export async function runToolsRelay(opts: ToolsRelayOptions): Promise<ServeReport> {
  const config = loadConfig(opts.configFile, opts.overrides);
  const target = selectTarget(config, opts.target);
  if (config.compute.backend === 'local') {
    throw new HillclimbError(
      'the tools relay serves a measuring machine, and compute.backend is local: the propose job times the tools on its own CPU',
      {
        hint: "run the tools-relay job only where setup's backend is ray or tpu-vm (the workflow's condition)",
        exitCode: ExitCode.badInput,
      },
    );
  }
  if (!opts.base) {
    throw new HillclimbError('the tools relay needs base: the champion the propose jobs start from', {
      hint: "pass the setup job's champion output as base",
      exitCode: ExitCode.badInput,
    });
  }
  const { ctx, openBackends, close } = await openLoopContext(config, {
    target,
    runId: opts.runId,
    steps: ['measure'],
    totalIterations: opts.totalIterations ?? config.loop.iterations,
    prepareMayProfile: false,
    logger: opts.logger,
    ...(opts.signal ? { signal: opts.signal } : {}),
    dryRun: Boolean(opts.dryRun),
    // The TPU tpu-allocate holds, or none: a lost one is not worth a new TPU for an agent's advice.
    attachOnly: true,
  });
  try {
    const harness = await ctx.git.revParse(opts.base);
    try {
      await openBackends();
    } catch (e) {
      // No machine to serve on: the propose jobs' tool calls give up at once, not after their grace.
      await markRelayClosed(opts.store, opts.runId, opts.logger);
      throw e;
    }
    return await serveToolsRelay({
      ctx,
      store: opts.store,
      harness,
      iteration: opts.iteration,
      clients: relayClients(config.loop.candidates),
      deadline: Date.now() + opts.minutes * 60_000,
      ...(opts.pollMs ? { pollMs: opts.pollMs } : {}),
    });
  } finally {
    await close();
  }
}
