/**
 * The inputs and outputs the iteration actions (iterate, kernel-test, profile, report) share: which
 * run and iteration, the config and its overrides in; the verdict, the bundle folder and the candidate
 * out. The bundle folder is what a workflow uploads as an artifact for the next job.
 */
import { dirname, resolve } from 'node:path';
import {
  BundleFiles,
  type PhaseOptions,
  type PhaseResult,
  readHistory,
  type SearchPhaseOptions,
  type SearchPhaseResult,
} from '../loop/index.js';
import { renderJobSummary } from '../report/index.js';
import type { Logger } from '../util/index.js';
import { actionsRun } from './github-context.js';
import { configOverrides, flag, optionalText, positiveInteger, requiredText } from './inputs.js';
import { setOutputs } from './run.js';

/** The engine's typed input for one phase, from the action's inputs. */
export function phaseOptions(logger: Logger): PhaseOptions {
  const target = optionalText('target');
  const iterations = positiveInteger('iterations');
  const base = optionalText('base');
  const runStartedAt = optionalText('run-started-at');
  const attestation = optionalText('attestation');
  const pinnedSource = optionalText('pinned-source');
  const keptPrograms = optionalText('kept-programs');
  const keptRecords = optionalText('kept-records');
  const slot = positiveInteger('slot');
  const run = actionsRun();
  return {
    configFile: resolve(optionalText('config') ?? 'hillclimb.yml'),
    overrides: configOverrides(),
    ...(target ? { target } : {}),
    runId: requiredText('run-id'),
    iteration: positiveInteger('iteration', { required: true }),
    ...(slot ? { slot } : {}),
    ...(iterations ? { totalIterations: iterations } : {}),
    ...(base ? { base } : {}),
    ...(runStartedAt ? { runStartedAt } : {}),
    ...(attestation ? { attestation } : {}),
    ...(pinnedSource ? { pinnedSource } : {}),
    ...(keptPrograms ? { keptPrograms } : {}),
    ...(keptRecords ? { keptRecords } : {}),
    dryRun: flag('dry-run', false),
    remoteOnly: flag('remote-only', false),
    ...(run ? { jobId: run.jobId, repositoryUrl: run.repositoryUrl } : {}),
    logger,
    progress: (line) => logger.info(line),
  };
}

/** Outputs every iteration action sets: where the iteration stands and where its bundle is. */
export function setIterationOutputs(result: PhaseResult): void {
  const ev = result.evidence;
  setOutputs({
    verdict: ev.verdict ?? '',
    // No verdict yet: the candidate goes on to the next phase.
    pending: ev.verdict === undefined,
    reason: ev.verdictReasons[0] ?? '',
    'bundle-dir': result.bundleDir,
    'evidence-file': resolve(result.bundleDir, BundleFiles.evidence),
    'has-candidate': ev.candidate !== undefined,
    'candidate-commit': ev.candidate?.commit ?? '',
    'candidate-branch': ev.candidate?.branch ?? '',
  });
}

/**
 * The `attestation` output of the actions that hand a bundle on to a job that believes it (kernel-test,
 * profile): only a job that ran nothing untrusted outside the sandbox vouches (loop/state/attestation.ts).
 */
export function setAttestationOutput(result: PhaseResult): void {
  setOutputs({ attestation: result.attestation?.verified ? JSON.stringify(result.attestation) : '' });
}

/** The iteration's job summary: the run table, the comment's sections and the step timeline. */
export function iterationSummary(result: PhaseResult | SearchPhaseResult): string {
  const results = 'candidates' in result ? result.candidates : [result];
  const history = readHistory(results[0]!.stateDir, results[0]!.evidence.target);
  return renderJobSummary(
    results.map((r) => r.evidence),
    history,
  ).markdown;
}

/**
 * The search phases' inputs (select, publish): the candidates' count from the workflow and every
 * candidate's attestation; undefined when the iteration has one candidate.
 */
export function searchPhaseOptions(logger: Logger): SearchPhaseOptions | undefined {
  const candidates = positiveInteger('candidates') ?? 1;
  if (candidates < 2) return undefined;
  const { slot: _slot, attestation: _attestation, ...opts } = phaseOptions(logger);
  const attestations = optionalText('attestations');
  return { ...opts, ...(attestations ? { attestations } : {}) };
}

/**
 * Outputs of a search phase: the lead candidate's, as one candidate's (verdict, bundle), plus every
 * candidate's attestation (`attestations`: a JSON object keyed `attestation-c<slot>`, what the next job
 * takes), the winner's slot and the run's folder (the workflow uploads its `i003-c*` bundles).
 */
export function setSearchOutputs(result: SearchPhaseResult): void {
  setIterationOutputs(result.lead);
  const attestations = Object.fromEntries(
    result.candidates.map((c) => [
      `attestation-c${c.evidence.slot!.index}`,
      c.attestation?.verified ? JSON.stringify(c.attestation) : '',
    ]),
  );
  setOutputs({
    attestations: JSON.stringify(attestations),
    'winner-slot': result.lead.evidence.search?.winner ?? '',
    'run-dir': dirname(result.lead.bundleDir),
  });
}
