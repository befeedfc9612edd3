// baseline.yml through the actions: main's newest commit measured against its parent (kernel-test with
// head, then profile) and recorded once in the target's baseline series on the data branch, apart from
// the loop's history. A re-run of the record job adds no second row.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/paths.js';
import { gitIn, makeToyRepo, STANDARD_PATCHES, systemPython, TOY_CONFIG } from '../loop/toy-repo.js';
import { type ActionName, type ActionRun, runActionBundle } from './harness.js';

const RUN_ID = 'baseline-main-1';

describe('baseline through the actions', () => {
  const t = tempDir('hc-actions-baseline-');
  const bare = join(t.dir, 'remote.git');
  let python: string;
  const runs: Record<string, ActionRun> = {};
  let dataBranchAfterDryRun = 'not read';
  let jobs = 0;
  const clone = (): string => {
    const dir = join(t.dir, `job${++jobs}`);
    execFileSync('git', ['clone', '-q', bare, dir]);
    return dir;
  };
  const step = (action: ActionName, cwd: string, inputs: Record<string, string>) =>
    runActionBundle(action, {
      cwd,
      inputs: { 'run-id': RUN_ID, iteration: '1', ...inputs },
      env: { HILLCLIMB_PYTHON: python },
    });
  const series = () =>
    execFileSync('git', ['--git-dir', bare, 'show', 'hillclimb-data:baselines/toy.jsonl'], {
      encoding: 'utf8',
    })
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);

  beforeAll(async () => {
    python = systemPython();
    const seed = join(t.dir, 'seed');
    makeToyRepo(seed, STANDARD_PATCHES.slice(0, 1), TOY_CONFIG);
    // main's newest commit: a faster kernel, merged by a person.
    const kernel = join(seed, 'toy', 'kernel.py');
    execFileSync('sed', ['-i', 's/DELAY_S = 0.02/DELAY_S = 0.008/', kernel]);
    gitIn(seed, 'commit', '-q', '-am', 'toy: shorter delay');
    mkdirSync(bare);
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
    gitIn(seed, 'push', '-q', bare, 'main:refs/heads/main');

    const measure = clone();
    runs.gate = await step('kernel-test', measure, {
      gate: 'accelerator',
      head: 'HEAD',
      base: 'HEAD^1',
      source: 'main',
      guard: 'false',
      store: 'local',
      forge: 'local',
    });
    runs.profile = await step('profile', measure, { store: 'local', forge: 'local' });
    // The record job checks the measure job's bundle against the pinned commits and its attestation.
    const pinned = {
      base: gitIn(seed, 'rev-parse', 'HEAD^1').trim(),
      'pinned-source': gitIn(seed, 'rev-parse', 'HEAD').trim(),
      attestation: runs.profile.outputs.attestation!,
    };
    // A dry run first: it must store nothing, so the data branch does not exist until the real one.
    for (const name of ['dry', 'record', 'again']) {
      const record = clone();
      cpSync(join(measure, '.hillclimb', 'runs', RUN_ID), join(record, '.hillclimb', 'runs', RUN_ID), {
        recursive: true,
      });
      runs[name] = await step('report', record, {
        baseline: 'true',
        store: 'branch',
        ...pinned,
        ...(name === 'dry' ? { 'dry-run': 'true' } : {}),
      });
      if (name === 'dry') {
        dataBranchAfterDryRun = execFileSync('git', ['ls-remote', bare, 'refs/heads/hillclimb-data'], {
          encoding: 'utf8',
        });
      }
    }
  }, 300_000);
  afterAll(t.cleanup);

  it('measures main against its parent', () => {
    expect(runs.gate!.outputs).toMatchObject({ status: 'skipped', pending: 'true' });
    expect(runs.profile!.outputs.verdict).toBe('improved');
  });

  it('a dry run stores nothing', () => {
    expect(runs.dry!.code, runs.dry!.stdout).toBe(0);
    expect(runs.dry!.stdout).toContain(
      'dry run: the baseline of toy is neither stored nor added to its series',
    );
    expect(dataBranchAfterDryRun).toBe('');
  });

  it('records one row in the baseline series, and the bundle beside it; a re-run adds nothing', () => {
    expect(runs.record!.code, runs.record!.stdout).toBe(0);
    expect(runs.again!.code, runs.again!.stdout).toBe(0);
    const rows = series();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ runId: RUN_ID, target: 'toy', verdict: 'improved' });
    const files = execFileSync('git', ['--git-dir', bare, 'ls-tree', '-r', '--name-only', 'hillclimb-data'], {
      encoding: 'utf8',
    });
    expect(files).toContain(`baselines/toy/${RUN_ID}/evidence.json`);
    // The loop's history is untouched: no champion moved.
    expect(files).not.toContain('history/');
    expect(runs.record!.outputs['bundle-url']).toContain(`baselines/toy/${RUN_ID}/evidence.json`);
  });
});
