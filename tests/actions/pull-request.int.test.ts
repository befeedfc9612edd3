// A person's pull request through the actions, as pr-evidence.yml runs it: the CPU gate on the PR
// (fails the check when it fails), and on "/hillclimb measure" the guard, the measurement and one
// sticky comment on that PR (updated in place when measured again). A PR that touches the protected
// harness is invalid before anything measures it. Toy target, GitHub contract server.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stickyMarker } from '../../src/forge/sticky.js';
import { STICKY_KEY } from '../../src/loop/steps/publish.js';
import { GitHubContractServer } from '../helpers/github-contract-server.js';
import { tempDir } from '../helpers/paths.js';
import { gitIn, makeToyRepo, STANDARD_PATCHES, systemPython, TOY_CONFIG } from '../loop/toy-repo.js';
import { type ActionName, type ActionRun, runActionBundle } from './harness.js';

const REPO = 'octo/toy';
const BOT_TOKEN = 'ghs_hillclimbappinstallation02';
const HUMAN_TOKEN = 'ghp_octocatpersonaltoken0001';

describe('pull-request evidence through the actions', () => {
  const t = tempDir('hc-actions-pr-');
  const bare = join(t.dir, 'remote.git');
  let server: GitHubContractServer;
  let python: string;
  let jobs = 0;
  let pr = 0;
  const runs: Record<string, ActionRun> = {};

  const clone = (): string => {
    const dir = join(t.dir, `job${++jobs}`);
    execFileSync('git', ['clone', '-q', bare, dir]);
    return dir;
  };
  const handOver = (from: string, to: string, runId: string) =>
    cpSync(join(from, '.hillclimb', 'runs', runId), join(to, '.hillclimb', 'runs', runId), {
      recursive: true,
    });

  async function step(
    action: ActionName,
    cwd: string,
    inputs: Record<string, string>,
    env: Record<string, string> = {},
  ) {
    return runActionBundle(action, {
      cwd,
      inputs: { iteration: '1', ...inputs },
      env: { HILLCLIMB_PYTHON: python, ...env },
    });
  }

  /** A branch with an edit pushed to the remote, and a PR for it opened by a person through the API. */
  async function openPullRequest(seed: string, branch: string, file: string, edit: (s: string) => string) {
    gitIn(seed, 'checkout', '-q', '-b', branch, 'main');
    writeFileSync(join(seed, file), edit(readFileSync(join(seed, file), 'utf8')));
    gitIn(seed, 'commit', '-q', '-am', `${branch}: edit ${file}`);
    gitIn(seed, 'push', '-q', bare, `${branch}:refs/heads/${branch}`);
    gitIn(seed, 'checkout', '-q', 'main');
    const res = await fetch(`${server.url}/repos/${REPO}/pulls`, {
      method: 'POST',
      headers: { authorization: `token ${HUMAN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ title: branch, head: branch, base: 'main', body: 'by hand' }),
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as { number: number }).number;
  }

  beforeAll(async () => {
    python = systemPython();
    server = await GitHubContractServer.start();
    const seed = join(t.dir, 'seed');
    // The config names the replay agent, whose folder must exist; no job here runs an agent.
    makeToyRepo(
      seed,
      STANDARD_PATCHES.slice(0, 1),
      `${TOY_CONFIG}forge:\n  kind: github\n  github:\n    repository: ${REPO}\n    api_url: ${server.url}\n    git_url: ${bare}\n`,
    );
    mkdirSync(bare);
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
    gitIn(seed, 'push', '-q', bare, 'main:refs/heads/main');
    server.addRepo(REPO, bare);
    server.addToken(BOT_TOKEN, {
      login: 'hillclimb-app[bot]',
      kind: 'installation',
      permissions: { contents: 'read', pull_requests: 'write', issues: 'write' },
    });
    server.addToken(HUMAN_TOKEN, {
      login: 'octocat',
      kind: 'user',
      permissions: { pull_requests: 'write', contents: 'write' },
    });
    pr = await openPullRequest(seed, 'faster-kernel', 'toy/kernel.py', (s) =>
      s.replace('DELAY_S = 0.02', 'DELAY_S = 0.008'),
    );
    const head = gitIn(seed, 'rev-parse', 'faster-kernel').trim();
    const base = gitIn(seed, 'rev-parse', 'main').trim();
    const runId = `pr${pr}-${head.slice(0, 12)}`;
    // What the authorize job pins before any PR code runs, and every later job checks.
    const pinned = { base, 'pinned-source': head };
    const change = {
      base: 'origin/main',
      head: 'origin/faster-kernel',
      source: `pull request #${pr}`,
      'run-id': runId,
    };

    // on: pull_request — the CPU gate, no secrets, fails the check when the gate fails.
    runs.check = await step('kernel-test', clone(), {
      ...change,
      gate: 'cpu',
      guard: 'false',
      'fail-on-failure': 'true',
      store: 'local',
      forge: 'local',
    });
    // on: "/hillclimb measure" — guard + CPU gate (no credentials), then measure, then the comment.
    const prepare = clone();
    runs.prepare = await step('kernel-test', prepare, {
      ...change,
      gate: 'cpu',
      store: 'local',
      forge: 'local',
    });
    const measure = clone();
    handOver(prepare, measure, runId);
    runs.measure = await step('profile', measure, {
      'run-id': runId,
      store: 'local',
      forge: 'local',
      ...pinned,
      attestation: runs.prepare.outputs.attestation!,
    });
    // A dry run first: it must leave the PR alone, so the real one below creates the comment.
    for (const name of ['dry', 'comment', 'again']) {
      const comment = clone();
      handOver(measure, comment, runId);
      runs[name] = await step(
        'report',
        comment,
        {
          'run-id': runId,
          'pull-request': String(pr),
          store: 'local',
          ...pinned,
          attestation: runs.measure.outputs.attestation!,
          ...(name === 'dry' ? { 'dry-run': 'true' } : {}),
        },
        { GITHUB_TOKEN: BOT_TOKEN },
      );
    }

    const harnessPr = await openPullRequest(seed, 'loosen-check', 'harness/check.py', (s) =>
      s.replace('TOLERANCE = 0', 'TOLERANCE = 100'),
    );
    runs.harness = await step('kernel-test', clone(), {
      base: 'origin/main',
      head: 'origin/loosen-check',
      source: `pull request #${harnessPr}`,
      'run-id': `pr${harnessPr}`,
      gate: 'cpu',
      'fail-on-failure': 'true',
      store: 'local',
      forge: 'local',
    });
  }, 300_000);

  afterAll(async () => {
    await server?.close();
    t.cleanup();
  });

  it('the pull_request check runs the CPU suite on the change', () => {
    expect(runs.check!.code).toBe(0);
    expect(runs.check!.outputs).toMatchObject({ status: 'passed', tests: '3', pending: 'true' });
    const ev = JSON.parse(readFileSync(runs.check!.outputs['evidence-file']!, 'utf8'));
    expect(ev.steps.propose).toMatchObject({
      status: 'skipped',
      note: `pull request #${pr}: proposed by a person`,
    });
    expect(ev.candidate.changedPaths).toEqual(['toy/kernel.py']);
  });

  it('measure-on-comment guards, measures and writes one sticky comment on the PR, updated in place', () => {
    expect(runs.prepare!.outputs).toMatchObject({ status: 'passed', pending: 'true' });
    expect(runs.measure!.code).toBe(0);
    expect(runs.measure!.outputs.verdict).toBe('improved');
    expect(runs.comment!.code).toBe(0);
    expect(runs.comment!.outputs).toMatchObject({
      'pr-number': String(pr),
      'comment-operation': 'created',
      'pr-url': '',
    });
    expect(['updated', 'unchanged']).toContain(runs.again!.outputs['comment-operation']);
    expect(runs.again!.outputs['comment-id']).toBe(runs.comment!.outputs['comment-id']);
    const comments = server.commentsOn(REPO, pr);
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toContain(stickyMarker(STICKY_KEY));
    // The bundle is stored before the comment is rendered: the comment links to the stored evidence.
    expect(comments[0]!.body).toContain(runs.again!.outputs['bundle-url']!);
    expect(runs.comment!.outputs['bundle-url']).toMatch(/evidence\.json$/);
    expect(comments[0]!.user.login).toBe('hillclimb-app[bot]');
    // No iteration PR was opened for a person's change.
    expect(server.pullsOf(REPO).map((p) => p.head)).toEqual(['faster-kernel', 'loosen-check']);
    expect(server.violations).toEqual([]);
  });

  it('a dry run of the comment writes nothing to the PR', () => {
    expect(runs.dry!.code).toBe(0);
    expect(runs.dry!.outputs).toMatchObject({ 'pr-number': '', 'comment-operation': '', 'comment-id': '' });
    const ev = JSON.parse(readFileSync(runs.dry!.outputs['evidence-file']!, 'utf8'));
    expect(ev.steps.publish).toMatchObject({ status: 'skipped' });
    expect(ev.steps.publish.note).toMatch(
      new RegExp(`^dry run: would write the sticky comment on PR #${pr} `),
    );
  });

  it('a PR that touches the protected harness is invalid and fails the check without running it', () => {
    expect(runs.harness!.code).toBe(1);
    expect(runs.harness!.outputs).toMatchObject({ verdict: 'invalid', status: 'not-run', pending: 'false' });
    expect(runs.harness!.outputs.reason).toContain('harness/check.py');
    expect(runs.harness!.errors[0]).toMatch(
      /^the cpu gate did not pass: not run, the iteration is invalid \(.*harness\/check\.py/,
    );
  });
});
