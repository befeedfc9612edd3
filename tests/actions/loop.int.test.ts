// One loop iteration driven through the action bundles, job by job as hillclimb.yml runs it: every
// job is a fresh clone of the remote, the evidence bundle travels between jobs as an "artifact"
// (a copied folder), history lives on the data branch (branch store), and publishing talks to the
// GitHub contract server. Then the publish job runs again: the PR and the sticky comment are updated
// in place, never duplicated. Toy target (stdlib Python), replay agent, local compute.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stickyMarker } from '../../src/forge/sticky.js';
import { STICKY_KEY } from '../../src/loop/steps/publish.js';
import { GitHubContractServer } from '../helpers/github-contract-server.js';
import { tempDir } from '../helpers/paths.js';
import { makeToyRepo, STANDARD_PATCHES, systemPython, TOY_CONFIG } from '../loop/toy-repo.js';
import { type ActionName, type ActionRun, type RunOptions, runActionBundle } from './harness.js';

const REPO = 'octo/toy';
const TOKEN = 'ghs_hillclimbappinstallation01';
const RUN_ID = 'gh1001-1';

describe('a loop iteration through the actions (toy target, contract server, branch store)', () => {
  const t = tempDir('hc-actions-loop-');
  const bare = join(t.dir, 'remote.git');
  const artifacts = join(t.dir, 'artifacts');
  let server: GitHubContractServer;
  let python: string;
  let jobs = 0;
  const runs: Record<string, ActionRun> = {};

  /** A fresh clone of the remote with the named artifact (a bundle folder) downloaded into it. */
  function job(artifact?: string): string {
    const dir = join(t.dir, `job${++jobs}`);
    execFileSync('git', ['clone', '-q', bare, dir]);
    if (artifact)
      cpSync(join(artifacts, artifact), join(dir, '.hillclimb', 'runs', RUN_ID, 'i001'), { recursive: true });
    return dir;
  }

  function upload(dir: string, name: string, run: ActionRun): void {
    expect(relative(dir, run.outputs['bundle-dir']!)).toBe(join('.hillclimb', 'runs', RUN_ID, 'i001'));
    cpSync(run.outputs['bundle-dir']!, join(artifacts, name), { recursive: true });
  }

  async function step(
    action: ActionName,
    cwd: string,
    inputs: Record<string, string>,
    opts: Partial<RunOptions> = {},
  ) {
    const run = await runActionBundle(action, {
      cwd,
      inputs: { 'run-id': RUN_ID, iteration: '1', ...inputs },
      env: { HILLCLIMB_PYTHON: python, ...opts.env },
    });
    if (run.code !== 0) throw new Error(`${action} failed (${run.code}):\n${run.stdout}\n${run.stderr}`);
    return run;
  }

  beforeAll(async () => {
    python = systemPython();
    server = await GitHubContractServer.start();
    const config = `${TOY_CONFIG}forge:
  kind: github
  base: main
  github:
    repository: ${REPO}
    api_url: ${server.url}
    git_url: ${bare}
store:
  kind: branch
`;
    const seed = join(t.dir, 'seed');
    makeToyRepo(seed, STANDARD_PATCHES.slice(0, 1), config);
    mkdirSync(bare);
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
    execFileSync('git', ['push', '-q', bare, 'main:refs/heads/main'], { cwd: seed });
    server.addRepo(REPO, bare);
    server.addToken(TOKEN, {
      login: 'hillclimb-app[bot]',
      kind: 'installation',
      permissions: { contents: 'write', pull_requests: 'write', issues: 'write' },
    });

    // setup resolves the champion every later job checks its bundle against.
    const base = execFileSync('git', ['--git-dir', bare, 'rev-parse', 'main'], { encoding: 'utf8' }).trim();
    // propose: the agent job — no token, forge local, history read from the data branch (empty).
    let dir = job();
    runs.propose = await step('iterate', dir, { iterations: '1', forge: 'local', base });
    upload(dir, 'bundle', runs.propose);
    // cpu-gate: no secrets at all; local store and forge. Nothing vouches for the agent job's bundle.
    dir = job('bundle');
    runs.cpu = await step('kernel-test', dir, { gate: 'cpu', forge: 'local', store: 'local', base });
    upload(dir, 'bundle', runs.cpu);
    // measure: accelerator gate (skipped on local compute), A/B + profile, trace diff; the bundle is
    // believed because the CPU gate job attested it.
    dir = job('bundle');
    runs.accelerator = await step('kernel-test', dir, {
      gate: 'accelerator',
      forge: 'local',
      store: 'local',
      base,
      attestation: runs.cpu.outputs.attestation!,
    });
    runs.profile = await step('profile', dir, {
      forge: 'local',
      store: 'local',
      base,
      attestation: runs.cpu.outputs.attestation!,
    });
    runs.traceDiff = await step('trace-diff', dir, {});
    upload(dir, 'measured', runs.profile);
    // publish: the only job with a write token.
    const measured = { base, attestation: runs.profile.outputs.attestation! };
    dir = job('measured');
    runs.report = await step('report', dir, measured, { env: { GITHUB_TOKEN: TOKEN } });
    upload(dir, 'published', runs.report);
    // The publish job re-run on a fresh runner: it downloads the measure job's bundle again (publish
    // keeps its own copy under another name) and updates in place.
    dir = job('measured');
    runs.again = await step('report', dir, measured, { env: { GITHUB_TOKEN: TOKEN } });
    // The next workflow run (the continuation): iteration 2 starts from the champion the data branch
    // names, on a fresh clone. The replay agent has no second patch, so it ends as no-op.
    dir = job();
    runs.next = await step('iterate', dir, { iteration: '2', iterations: '2', forge: 'local' });
    // A publish whose bundle upload was lost (runner gone): re-run from the measure job's bundle.
    dir = job('measured');
    runs.lost = await step('report', dir, measured, { env: { GITHUB_TOKEN: TOKEN } });
  }, 300_000);

  afterAll(async () => {
    await server?.close();
    t.cleanup();
  });

  it('propose runs the agent and hands over a candidate', () => {
    expect(runs.propose!.outputs).toMatchObject({
      verdict: '',
      pending: 'true',
      'has-candidate': 'true',
      'agent-status': 'finished',
      subject: expect.stringContaining('shorter-delay'),
    });
    expect(runs.propose!.outputs['candidate-branch']).toBe(`hillclimb/toy/${RUN_ID}/i001`);
    expect(runs.propose!.outputs.hypothesis).toBe('Less waiting per call.');
    expect(JSON.parse(readFileSync(runs.propose!.outputs['result-file']!, 'utf8'))).toMatchObject({
      next_idea: 'Fuse compute.',
    });
    expect(existsSync(join(artifacts, 'bundle', 'candidate', 'candidate.bundle'))).toBe(true);
    expect(runs.propose!.stdout).toContain('::group::hillclimb: propose (prepare, agent, guard)');
    expect(runs.propose!.summary).toContain(`## hillclimb toy, run \`${RUN_ID}\``);
  });

  it('the CPU gate passes on a fresh clone that only has the bundle', () => {
    expect(runs.cpu!.outputs).toMatchObject({
      status: 'passed',
      tests: '3',
      passed: '3',
      failed: '0',
      pending: 'true',
    });
    expect(runs.cpu!.outputs['junit-file']).toMatch(/gates\/cpu\.junit\.xml$/);
    expect(runs.cpu!.summary).toContain('#### Checks');
  });

  it('the accelerator gate is skipped on local compute, and says why', () => {
    expect(runs.accelerator!.outputs).toMatchObject({ status: 'skipped', pending: 'true' });
    expect(runs.accelerator!.outputs['gate-reason']).toContain('no accelerator');
  });

  it('profile measures, profiles and decides; trace-diff tabulates the trace diff', () => {
    const p = runs.profile!.outputs;
    expect(p.verdict).toBe('improved');
    expect(p.pending).toBe('false');
    expect(Number(p.ratio)).toBeGreaterThan(1.5);
    expect(Number(p['ci-low'])).toBeGreaterThan(1);
    expect(p.change).toMatch(/^run time −\d/);
    expect(p['profile-status']).toBe('done');
    expect(p['runs-per-arm']).toMatch(/^\d+\+\d+$/);
    const d = runs.traceDiff!.outputs;
    expect(d.status).toBe('done');
    expect(d['top-change']).toMatch(/^toy_kernel −?-?\d/);
    expect(JSON.parse(readFileSync(d['diff-file']!, 'utf8')).schema).toBe('hillclimb.trace-diff/2');
    expect(runs.traceDiff!.summary).toContain('#### Hotspots');
  });

  it('publish opens one draft PR with one sticky comment on the contract server', () => {
    const r = runs.report!.outputs;
    expect(r).toMatchObject({
      'pr-operation': 'created',
      'comment-operation': 'created',
      verdict: 'improved',
    });
    const pulls = server.pullsOf(REPO);
    expect(pulls).toHaveLength(1);
    expect(pulls[0]).toMatchObject({
      number: Number(r['pr-number']),
      head: `hillclimb/toy/${RUN_ID}/i001`,
      draft: true,
    });
    expect(pulls[0]!.labels).toContain('hillclimb:improved');
    const comments = server.commentsOn(REPO, pulls[0]!.number);
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toContain(stickyMarker(STICKY_KEY));
    expect(comments[0]!.id).toBe(Number(r['comment-id']));
    expect(runs.report!.masked).toContain(TOKEN);
    expect(server.violations).toEqual([]);
  });

  it('history and the bundle land on the data branch, readable by the next workflow run', () => {
    const files = execFileSync('git', ['--git-dir', bare, 'ls-tree', '-r', '--name-only', 'hillclimb-data'], {
      encoding: 'utf8',
    }).split('\n');
    expect(files).toContain('history/toy.jsonl');
    expect(files).toContain(`runs/${RUN_ID}/i001/evidence.json`);
    const history = execFileSync('git', ['--git-dir', bare, 'show', 'hillclimb-data:history/toy.jsonl'], {
      encoding: 'utf8',
    })
      .trim()
      .split('\n');
    expect(history).toHaveLength(1);
    expect(JSON.parse(history[0]!)).toMatchObject({ runId: RUN_ID, iteration: 1, verdict: 'improved' });
  });

  it('a re-run of publish finds its work done: same PR, same comment, nothing created twice', () => {
    const again = runs.again!.outputs;
    expect(again['pr-number']).toBe(runs.report!.outputs['pr-number']);
    expect(again['comment-id']).toBe(runs.report!.outputs['comment-id']);
    expect(server.pullsOf(REPO)).toHaveLength(1);
    expect(server.commentsOn(REPO, Number(again['pr-number']))).toHaveLength(1);
  });

  it('a publish re-run from an older bundle remakes the same log commit: nothing moves, nothing is duplicated', () => {
    const lost = runs.lost!.outputs;
    expect(lost['pr-number']).toBe(runs.report!.outputs['pr-number']);
    expect(lost['comment-id']).toBe(runs.report!.outputs['comment-id']);
    // The log-entry commit is dated like the candidate, so recording again makes the very same commit:
    // the branch does not move, and the PR and the comment are unchanged.
    expect(lost['pr-operation']).toBe('unchanged');
    expect(lost['comment-operation']).toBe('unchanged');
    expect(lost.branch).toBe(`hillclimb/toy/${RUN_ID}/i001`);
    expect(server.pullsOf(REPO)).toHaveLength(1);
    expect(server.commentsOn(REPO, Number(lost['pr-number']))).toHaveLength(1);
    expect(server.countRequests('pulls/create')).toBe(1);
    expect(server.countRequests('issues/create-comment')).toBe(1);
    const history = execFileSync('git', ['--git-dir', bare, 'show', 'hillclimb-data:history/toy.jsonl'], {
      encoding: 'utf8',
    });
    expect(history.trim().split('\n')).toHaveLength(1);
    expect(server.violations).toEqual([]);
  });

  it('the next workflow run starts from the champion recorded on the data branch', () => {
    const first = JSON.parse(readFileSync(join(artifacts, 'published', 'evidence.json'), 'utf8'));
    const next = JSON.parse(readFileSync(runs.next!.outputs['evidence-file']!, 'utf8'));
    expect(first.verdict).toBe('improved');
    expect(next.base.commit).toBe(first.candidate.logCommit);
    expect(next.base.commit).not.toBe(first.base.commit);
    expect(runs.next!.outputs).toMatchObject({
      verdict: 'no-op',
      pending: 'false',
      'has-candidate': 'false',
    });
  });

  it('every job left its evidence in the bundle it handed on', () => {
    const steps = JSON.parse(readFileSync(join(artifacts, 'measured', 'evidence.json'), 'utf8')).steps;
    expect(Object.keys(steps)).toEqual([
      'prepare',
      'propose',
      'guard',
      'cpu-gate',
      'accelerator-gate',
      'measure',
      'profile',
      'decide',
    ]);
    // One metrics file per round and arm (at least runs_per_arm rounds), and the verifier's sessions.
    expect(readdirSync(join(artifacts, 'measured', 'measure')).length).toBeGreaterThanOrEqual(10);
    expect(readdirSync(join(artifacts, 'measured', 'verify')).some((f) => f.endsWith('.session.json'))).toBe(
      true,
    );
  });
});
