// hillclimb.yml with loop.candidates: 3 (issue 25), run by nektos/act against the GitHub contract server
// on the toy target with the replay agent and the local backend: one wrong candidate (invalid at its CPU
// gate), one null (screened out), one real gain (the winner, measured in full on fresh rounds).
//   - propose and cpu-gate run as matrices of three legs, each with its own bundle artifact;
//   - each gate leg's attestation reaches the measure job under its own output name (attestation-c<s>),
//     which act does only with the matrix-outputs fix of scripts/build-act.mjs, as GitHub does;
//   - the measure job selects over all three; publish records all three, losers first, and opens one
//     PR, for the winner, whose sticky comment carries the search's table.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ActRun, ActWorld, actBinary, runAct } from '../../helpers/act.js';
import { GitHubContractServer } from '../../helpers/github-contract-server.js';
import { tempDir } from '../../helpers/paths.js';
import { STANDARD_PATCHES, TOY_CONFIG } from '../../loop/toy-repo.js';
import { GITHUB_URL, makeWorkflowRepo, OWNER_REPO, remoteFile, syncWork, type WorkflowRepo } from './repo.js';

const act = actBinary();
const TOKEN = 'ghs_actrunnertoken0000000000000002';
const RUN = 2001;
const [faster, wrong, sameSpeed] = STANDARD_PATCHES as [
  (typeof STANDARD_PATCHES)[0],
  (typeof STANDARD_PATCHES)[0],
  (typeof STANDARD_PATCHES)[0],
];
const SEARCH_CONFIG = TOY_CONFIG.replace(
  'loop:\n  iterations: 4\n',
  'loop:\n  iterations: 4\n  candidates: 3\n',
);

