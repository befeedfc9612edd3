// The actions read the run from @actions/github's `context` (parsed from the environment when the
// toolkit loads: numbers are NaN when a variable is unset, the server defaults to github.com).
import { describe, expect, it } from 'vitest';
import { actionsRun, type RunContext } from '../../src/actions/github-context.js';

const RUN: RunContext = {
  runId: 9876543210,
  runAttempt: 2,
  job: 'measure-local',
  serverUrl: 'https://ghe.acme.example',
  repository: 'acme/kernels',
};

describe('actionsRun', () => {
  it('names resources, the job and the repository page from the toolkit context', () => {
    expect(actionsRun(RUN)).toEqual({
      resourceRunId: 'gh9876543210-2',
      jobId: 'gh-9876543210-2-measure-local',
      repositoryUrl: 'https://ghe.acme.example/acme/kernels',
    });
  });

  it('a first attempt without GITHUB_RUN_ATTEMPT (NaN) is attempt 1', () => {
    const run = actionsRun({ ...RUN, runAttempt: Number.NaN });
    expect(run?.resourceRunId).toBe('gh9876543210-1');
    expect(run?.jobId).toBe('gh-9876543210-1-measure-local');
  });

  it('outside a run (no run id, repository or job) there is none, and the engine reads its defaults', () => {
    expect(actionsRun({ ...RUN, runId: Number.NaN })).toBeUndefined();
    expect(actionsRun({ ...RUN, repository: undefined })).toBeUndefined();
    expect(actionsRun({ ...RUN, job: undefined as unknown as string })).toBeUndefined();
  });

  it('reads the real toolkit context of this process', () => {
    const env = process.env;
    const inRun = Boolean(env.GITHUB_RUN_ID && env.GITHUB_REPOSITORY && env.GITHUB_JOB);
    expect(actionsRun() !== undefined).toBe(inRun);
  });
});
