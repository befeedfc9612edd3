/**
 * iterate: one agent iteration's propose phase (prepare the champion and the prompt, run the agent,
 * guard its change). Runs in the agent job: no write token, no cloud credentials. The bundle folder it
 * outputs (with the candidate's commits as a git bundle and a patch) goes to the next job as an artifact.
 */

import { resolve } from 'node:path';
import {
  choice,
  configOverrides,
  flag,
  iterationSummary,
  optionalText,
  phaseOptions,
  positiveInteger,
  requiredText,
  runAction,
  setIterationOutputs,
  setOutputs,
  writeSummary,
} from '../../../src/actions/index.js';
import { artifactRelayStore } from '../../../src/compute/index.js';
import {
  BundleFiles,
  checkAgentApi,
  fetchKeptProgramsOf,
  KEPT_HANDOVER_DIR,
  markRelayDone,
  resolveChampion,
  runPhase,
  runToolsRelay,
} from '../../../src/loop/index.js';

await runAction(async ({ logger }) => {
  const mode = choice('mode', [
    'propose',
    'prepare',
    'champion',
    'kept-programs',
    'check-agent',
    'tools-relay',
    'tools-relay-done',
  ]);
  if (mode === 'tools-relay-done') {
    // In the propose job, however it ended: its place in the relay (main, or c<slot> in a search).
    const slot = positiveInteger('slot');
    const client = slot ? `c${slot}` : 'main';
    await markRelayDone(artifactRelayStore(), requiredText('run-id'), client);
    logger.info(`tools relay: ${client} is done`);
    return;
  }
  if (mode === 'tools-relay') {
    // In the credentialed job beside the propose jobs: their agents' tools, timed on the measuring
    // machine, until every one of them is done. No candidate code runs here: programs are data.
    const minutes = positiveInteger('serve-minutes') ?? 150;
    const report = await logger.group('hillclimb: serve the agent tools relay', () =>
      runToolsRelay({ ...phaseOptions(logger), store: artifactRelayStore(), minutes }),
    );
    logger.info(
      `tools relay: ${report.served} session(s) served, ${report.refused} refused, ${report.seconds.toFixed(1)} machine-s; ended: ${report.ended}`,
    );
    return;
  }
  if (mode === 'check-agent') {
    // First in the agent's job: a refused key or a wrong endpoint fails here in seconds, before the
    // champion's profile takes minutes.
    await checkAgentApi({
      configFile: resolve(optionalText('config') ?? 'hillclimb.yml'),
      overrides: configOverrides(),
      dryRun: flag('dry-run', false),
      logger,
    });
    return;
  }
  if (mode === 'prepare') {
    // The step before the agent's: it may hold a read token for the history; the agent's step holds none.
    const result = await logger.group('hillclimb: prepare (champion, prompt)', () =>
      runPhase('prepare', phaseOptions(logger)),
    );
    setIterationOutputs(result);
    return;
  }
  if (mode === 'kept-programs') {
    // In a trusted job that may read the store: the programs the base (main) won with, if it is a
    // champion, for a measuring job that holds no token (pr-evidence).
    const target = optionalText('target');
    const { kept, records } = await fetchKeptProgramsOf({
      configFile: resolve(optionalText('config') ?? 'hillclimb.yml'),
      overrides: configOverrides(),
      ...(target ? { target } : {}),
      logger,
      commit: requiredText('base'),
    });
    setOutputs({
      'kept-programs': kept ?? '',
      'kept-programs-dir': kept ? resolve(KEPT_HANDOVER_DIR) : '',
      'kept-records': records.length > 0 ? JSON.stringify(records) : '',
    });
    logger.info(
      `the base's kept programs: ${kept ? 'fetched' : 'none in the store'}; ${records.length} record(s) of what its code won with`,
    );
    return;
  }
  if (mode === 'champion') {
    // In a trusted job, before any agent runs: the champion every later phase is checked against.
    const target = optionalText('target');
    const champion = await resolveChampion({
      configFile: resolve(optionalText('config') ?? 'hillclimb.yml'),
      overrides: configOverrides(),
      ...(target ? { target } : {}),
      logger,
      // The programs it won with, for the measuring jobs (which hold no token to read the store).
      fetchKept: true,
    });
    setOutputs({
      champion: champion.commit,
      'champion-branch': champion.branch ?? '',
      'kept-programs': champion.kept ?? '',
      'kept-programs-dir': champion.kept ? resolve(KEPT_HANDOVER_DIR) : '',
      'kept-records': champion.records ? JSON.stringify(champion.records) : '',
    });
    logger.info(
      `champion ${champion.commit.slice(0, 12)} (from ${champion.source})${champion.kept ? '; its kept programs fetched' : ''}`,
    );
    return;
  }
  const opts = {
    ...phaseOptions(logger),
    // A tools-relay job of this run serves the agent's tools on the measuring machine.
    ...(flag('tools-relay', false) ? { toolsRelay: artifactRelayStore() } : {}),
  };
  const result = await logger.group('hillclimb: propose (prepare, agent, guard)', () =>
    runPhase('propose', opts),
  );
  const ev = result.evidence;
  setIterationOutputs(result);
  setOutputs({
    'agent-status': ev.agent?.status ?? 'not-run',
    'patch-file': ev.candidate ? `${result.bundleDir}/${BundleFiles.patch}` : '',
    subject: ev.candidate?.subject ?? '',
    // The agent's structured result (hypothesis, summary, next idea), when it wrote a valid one.
    'result-file': ev.agent?.result
      ? `${result.bundleDir}/${BundleFiles.agentResult(ev.agent.attempts)}`
      : '',
    hypothesis: ev.agent?.result?.hypothesis ?? '',
  });
  if (ev.verdict) logger.info(`propose ended the iteration: ${ev.verdict} (${ev.verdictReasons[0] ?? ''})`);
  await writeSummary(iterationSummary(result), logger);
});
