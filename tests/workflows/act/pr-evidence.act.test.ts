// pr-evidence.yml, run by nektos/act (jobs on the host) against the GitHub contract server, on the toy
// target (local compute backend) with two people's pull requests: one that speeds up the kernel, one
// that loosens the protected harness's tolerance. Runs:
//   - `pull_request` on each: the CPU gate on the PR's merge commit. The harness PR is not guarded here
//     (`guard: false`: a check of its tests only), so its tests run and pass;
//   - `/hillclimb measure` from someone without write access: refused by authorize, nothing else runs;
//   - `/hillclimb measure <12 hex digits>` by a maintainer: refused, only a full SHA pins a commit;
//   - `/hillclimb measure <sha>` by a maintainer on each PR: authorize (through `gh api`) → prepare →
//     measure-local → comment; measure-cloud (GCP) does not run for this local-backend repository. The
//     kernel PR gets one sticky comment with its measurement; the harness PR is invalid before anything
//     measures it, and its comment says so instead of "pending".
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stickyMarker } from '../../../src/forge/sticky.js';
import { STICKY_KEY } from '../../../src/loop/steps/publish.js';
import { type ActRun, ActWorld, actBinary, handOvers, runAct } from '../../helpers/act.js';
import { type CommentRecord, GitHubContractServer } from '../../helpers/github-contract-server.js';
import { tempDir } from '../../helpers/paths.js';
import { STANDARD_PATCHES, TOY_CONFIG } from '../../loop/toy-repo.js';
import {
  GITHUB_URL,
  git,
  makeWorkflowRepo,
  OWNER_REPO,
  remoteRef,
  syncWork,
  type WorkflowRepo,
} from './repo.js';

const act = actBinary();
const RUNNER_TOKEN = 'ghs_actrunnertoken0000000000000002';
const OUTSIDER_TOKEN = 'ghp_outsidecontributortoken00000001';
const RUN = {
  checkKernel: 2001,
  checkHarness: 2002,
  refused: 2003,
  measureKernel: 2004,
  measureHarness: 2005,
  noCloud: 2006,
  shortPin: 2007,
};
/** compute.backend tpu-vm, in a repository that never set up GCP (no WIF variables). */
const TPU_VM = `compute:
  backend: tpu-vm
  tpu_vm:
    project: no-such-project
    zones: [us-east5-a]
    accelerator_type: v5p-8
    runtime_version: v2-alpha-tpuv5
`;

interface Pr {
  number: number;
  head: string;
  branch: string;
}