describe.skipIf(act.skip)(
  `hillclimb.yml with three candidates under act${act.skip ? ` (skipped: ${act.skip})` : ''}`,
  () => {
    const t = tempDir('hc-act-search-');
    let server: GitHubContractServer;
    let world: ActWorld;
    let repo: WorkflowRepo;
    let run: ActRun;

    beforeAll(async () => {
      if (!SEARCH_CONFIG.includes('candidates: 3')) throw new Error('the search config did not apply');
      server = await GitHubContractServer.start();
      const bare = join(t.dir, 'remote.git');
      world = new ActWorld({
        dir: join(t.dir, 'act'),
        remotes: { [GITHUB_URL]: bare, [`${server.url}/${OWNER_REPO}.git`]: bare },
      });
      // Candidate 1 is the iteration's patch; candidates 2 and 3 are its slot files (replay.ts).
      repo = makeWorkflowRepo(
        t.dir,
        SEARCH_CONFIG,
        [
          { ...wrong, name: '0001-wrong-math' },
          { ...sameSpeed, name: '0001.2-same-speed' },
          { ...faster, name: '0001.3-shorter-delay' },
        ],
        world.env(),
      );
      server.addRepo(OWNER_REPO, repo.bare);
      server.addToken(TOKEN, {
        login: 'github-actions[bot]',
        kind: 'installation',
        permissions: { contents: 'write', pull_requests: 'write', issues: 'write', actions: 'write' },
      });
      const inputs = { agent: 'replay', backend: 'local', iterations: '1' };
      syncWork(repo, world.env(), 'main');
      run = await runAct({
        act: act.path!,
        world,
        repo: repo.work,
        workflow: 'hillclimb.yml',
        event: 'workflow_dispatch',
        payload: { inputs, ref: 'refs/heads/main' },
        inputs,
        secrets: { GITHUB_TOKEN: TOKEN },
        apiUrl: server.url,
        runId: RUN,
      });
    }, 900_000);

    afterAll(async () => {
      await server?.close();
      if (!process.env.HILLCLIMB_KEEP_ACT) t.cleanup();
    });

    const history = () =>
      remoteFile(repo, 'hillclimb-data', 'history/toy.jsonl')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);

    it('runs propose and cpu-gate as matrices of three legs, then one measure and one publish job', () => {
      expect(run.code, run.describe()).toBe(0);
      console.log(`hillclimb.yml, a search of three (run ${RUN}):\n${run.table()}`);
      expect(run.output('setup', 'candidates', 'inputs')).toBe('3');
      expect(run.output('setup', 'slots', 'inputs')).toBe('["1","2","3"]');
      for (const job of ['setup', 'propose', 'cpu-gate', 'measure-local', 'publish'])
        expect(run.result(job), job).toBe('success');
      expect(run.result('measure-cloud')).toBe('skipped');
      // Each leg handed its own bundle on.
      for (const s of [1, 2, 3]) {
        const bundle = world.artifact(RUN, `bundle-gh${RUN}-i001-c${s}`);
        expect(bundle, `candidate ${s}'s artifact`).toBeDefined();
        // The artifact holds the bundle's folder, so that several merge into the run's folder.
        const ev = JSON.parse(readFileSync(join(bundle!, `i001-c${s}`, 'evidence.json'), 'utf8'));
        expect(ev.slot).toEqual({ index: s, of: 3 });
      }
    });

    it("every gate leg's attestation reaches the measure job under its own name", () => {
      const handed = run
        .evaluations('measure-local')
        .find((e) => e.expression === 'toJSON(needs.cpu-gate.outputs)')?.value;
      expect(handed, 'the measure job evaluated toJSON(needs.cpu-gate.outputs)').toBeDefined();
      const outputs = JSON.parse(handed!) as Record<string, string>;
      const champion = run.output('setup', 'champion', 'champion');
      for (const s of [1, 2, 3]) {
        expect(outputs[`attestation-c${s}`], `attestation-c${s}`).not.toBe('');
        expect(JSON.parse(outputs[`attestation-c${s}`]!)).toMatchObject({
          phase: 'cpu-gate',
          champion,
          verified: true,
        });
      }
      // No leg set it: act keeps it empty, GitHub leaves it out.
      expect(outputs['attestation-c4'] ?? '').toBe('');
    });

    it('selects the real gain: the wrong one fails its gate, the null one is screened out', () => {
      const searched = world.artifact(RUN, `bundle-gh${RUN}-i001-search`);
      expect(searched).toBeDefined();
      const ev = (s: number) =>
        JSON.parse(readFileSync(join(searched!, `i001-c${s}`, 'evidence.json'), 'utf8'));
      expect([1, 2, 3].map((s) => ev(s).verdict)).toEqual(['invalid', 'screened-out', 'improved']);
      expect(ev(1).stoppedAt).toBe('cpu-gate');
      expect(ev(3).search).toMatchObject({ role: 'winner', winner: 3 });
      expect(run.output('measure-local', 'winner-slot', 'profile')).toBe('3');
      // The job summary's trace tables are the winner's (trace-diff given its slot).
      expect(run.output('measure-local', 'top-change')).toMatch(/^toy_kernel -\d/);
    });

    it('publish records all three, losers first, and opens one PR for the winner with the search table', () => {
      expect(history().map((r) => [r.slot, r.verdict])).toEqual([
        [1, 'invalid'],
        [2, 'screened-out'],
        [3, 'improved'],
      ]);
      const pulls = server.pullsOf(OWNER_REPO);
      expect(pulls).toHaveLength(1);
      expect(pulls[0]).toMatchObject({ head: `hillclimb/toy/gh${RUN}/i001-c3`, base: 'main', draft: true });
      const comments = server.commentsOn(OWNER_REPO, pulls[0]!.number);
      expect(comments).toHaveLength(1);
      expect(comments[0]!.body).toContain('#### Search: 3 candidates');
      expect(run.output('publish', 'pr-number', 'report')).toBe(String(pulls[0]!.number));
      expect(world.artifact(RUN, `bundle-gh${RUN}-i001-published`)).toBeDefined();
      expect(server.violations).toEqual([]);
    });
  },
);
