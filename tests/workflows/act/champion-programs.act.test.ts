// hillclimb.yml under act, two iterations on fresh runners (issue 34): iteration 1 promotes a faster
// kernel that is slower only when its export can tell it is arm A (tests/loop/toy-repo.ts,
// ARM_A_SANDBAG_PATCH); iteration 2's candidate keeps that code and adds a docstring. The measuring job
// of iteration 2 starts with no state and holds no token: the programs the champion won with travel
// from iteration 1's publish job through the store (hillclimb-data) to iteration 2's setup job, which
// hands them over as an artifact with their digest; the champion is timed by them, and the candidate is
// `no-op` — not `improved` by the champion's handicap. (Were they lost, the champion would be exported
// again, arm-blind: tests/security/champion-programs.int.test.ts.) Then the champion is merged into main
// and a person's PR adding the same docstring is measured by `/hillclimb measure` (pr-evidence.yml):
// its authorize job hands main's kept programs over to the measuring job the same way.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ActRun, ActWorld, actBinary, runAct } from '../../helpers/act.js';
import { GitHubContractServer } from '../../helpers/github-contract-server.js';
import { tempDir } from '../../helpers/paths.js';
import { ARM_A_SANDBAG_PATCH, DOCSTRING_PATCH, TOY_CONFIG } from '../../loop/toy-repo.js';
import {
  GITHUB_URL,
  git,
  makeWorkflowRepo,
  OWNER_REPO,
  remoteFile,
  remoteFiles,
  syncWork,
  type WorkflowRepo,
} from './repo.js';

const act = actBinary();
const TOKEN = 'ghs_actrunnertoken0000000000000002';
const OUTSIDER_TOKEN = 'ghp_outsidecontributortoken00000001';
const RUN = { won: 2101, next: 2102, pr: 2103 };

