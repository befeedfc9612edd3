// hillclimb.yml, run by nektos/act (jobs on the host) against the GitHub contract server, on the toy
// target with the replay agent and the local compute backend:
//   1. a dry run (one iteration): every job runs, nothing is pushed or published;
//   2. a real iteration of two: propose → cpu-gate → measure-local → publish → continue, each job's
//      outputs (the attestations included) reaching the jobs that need them, the bundle artifact passed
//      along, one draft PR with one sticky comment, history on hillclimb-data, and `continue`
//      dispatching the next iteration through the API;
//   3. that next iteration, run from the dispatch GitHub recorded: it starts from the new champion;
//   4. an iteration whose agent keeps failing as infrastructure (exit 75): retried, then recorded as
//      `error` with its reason in the history row and evidence.json; no crash, no PR.
// The cloud jobs (tpu-allocate, measure-cloud, tpu-release) and the GitHub App token step are skipped by
// the workflow's own conditions (local backend, no HILLCLIMB_APP_ID): their actions are stand-ins that
// fail if reached (tests/workflows/act/stand-ins/README.md).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stickyMarker } from '../../../src/forge/sticky.js';
import { STICKY_KEY } from '../../../src/loop/steps/publish.js';
import {
  type ActRun,
  ActWorld,
  actBinary,
  handOvers,
  runAct,
  usesRealArtifactActions,
} from '../../helpers/act.js';
import { GitHubContractServer } from '../../helpers/github-contract-server.js';
import { tempDir } from '../../helpers/paths.js';
import { STANDARD_PATCHES, TOY_CONFIG } from '../../loop/toy-repo.js';
import {
  GITHUB_URL,
  git,
  makeWorkflowRepo,
  OWNER_REPO,
  remoteBranches,
  remoteFile,
  syncWork,
  type WorkflowRepo,
} from './repo.js';

const act = actBinary();
const TOKEN = 'ghs_actrunnertoken0000000000000001';
const RUN = { dry: 1000, real: 1001, next: 1002, failing: 1003 };
const FAILING_AGENT = `agent:
  kind: command
  command:
    command: ["sh", "-c", "echo 'model API: connection reset' >&2; exit 75"]
`;

