/**
 * The Actions run as the toolkit describes it (`context` from @actions/github): the facts the engine
 * needs to name what this job makes. The CLI's engine reads the same facts from the environment
 * (compute/tpu defaultRunId, loop currentJobId, the store's repository URL); an action passes what the
 * toolkit read instead, so both front ends agree with GitHub's own reading of the run.
 */
import { context } from '@actions/github';

export interface ActionsRun {
  /** Names cloud resources: `gh<run id>-<attempt>` (a re-run attempt gets fresh names). */
  resourceRunId: string;
  /** Names this job in attestations and isolation records: `gh-<run id>-<attempt>-<job>`. */
  jobId: string;
  /** The repository's web page, for links to stored evidence. */
  repositoryUrl: string;
}

/** What this module reads of the toolkit's context (its fields as the toolkit parses them: NaN when unset). */
export type RunContext = Pick<typeof context, 'runId' | 'runAttempt' | 'job' | 'serverUrl'> & {
  /** `owner/repo`; undefined outside a run (the toolkit's `repo` getter throws then). */
  repository: string | undefined;
};

function toolkitContext(): RunContext {
  const { runId, runAttempt, job, serverUrl } = context;
  const repository = process.env.GITHUB_REPOSITORY ? `${context.repo.owner}/${context.repo.repo}` : undefined;
  return { runId, runAttempt, job, serverUrl, repository };
}

/** The run this action is a step of; undefined outside a run (no run id, repository or job). */
export function actionsRun(run: RunContext = toolkitContext()): ActionsRun | undefined {
  if (!Number.isFinite(run.runId) || !run.repository || !run.job) return undefined;
  const attempt = Number.isFinite(run.runAttempt) ? run.runAttempt : 1;
  return {
    resourceRunId: `gh${run.runId}-${attempt}`,
    jobId: `gh-${run.runId}-${attempt}-${run.job}`,
    repositoryUrl: `${run.serverUrl}/${run.repository}`,
  };
}