describe.skipIf(act.skip)(
  `a champion that sandbags its own export, on fresh runners${act.skip ? ` (skipped: ${act.skip})` : ''}`,
  () => {
    const t = tempDir('hc-act-kept-'); // no "champion" in the path: the kernel looks for it;
    let server: GitHubContractServer;
    let world: ActWorld;
    let repo: WorkflowRepo;
    const runs: Record<string, ActRun> = {};

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
    /**
     * The champion merged into main, then a person's PR with the docstring (the comment-only change),
     * measured by a maintainer's `/hillclimb measure <sha>` on fresh runners.
     */
    const measurePullRequest = async (champion: string) => {
      execFileSync('git', ['--git-dir', repo.bare, 'update-ref', 'refs/heads/main', champion]);
      git(repo.seed, {}, 'fetch', '-q', repo.bare, champion);
      git(repo.seed, {}, 'checkout', '-q', '-B', 'docstring', champion);
      const kernel = join(repo.seed, 'toy', 'kernel.py');
      writeFileSync(kernel, DOCSTRING_PATCH.edit['toy/kernel.py']!(readFileSync(kernel, 'utf8')));
      git(repo.seed, {}, 'commit', '-q', '-am', 'docstring: say what compute does');
      git(repo.seed, {}, 'push', '-q', repo.bare, 'docstring:refs/heads/docstring');
      const head = git(repo.seed, {}, 'rev-parse', 'HEAD').trim();
      const res = await fetch(`${server.url}/repos/${OWNER_REPO}/pulls`, {
        method: 'POST',
        headers: { authorization: `token ${OUTSIDER_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ title: 'docstring', head: 'docstring', base: 'main', body: 'a docstring' }),
      });
      if (res.status !== 201) throw new Error(`PR: ${res.status} ${await res.text()}`);
      const { number } = (await res.json()) as { number: number };
      syncWork(repo, world.env(), 'main');
      const payload = {
        action: 'created',
        issue: {
          number,
          pull_request: { url: `${server.url}/repos/${OWNER_REPO}/pulls/${number}` },
        },
        comment: { body: `/hillclimb measure ${head}`, user: { login: 'octocat' } },
        repository: { full_name: OWNER_REPO, default_branch: 'main' },
      };
      const run = await runAct({
        act: act.path!,
        world,
        repo: repo.work,
        workflow: 'pr-evidence.yml',
        event: 'issue_comment',
        payload,
        secrets: { GITHUB_TOKEN: TOKEN },
        apiUrl: server.url,
        runId: RUN.pr,
      });
      return { run, comments: server.commentsOn(OWNER_REPO, number) };
    };
    let pr: Awaited<ReturnType<typeof measurePullRequest>> | undefined;
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
        remotes: { [GITHUB_URL]: bare, [`${server.url}/${OWNER_REPO}.git`]: bare },
      });
      repo = makeWorkflowRepo(
        t.dir,
        TOY_CONFIG,
        [ARM_A_SANDBAG_PATCH, { ...DOCSTRING_PATCH, name: '0002-docstring' }],
        world.env(),
      );
      server.addRepo(OWNER_REPO, repo.bare);
      server.addToken(TOKEN, {
        login: 'github-actions[bot]',
        kind: 'installation',
        permissions: { contents: 'write', pull_requests: 'write', issues: 'write', actions: 'write' },
      });
      server.addToken(OUTSIDER_TOKEN, {
        login: 'outsider',
        kind: 'user',
        permissions: { pull_requests: 'write' },
      });
      server.setCollaborator(OWNER_REPO, 'octocat', 'maintain');
      runs.won = await dispatch(RUN.won, { agent: 'replay', backend: 'local', iterations: '2' });
      const next = server.dispatchesOf(OWNER_REPO)[0];
      if (next) {
        runs.next = await dispatch(
          RUN.next,
          Object.fromEntries(Object.entries(next.inputs).map(([k, v]) => [k, String(v)])),
          next.ref,
        );
      }
      const champion = history()[0]?.candidateCommit;
      if (runs.next && typeof champion === 'string') pr = await measurePullRequest(champion);
    }, 900_000);

    afterAll(async () => {
      await server?.close();
      if (!process.env.HILLCLIMB_KEEP_ACT) t.cleanup();
    });

    it('iteration 1 promotes the kernel', () => {
      expect(runs.won!.code, runs.won!.describe()).toBe(0);
      expect(history()[0]).toMatchObject({ iteration: 1, verdict: 'improved' });
    });

    it('the promoted programs are in the store under the champion’s tree, by hash in its history row', () => {
      const row = history()[0]!;
      const kept = row.programs as { tree: string; platform: string; sha256: Record<string, string> };
      expect(kept).toMatchObject({
        platform: 'cpu',
        sha256: { 'fwd_bwd@toy': expect.stringMatching(/^[0-9a-f]{64}$/) },
      });
      const stored = remoteFiles(repo, 'hillclimb-data').filter((f) =>
        f.startsWith(`programs/toy/${kept.tree}/`),
      );
      expect(stored.some((f) => f.endsWith('/kept.json'))).toBe(true);
      expect(stored.some((f) => f.endsWith('/fwd_bwd_toy.jaxexport'))).toBe(true);
    });

    it('iteration 2, on a runner without state or token, times the champion by the programs it won with: no-op', () => {
      const r = runs.next;
      expect(r, 'the continue job dispatched no second iteration').toBeDefined();
      expect(r!.code, r!.describe()).toBe(0);
      expect(r!.output('setup', 'kept-programs', 'champion')).toMatch(/^[0-9a-f]{64}$/);
      expect(r!.result('measure-local')).toBe('success');
      const row = history()[1]!;
      expect(row, JSON.stringify(row)).toMatchObject({ iteration: 2, verdict: 'no-op' });
      expect(String(row.reason)).toContain('identical');
      const ev = JSON.parse(remoteFile(repo, 'hillclimb-data', `runs/gh${RUN.won}/i002/evidence.json`));
      expect(ev.championPrograms).toEqual({ cpu: 'stored' });
    });

    it('/hillclimb measure of a PR on main after the merge, on a fresh runner: the kept programs again, no-op', () => {
      expect(pr, 'the PR was not measured (no champion after iteration 1)').toBeDefined();
      const { run: r, comments } = pr!;
      expect(r.code, r.describe()).toBe(0);
      expect(r.output('authorize', 'kept-programs', 'kept')).toMatch(/^[0-9a-f]{64}$/);
      expect(r.result('measure-local')).toBe('success');
      expect(r.output('comment', 'verdict')).toBe('no-op');
      expect(comments).toHaveLength(1);
      expect(comments[0]!.body).toContain('the champion timed by the programs it won with (from the store)');
    });
  },
);