describe.skipIf(act.skip)(`hillclimb.yml under act${act.skip ? ` (skipped: ${act.skip})` : ''}`, () => {
  const t = tempDir('hc-act-loop-');
  let server: GitHubContractServer;
  let world: ActWorld;
  let repo: WorkflowRepo;
  const runs: Record<string, ActRun> = {};
  let afterDryRun = { pulls: -1, branches: [] as string[] };
  const workflowFile = () => join(repo.work, '.github', 'workflows', 'hillclimb.yml');

  const dispatch = (runId: number, inputs: Record<string, string>, ref = 'main') => {
    syncWork(repo, world.env(), ref);
    return runAct({
      act: act.path!,
      world,
      repo: repo.work,
      workflow: 'hillclimb.yml',
      event: 'workflow_dispatch',
      payload: { inputs, ref: `refs/heads/${ref}` },
      inputs,
      secrets: { GITHUB_TOKEN: TOKEN },
      apiUrl: server.url,
      runId,
    });
  };
  const history = () =>
    remoteFile(repo, 'hillclimb-data', 'history/toy.jsonl')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);

  beforeAll(async () => {
    server = await GitHubContractServer.start();
    const bare = join(t.dir, 'remote.git');
    world = new ActWorld({
      dir: join(t.dir, 'act'),
      // The forge pushes to the API host's URL (forge.github.api_url is the contract server).
      remotes: { [GITHUB_URL]: bare, [`${server.url}/${OWNER_REPO}.git`]: bare },
    });
    repo = makeWorkflowRepo(t.dir, TOY_CONFIG, STANDARD_PATCHES.slice(0, 1), world.env());
    server.addRepo(OWNER_REPO, repo.bare);
    // act hands every job the same token (it ignores `permissions:`; tests/workflows/policy.ts checks them).
    server.addToken(TOKEN, {
      login: 'github-actions[bot]',
      kind: 'installation',
      permissions: { contents: 'write', pull_requests: 'write', issues: 'write', actions: 'write' },
    });

    runs.dry = await dispatch(RUN.dry, {
      agent: 'replay',
      backend: 'local',
      iterations: '1',
      'dry-run': 'true',
    });
    afterDryRun = { pulls: server.pullsOf(OWNER_REPO).length, branches: remoteBranches(repo) };
    runs.real = await dispatch(RUN.real, { agent: 'replay', backend: 'local', iterations: '2' });
    // The next iteration, exactly as the continue job asked GitHub for it.
    const next = server.dispatchesOf(OWNER_REPO)[0];
    if (next) {
      runs.next = await dispatch(
        RUN.next,
        Object.fromEntries(Object.entries(next.inputs).map(([k, v]) => [k, String(v)])),
        next.ref,
      );
    }
    // A maintainer switches the agent to one that fails; a new loop starts.
    const config = readFileSync(join(repo.seed, 'hillclimb.yml'), 'utf8').replace(
      /agent:\n {2}kind: replay\n {2}replay: \{dir: replay\}\n/,
      FAILING_AGENT,
    );
    if (!config.includes('kind: command')) throw new Error('the failing-agent config did not apply');
    writeFileSync(join(repo.seed, 'hillclimb.yml'), config);
    git(repo.seed, {}, 'commit', '-q', '-am', 'agent: a command that fails');
    git(repo.seed, {}, 'push', '-q', repo.bare, 'main:refs/heads/main');
    runs.failing = await dispatch(RUN.failing, { agent: 'config', iterations: '1' });
  }, 1_200_000);

  afterAll(async () => {
    await server?.close();
    // HILLCLIMB_KEEP_ACT=1 keeps the act logs and the repositories for a look after a failure.
    if (!process.env.HILLCLIMB_KEEP_ACT) t.cleanup();
  });

  it('a dry run walks one iteration through every job, prints what it would run and publishes nothing', () => {
    const r = runs.dry!;
    expect(r.code, r.describe()).toBe(0);
    expect(Object.fromEntries([...r.jobs.values()].map((j) => [j.id, j.result]))).toEqual({
      setup: 'success',
      'tpu-allocate': 'skipped',
      propose: 'success',
      'tools-relay': 'skipped',
      'cpu-gate': 'success',
      'measure-local': 'success',
      'measure-cloud': 'skipped',
      publish: 'success',
      'tpu-release': 'skipped',
      continue: 'skipped',
    });
    // The CPU gate prints its commands like every other job (the suite is not run), and nothing says
    // "error": the iteration has no verdict, and its PR title (written, not opened) says dry run.
    expect(r.text('cpu-gate')).toMatch(/dry run: \S+\/python harness\/check\.py --junit /);
    expect(r.text('cpu-gate')).not.toMatch(/cpu-gate failed|\berror\b/);
    expect(r.text('measure-local')).toMatch(
      /dry run: \S+\/python -m harness\.programs export --platform cpu /,
    );
    expect(r.text('publish')).toContain('PR "[dry run] toy: ');
    expect(r.text('publish')).toContain(
      `publish skipped: dry run: would push hillclimb/toy/gh${RUN.dry}/i001 and open or update the github PR`,
    );
    expect(r.text('publish')).toContain('record done: dry run: no history row');
    expect(afterDryRun).toEqual({ pulls: 0, branches: ['main'] });
  });

  it('a real iteration runs setup → propose → cpu-gate → measure-local → publish → continue; the cloud jobs are skipped', () => {
    const r = runs.real!;
    expect(r.code, r.describe()).toBe(0);
    console.log(`hillclimb.yml, one iteration (run ${RUN.real}):\n${r.table()}`);
    expect(Object.fromEntries([...r.jobs.values()].map((j) => [j.id, j.result]))).toEqual({
      setup: 'success',
      'tpu-allocate': 'skipped',
      propose: 'success',
      'tools-relay': 'skipped',
      'cpu-gate': 'success',
      'measure-local': 'success',
      'measure-cloud': 'skipped',
      publish: 'success',
      'tpu-release': 'skipped',
      continue: 'success',
    });
    // The App-token step's condition (no HILLCLIMB_APP_ID) kept the offline stand-in from running.
    expect(r.text('publish')).not.toContain('cannot run here');
  });

  it('every job output reaches the jobs that need it, the attestations included', () => {
    const r = runs.real!;
    const checked = handOvers(r, workflowFile());
    for (const h of checked) expect(h.seen, `${h.to}: ${h.expression}`).toBe(h.sent);
    const seen = (to: string, expression: string) =>
      checked.find((h) => h.to === to && h.expression === expression)?.seen;
    const champion = r.output('setup', 'champion', 'champion')!;
    expect(champion).toMatch(/^[0-9a-f]{40}$/);
    for (const job of ['propose', 'cpu-gate', 'measure-local', 'publish'])
      expect(seen(job, 'needs.setup.outputs.champion'), job).toBe(champion);
    const cpu = JSON.parse(seen('measure-local', 'needs.cpu-gate.outputs.attestation')!);
    expect(cpu).toMatchObject({ phase: 'cpu-gate', champion, verified: true });
    const measured = JSON.parse(
      seen(
        'publish',
        'needs.measure-local.outputs.attestation || needs.measure-cloud.outputs.attestation || needs.cpu-gate.outputs.attestation',
      )!,
    );
    expect(measured).toMatchObject({
      phase: 'measure',
      champion,
      candidate: cpu.candidate,
      verdict: 'improved',
    });
    expect(seen('continue', 'needs.setup.outputs.next')).toBe(`gh${RUN.real}/2`);
  });

  it('the bundle artifact passes from job to job and keeps every phase', () => {
    const published = world.artifact(RUN.real, `bundle-gh${RUN.real}-i001-published`);
    expect(published).toBeDefined();
    const ev = JSON.parse(readFileSync(join(published!, 'evidence.json'), 'utf8'));
    expect(Object.keys(ev.steps)).toEqual([
      'prepare',
      'propose',
      'guard',
      'cpu-gate',
      'accelerator-gate',
      'measure',
      'profile',
      'decide',
      'record',
      'publish',
    ]);
    expect(ev.verdict).toBe('improved');
    if (usesRealArtifactActions()) {
      // Each job downloaded exactly the zip the job before it uploaded.
      const r = runs.real!;
      const digest = (job: string, what: 'uploaded artifact zip' | 'downloaded artifact') =>
        new RegExp(`SHA256 digest of ${what} is ([0-9a-f]{64})`).exec(r.text(job))?.[1];
      expect(digest('propose', 'uploaded artifact zip')).toMatch(/^[0-9a-f]{64}$/);
      expect(digest('cpu-gate', 'downloaded artifact')).toBe(digest('propose', 'uploaded artifact zip'));
      expect(digest('measure-local', 'downloaded artifact')).toBe(
        digest('cpu-gate', 'uploaded artifact zip'),
      );
      expect(digest('publish', 'downloaded artifact')).toBe(digest('measure-local', 'uploaded artifact zip'));
    }
  });

  it('publish opens one draft PR with one sticky comment, and the history goes on hillclimb-data', () => {
    const pulls = server.pullsOf(OWNER_REPO);
    expect(pulls).toHaveLength(1);
    expect(pulls[0]).toMatchObject({ head: `hillclimb/toy/gh${RUN.real}/i001`, base: 'main', draft: true });
    expect(pulls[0]!.labels).toContain('hillclimb:improved');
    expect(runs.real!.output('publish', 'pr-number', 'report')).toBe(String(pulls[0]!.number));
    const comments = server.commentsOn(OWNER_REPO, pulls[0]!.number);
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toContain(stickyMarker(STICKY_KEY));
    expect(comments[0]!.user.login).toBe('github-actions[bot]');
    expect(history()[0]).toMatchObject({ runId: `gh${RUN.real}`, iteration: 1, verdict: 'improved' });
    expect(server.violations).toEqual([]);
  });

  it('continue dispatches the next iteration through the API, with the validated inputs and the run id', () => {
    expect(runs.real!.text('continue')).toContain(`dispatched iteration gh${RUN.real}/2`);
    expect(server.dispatchesOf(OWNER_REPO)).toEqual([
      {
        workflow: 'hillclimb.yml',
        ref: 'main',
        by: 'github-actions[bot]',
        inputs: {
          target: '',
          iterations: '2',
          agent: 'replay',
          model: '',
          directives: '',
          backend: 'local',
          'tpu-type': '',
          zones: '',
          'dry-run': 'false',
          resume: `gh${RUN.real}/2`,
        },
      },
    ]);
  });

  it('the dispatched run is iteration 2 of the same run, from the new champion, and is the last', () => {
    const r = runs.next!;
    expect(r.code, r.describe()).toBe(0);
    expect(r.output('setup', 'run-id', 'inputs')).toBe(`gh${RUN.real}`);
    expect(r.output('setup', 'iteration', 'inputs')).toBe('2');
    expect(r.output('setup', 'more', 'inputs')).toBe('false');
    const first = JSON.parse(
      readFileSync(
        join(world.artifact(RUN.real, `bundle-gh${RUN.real}-i001-published`)!, 'evidence.json'),
        'utf8',
      ),
    );
    expect(r.output('setup', 'champion', 'champion')).toBe(first.candidate.logCommit);
    // The replay agent has no second patch: no-op, so nothing to gate or measure; it is still published.
    expect(r.output('propose', 'verdict', 'iterate')).toBe('no-op');
    expect(r.result('cpu-gate')).toBe('skipped');
    expect(r.result('measure-local')).toBe('skipped');
    expect(r.result('publish')).toBe('success');
    expect(r.result('continue')).toBe('skipped');
    expect(history()[1]).toMatchObject({ runId: `gh${RUN.real}`, iteration: 2, verdict: 'no-op' });
    // No second PR, no second comment, no second dispatch.
    expect(server.pullsOf(OWNER_REPO)).toHaveLength(1);
    expect(server.commentsOn(OWNER_REPO, server.pullsOf(OWNER_REPO)[0]!.number)).toHaveLength(1);
    expect(server.dispatchesOf(OWNER_REPO)).toHaveLength(1);
  });

  it('an agent that keeps failing as infrastructure (exit 75): retried, then a history row and a clear reason, no crash', () => {
    const r = runs.failing!;
    expect(r.code, r.describe()).toBe(0);
    const why =
      'propose: agent command: the agent reported an infrastructure failure (exit code 75): model API: connection reset (2 attempts)';
    expect(r.output('propose', 'verdict', 'iterate')).toBe('error');
    expect(r.output('propose', 'reason', 'iterate')).toBe(why);
    expect(r.output('publish', 'reason', 'report')).toBe(why);
    expect(history()[2]).toMatchObject({ runId: `gh${RUN.failing}`, verdict: 'error', reason: why });
    const ev = JSON.parse(remoteFile(repo, 'hillclimb-data', `runs/gh${RUN.failing}/i001/evidence.json`));
    expect(ev).toMatchObject({ verdict: 'error', verdictReasons: [why] });
    expect(ev.agent).toMatchObject({ kind: 'command', status: 'failed', exitCode: 75, attempts: 2 });
    expect(ev.failedAttempts.propose).toHaveLength(2);
    // No change, so nothing to review: no PR for it (the one PR is the real iteration's).
    expect(server.pullsOf(OWNER_REPO)).toHaveLength(1);
  });
});