describe.skipIf(act.skip)(`pr-evidence.yml under act${act.skip ? ` (skipped: ${act.skip})` : ''}`, () => {
  const t = tempDir('hc-act-pr-');
  let server: GitHubContractServer;
  let world: ActWorld;
  let repo: WorkflowRepo;
  const runs: Record<string, ActRun> = {};
  const prs: Record<'kernel' | 'harness', Pr> = {} as Record<'kernel' | 'harness', Pr>;
  let base = '';
  /** What the server and the remote held right after a run (later runs change both). */
  const after: Record<string, { comments: CommentRecord[]; base: string; merge: string }> = {};
  const snapshot = (name: string, pr: Pr) => {
    after[name] = {
      comments: structuredClone(server.commentsOn(OWNER_REPO, pr.number)),
      base: remoteRef(repo, 'main'),
      merge: remoteRef(repo, `refs/pull/${pr.number}/merge`),
    };
  };
  const repository = { full_name: OWNER_REPO, default_branch: 'main' };
  const workflowFile = () => join(repo.work, '.github', 'workflows', 'pr-evidence.yml');

  /** A contributor's branch with one edit, pushed, and a PR for it opened through the API. */
  async function openPullRequest(branch: string, file: string, edit: (s: string) => string): Promise<Pr> {
    git(repo.seed, {}, 'checkout', '-q', '-b', branch, 'main');
    writeFileSync(join(repo.seed, file), edit(readFileSync(join(repo.seed, file), 'utf8')));
    git(repo.seed, {}, 'commit', '-q', '-am', `${branch}: edit ${file}`);
    git(repo.seed, {}, 'push', '-q', repo.bare, `${branch}:refs/heads/${branch}`);
    git(repo.seed, {}, 'checkout', '-q', 'main');
    const res = await fetch(`${server.url}/repos/${OWNER_REPO}/pulls`, {
      method: 'POST',
      headers: { authorization: `token ${OUTSIDER_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ title: branch, head: branch, base: 'main', body: 'please measure' }),
    });
    if (res.status !== 201) throw new Error(`PR for ${branch}: ${res.status} ${await res.text()}`);
    const { number } = (await res.json()) as { number: number };
    return { number, branch, head: remoteRef(repo, branch) };
  }

  const pullRequestEvent = (pr: Pr, runId: number) => {
    syncWork(repo, world.env(), `refs/pull/${pr.number}/merge`);
    const payload = {
      action: 'opened',
      number: pr.number,
      pull_request: {
        number: pr.number,
        head: { ref: pr.branch, sha: pr.head },
        base: { ref: 'main', sha: base },
        user: { login: 'outsider' },
      },
      repository,
    };
    return runAct({
      act: act.path!,
      world,
      repo: repo.work,
      workflow: 'pr-evidence.yml',
      event: 'pull_request',
      payload,
      secrets: { GITHUB_TOKEN: RUNNER_TOKEN },
      apiUrl: server.url,
      runId,
    });
  };

  const commentEvent = (pr: Pr, login: string, body: string, runId: number) => {
    syncWork(repo, world.env(), 'main');
    const payload = {
      action: 'created',
      issue: {
        number: pr.number,
        pull_request: { url: `${server.url}/repos/${OWNER_REPO}/pulls/${pr.number}` },
      },
      comment: { body, user: { login } },
      repository,
    };
    return runAct({
      act: act.path!,
      world,
      repo: repo.work,
      workflow: 'pr-evidence.yml',
      event: 'issue_comment',
      payload,
      secrets: { GITHUB_TOKEN: RUNNER_TOKEN },
      apiUrl: server.url,
      runId,
    });
  };

  beforeAll(async () => {
    server = await GitHubContractServer.start();
    const bare = join(t.dir, 'remote.git');
    world = new ActWorld({
      dir: join(t.dir, 'act'),
      remotes: { [GITHUB_URL]: bare, [`${server.url}/${OWNER_REPO}.git`]: bare },
    });
    repo = makeWorkflowRepo(t.dir, TOY_CONFIG, STANDARD_PATCHES.slice(0, 1), world.env());
    base = remoteRef(repo, 'main');
    server.addRepo(OWNER_REPO, repo.bare);
    server.addToken(RUNNER_TOKEN, {
      login: 'github-actions[bot]',
      kind: 'installation',
      permissions: { contents: 'write', pull_requests: 'write', issues: 'write' },
    });
    server.addToken(OUTSIDER_TOKEN, {
      login: 'outsider',
      kind: 'user',
      permissions: { pull_requests: 'write' },
    });
    server.setCollaborator(OWNER_REPO, 'octocat', 'maintain');
    prs.kernel = await openPullRequest('faster-kernel', 'toy/kernel.py', (s) =>
      s.replace('DELAY_S = 0.02', 'DELAY_S = 0.008'),
    );
    prs.harness = await openPullRequest('loosen-check', 'harness/check.py', (s) =>
      s.replace('TOLERANCE = 0', 'TOLERANCE = 100'),
    );

    runs.checkKernel = await pullRequestEvent(prs.kernel, RUN.checkKernel);
    runs.checkHarness = await pullRequestEvent(prs.harness, RUN.checkHarness);
    runs.refused = await commentEvent(prs.kernel, 'outsider', '/hillclimb measure', RUN.refused);
    snapshot('refused', prs.kernel);
    runs.shortPin = await commentEvent(
      prs.kernel,
      'octocat',
      `/hillclimb measure ${prs.kernel.head.slice(0, 12)}`,
      RUN.shortPin,
    );
    runs.measureKernel = await commentEvent(
      prs.kernel,
      'octocat',
      `/hillclimb measure ${prs.kernel.head}`,
      RUN.measureKernel,
    );
    snapshot('measureKernel', prs.kernel);
    runs.measureHarness = await commentEvent(
      prs.harness,
      'octocat',
      `/hillclimb measure ${prs.harness.head}`,
      RUN.measureHarness,
    );
    snapshot('measureHarness', prs.harness);
    // The maintainers switch the repository to TPU VMs without setting up GCP; GitHub recomputes the
    // PR's merge commit on the new base; the kernel PR is measured again.
    writeFileSync(
      join(repo.seed, 'hillclimb.yml'),
      `${readFileSync(join(repo.seed, 'hillclimb.yml'), 'utf8')}${TPU_VM}`,
    );
    git(repo.seed, {}, 'commit', '-q', '-am', 'compute: TPU VMs');
    git(repo.seed, {}, 'push', '-q', repo.bare, 'main:refs/heads/main');
    server.syncPullRefs(OWNER_REPO, prs.kernel.number);
    runs.noCloud = await commentEvent(
      prs.kernel,
      'octocat',
      `/hillclimb measure ${prs.kernel.head}`,
      RUN.noCloud,
    );
    snapshot('noCloud', prs.kernel);
  }, 1_200_000);

  afterAll(async () => {
    await server?.close();
    // HILLCLIMB_KEEP_ACT=1 keeps the act logs and the repositories for a look after a failure.
    if (!process.env.HILLCLIMB_KEEP_ACT) t.cleanup();
  });

  const results = (r: ActRun) => Object.fromEntries([...r.jobs.values()].map((j) => [j.id, j.result]));

  it('pull_request: the CPU gate runs the kernel PR’s tests on its merge commit', () => {
    const r = runs.checkKernel!;
    expect(r.code, r.describe()).toBe(0);
    expect(r.result('cpu-gate')).toBe('success');
    for (const job of ['authorize', 'prepare', 'measure-local', 'measure-cloud', 'comment'])
      expect(r.result(job), job).toBe('skipped');
    expect(r.output('cpu-gate', 'status')).toBe('passed');
    expect(r.output('cpu-gate', 'tests')).toBe('3');
  });

  it('pull_request: a PR touching the protected harness is not guarded there, so its tests run and pass', () => {
    const r = runs.checkHarness!;
    expect(r.code, r.describe()).toBe(0);
    expect(r.result('cpu-gate')).toBe('success');
    expect(r.output('cpu-gate', 'status')).toBe('passed');
    expect(r.output('cpu-gate', 'tests')).toBe('3');
    expect(r.output('cpu-gate', 'verdict')).toBe('');
    expect(r.errors('cpu-gate')).toEqual([]);
  });

  it('/hillclimb measure from someone without write access is refused by authorize; nothing else runs', () => {
    const r = runs.refused!;
    expect(r.result('authorize')).toBe('failure');
    expect(r.errors('authorize')).toEqual(['outsider needs write access to run /hillclimb measure']);
    for (const job of ['prepare', 'measure-local', 'measure-cloud', 'comment'])
      expect(r.result(job), job).toBe('skipped');
    expect(after.refused!.comments).toHaveLength(0);
  });

  it('a maintainer pinning a short SHA is refused: a prefix can be matched by a second, crafted commit', () => {
    const r = runs.shortPin!;
    expect(r.result('authorize')).toBe('failure');
    expect(r.errors('authorize')).toEqual([
      `pin the full 40-character commit SHA: /hillclimb measure ${prs.kernel!.head}`,
    ]);
    for (const job of ['prepare', 'measure-local', 'measure-cloud', 'comment'])
      expect(r.result(job), job).toBe('skipped');
  });

  it('/hillclimb measure <sha>: authorize → prepare → measure-local → comment; measure-cloud does not run', () => {
    const r = runs.measureKernel!;
    expect(r.code, r.describe()).toBe(0);
    console.log(`pr-evidence.yml, /hillclimb measure (run ${RUN.measureKernel}):\n${r.table()}`);
    expect(results(r)).toEqual({
      'cpu-gate': 'skipped',
      authorize: 'success',
      prepare: 'success',
      'measure-local': 'success',
      'measure-cloud': 'skipped',
      comment: 'success',
    });
    // The permission check and the PR head came from the API, through gh.
    expect(world.ghCalls()).toContainEqual([
      'api',
      `repos/${OWNER_REPO}/collaborators/octocat/permission`,
      '--jq',
      '.permission',
    ]);
    expect(world.ghCalls()).toContainEqual(['api', `repos/${OWNER_REPO}/pulls/${prs.kernel.number}`]);
  });

  it('authorize pins head, merge commit and base, and every later job gets them and the attestations', () => {
    const r = runs.measureKernel!;
    const checked = handOvers(r, workflowFile());
    for (const h of checked) expect(h.seen, `${h.to}: ${h.expression}`).toBe(h.sent);
    const seen = (to: string, expression: string) =>
      checked.find((h) => h.to === to && h.expression === expression)?.seen;
    const { merge } = after.measureKernel!;
    for (const job of ['prepare', 'measure-local', 'comment']) {
      expect(seen(job, 'needs.authorize.outputs.base'), job).toBe(base);
    }
    expect(seen('prepare', 'needs.authorize.outputs.merge')).toBe(merge);
    expect(seen('measure-local', 'needs.authorize.outputs.merge')).toBe(merge);
    expect(r.output('authorize', 'head', 'check')).toBe(prs.kernel.head);
    const prepared = JSON.parse(seen('measure-local', 'needs.prepare.outputs.attestation')!);
    expect(prepared).toMatchObject({ phase: 'cpu-gate', champion: base, verified: true });
    const measured = JSON.parse(
      seen(
        'comment',
        'needs.measure-local.outputs.attestation || needs.measure-cloud.outputs.attestation || needs.prepare.outputs.attestation',
      )!,
    );
    expect(measured).toMatchObject({ phase: 'measure', champion: base, verdict: 'improved', verified: true });
  });

  it('the kernel PR gets one sticky comment with its measurement, by the workflow token', () => {
    const { comments } = after.measureKernel!;
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toContain(stickyMarker(STICKY_KEY));
    expect(comments[0]!.user.login).toBe('github-actions[bot]');
    expect(comments[0]!.body.toLowerCase()).not.toContain('pending');
    const r = runs.measureKernel!;
    expect(r.output('comment', 'verdict')).toBe('improved');
    expect(r.output('comment', 'comment-operation')).toBe('created');
    expect(r.output('comment', 'comment-id')).toBe(String(comments[0]!.id));
    // The bundle went to the data branch first; the comment links to it.
    expect(comments[0]!.body).toContain(r.output('comment', 'bundle-url')!);
    expect(server.violations).toEqual([]);
  });

  it('a maintainer’s measure of the harness PR: invalid before anything measures it, and the comment says why', () => {
    const r = runs.measureHarness!;
    expect(r.code, r.describe()).toBe(0);
    expect(results(r)).toEqual({
      'cpu-gate': 'skipped',
      authorize: 'success',
      prepare: 'success',
      'measure-local': 'skipped',
      'measure-cloud': 'skipped',
      comment: 'success',
    });
    expect(r.output('prepare', 'verdict', 'gate')).toBe('invalid');
    expect(r.output('prepare', 'reason', 'gate')).toContain('harness/check.py');
    const { comments } = after.measureHarness!;
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toContain('harness/check.py');
    expect(comments[0]!.body.toLowerCase()).not.toContain('pending');
  });

  it('a repository set to TPU VMs without GCP: measure-cloud fails at auth, and the sticky comment says the measurement did not finish', () => {
    const r = runs.noCloud!;
    expect(results(r)).toEqual({
      'cpu-gate': 'skipped',
      authorize: 'success',
      prepare: 'success',
      'measure-local': 'skipped',
      'measure-cloud': 'failure',
      comment: 'success',
    });
    expect(r.output('authorize', 'backend')).toBe('tpu-vm');
    expect(r.errors('measure-cloud').join('\n')).toContain('cannot run here');
    expect(r.output('comment', 'verdict')).toBe('error');
    // The same sticky comment, updated in place: no longer the earlier result, and not "pending".
    const { comments } = after.noCloud!;
    expect(comments).toHaveLength(1);
    expect(comments[0]!.id).toBe(after.measureKernel!.comments[0]!.id);
    expect(r.output('comment', 'comment-operation')).toBe('updated');
    expect(comments[0]!.body).toContain(r.output('comment', 'reason')!);
    expect(comments[0]!.body.toLowerCase()).not.toContain('pending');
  });
});
