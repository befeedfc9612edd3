// baseline.yml, run by nektos/act (jobs on the host) on pushes to main of the toy target (local compute
// backend): plan → measure-local → record, measure-cloud skipped. The pushes change only what the loop
// protects — the harness, then the config — and each still gets its row in the baseline series: main is
// reviewed code, so baseline.yml measures it unguarded (`guard: false`), and an unguarded change is not
// `invalid` (issue 11: such a push used to end with verdict=invalid and no row).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ActRun, ActWorld, actBinary, handOvers, runAct } from '../../helpers/act.js';
import { tempDir } from '../../helpers/paths.js';
import { STANDARD_PATCHES, TOY_CONFIG } from '../../loop/toy-repo.js';
import {
  GITHUB_URL,
  git,
  makeWorkflowRepo,
  OWNER_REPO,
  remoteFile,
  remoteFiles,
  remoteRef,
  syncWork,
  type WorkflowRepo,
} from './repo.js';

const act = actBinary();
const TOKEN = 'ghs_actrunnertoken0000000000000003';
const RUN = { harness: 3001, config: 3002 };

describe.skipIf(act.skip)(`baseline.yml under act${act.skip ? ` (skipped: ${act.skip})` : ''}`, () => {
  const t = tempDir('hc-act-baseline-');
  let world: ActWorld;
  let repo: WorkflowRepo;
  const runs: Record<string, ActRun> = {};
  const pushed: Record<string, { before: string; after: string }> = {};

  /** A maintainer's commit on main that edits one file, pushed; then the push event in act. */
  async function push(name: keyof typeof RUN, file: string, edit: (s: string) => string) {
    const before = remoteRef(repo, 'main');
    writeFileSync(join(repo.seed, file), edit(readFileSync(join(repo.seed, file), 'utf8')));
    git(repo.seed, {}, 'commit', '-q', '-am', `${name}: edit ${file}`);
    git(repo.seed, {}, 'push', '-q', repo.bare, 'main:refs/heads/main');
    const after = syncWork(repo, world.env(), 'main');
    pushed[name] = { before, after };
    runs[name] = await runAct({
      act: act.path!,
      world,
      repo: repo.work,
      workflow: 'baseline.yml',
      event: 'push',
      payload: {
        ref: 'refs/heads/main',
        before,
        after,
        repository: { full_name: OWNER_REPO, default_branch: 'main' },
      },
      secrets: { GITHUB_TOKEN: TOKEN },
      apiUrl: 'http://127.0.0.1:9',
      runId: RUN[name],
    });
  }

  const series = () =>
    remoteFile(repo, 'hillclimb-data', 'baselines/toy.jsonl')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);

  beforeAll(async () => {
    const bare = join(t.dir, 'remote.git');
    world = new ActWorld({ dir: join(t.dir, 'act'), remotes: { [GITHUB_URL]: bare } });
    repo = makeWorkflowRepo(t.dir, TOY_CONFIG, STANDARD_PATCHES.slice(0, 1), world.env());
    // The harness gets a clearer docstring; then the config a longer description.
    await push('harness', 'harness/check.py', (s) =>
      s.replace('"""Toy correctness gate:', '"""The toy correctness gate:'),
    );
    await push('config', 'hillclimb.yml', (s) =>
      s.replace('description: toy kernel for the loop tests', 'description: the toy kernel'),
    );
  }, 600_000);

  afterAll(() => {
    // HILLCLIMB_KEEP_ACT=1 keeps the act logs and the repositories for a look after a failure.
    if (!process.env.HILLCLIMB_KEEP_ACT) t.cleanup();
  });

  it.each(['harness', 'config'] as const)(
    'a push that changes only the %s runs plan → measure-local → record',
    (name) => {
      const r = runs[name]!;
      expect(r.code, r.describe()).toBe(0);
      if (name === 'harness') console.log(`baseline.yml, a push to main (run ${RUN[name]}):\n${r.table()}`);
      expect(Object.fromEntries([...r.jobs.values()].map((j) => [j.id, j.result]))).toEqual({
        plan: 'success',
        'measure-local': 'success',
        'measure-cloud': 'skipped',
        record: 'success',
      });
      // Unguarded (main is reviewed), not invalid; the push changed neither the kernel nor anything
      // its programs are built from, so both arms' programs are the same bytes: nothing to measure.
      expect(r.output('measure-local', 'pending', 'gate')).toBe('true');
      expect(r.output('measure-local', 'verdict', 'profile')).toBe('no-op');
      // measure-local's `measured` output (the profile step's outcome) is what lets record run.
      expect(r.outcome('measure-local', 'profile')).toBe('success');
    },
  );

  it.each(['harness', 'config'] as const)(
    'the %s push: the pinned commits and the attestation reach measure and record',
    (name) => {
      const r = runs[name]!;
      const checked = handOvers(r, join(repo.work, '.github', 'workflows', 'baseline.yml'));
      for (const h of checked) expect(h.seen, `${h.to}: ${h.expression}`).toBe(h.sent);
      const seen = (to: string, expression: string) =>
        checked.find((h) => h.to === to && h.expression === expression)?.seen;
      expect(seen('measure-local', 'needs.plan.outputs.head')).toBe(pushed[name]!.after);
      expect(seen('measure-local', 'needs.plan.outputs.base')).toBe(pushed[name]!.before);
      expect(seen('record', 'needs.plan.outputs.head')).toBe(pushed[name]!.after);
      expect(
        JSON.parse(
          seen(
            'record',
            'needs.measure-local.outputs.attestation || needs.measure-cloud.outputs.attestation',
          )!,
        ),
      ).toMatchObject({ phase: 'measure', champion: pushed[name]!.before, verified: true });
    },
  );

  it('each push has its row in the baseline series, and the loop history is untouched', () => {
    const rows = series();
    expect(rows.map((row) => [row.runId, row.baseCommit, row.candidateCommit])).toEqual([
      [
        `baseline-${pushed.harness!.after.slice(0, 12)}-${RUN.harness}`,
        pushed.harness!.before,
        expect.any(String),
      ],
      [
        `baseline-${pushed.config!.after.slice(0, 12)}-${RUN.config}`,
        pushed.config!.before,
        expect.any(String),
      ],
    ]);
    for (const row of rows) expect(row.target).toBe('toy');
    const files = remoteFiles(repo, 'hillclimb-data');
    expect(files.some((f) => f.startsWith('history/'))).toBe(false);
    for (const name of ['harness', 'config'] as const) {
      const ev = JSON.parse(
        remoteFile(
          repo,
          'hillclimb-data',
          `baselines/toy/baseline-${pushed[name]!.after.slice(0, 12)}-${RUN[name]}/evidence.json`,
        ),
      );
      expect(ev.steps.guard).toMatchObject({ status: 'skipped', note: 'main: not guarded (tests only)' });
      expect(ev.candidate.changedPaths).toEqual([name === 'harness' ? 'harness/check.py' : 'hillclimb.yml']);
    }
  });
});
