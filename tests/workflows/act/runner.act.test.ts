// The runner itself, on a three-job workflow: what the workflow tests rely on act doing as GitHub does.
// - A skipped job's outputs are empty strings, so `needs.<skipped>.outputs.x || needs.<ran>.outputs.y`
//   falls through to the job that ran. act 0.2.89 as released leaves them as the uninterpolated
//   `${{ … }}` text (nektos/act#2467); scripts/build-act.mjs builds it with that fixed, and this test
//   fails on a build without the fix.
// - A failed step's last lines reach the log: act 0.2.89 as released drops what it had not copied from
//   the step's terminal yet when the step fails (on a busy machine, the `::error::` line printed just
//   before `exit 1`); scripts/build-act.mjs builds it with that fixed. A step with a long output makes
//   the loss likely even on an idle machine: this test failed on every try with the unfixed build.
// - Job outputs reach the jobs that need them, and the helper reads them from act's log (step outputs,
//   evaluated expressions, job results).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ACTION_FIXTURES,
  type ActRun,
  ActWorld,
  actBinary,
  handOvers,
  runAct,
  usesRealArtifactActions,
} from '../../helpers/act.js';
import { tempDir } from '../../helpers/paths.js';
import { git } from './repo.js';

const act = actBinary();

const WORKFLOW = `name: runner check
on: workflow_dispatch
jobs:
  ran:
    runs-on: ubuntu-24.04
    outputs:
      x: \${{ steps.s.outputs.x }}
    steps:
      - id: s
        run: echo "x=from-ran" >> "$GITHUB_OUTPUT"
  skipped:
    if: \${{ false }}
    runs-on: ubuntu-24.04
    outputs:
      y: \${{ steps.s.outputs.y }}
    steps:
      - id: s
        run: echo "y=never" >> "$GITHUB_OUTPUT"
  reader:
    needs: [ran, skipped]
    if: \${{ !cancelled() }}
    runs-on: ubuntu-24.04
    steps:
      - env:
          SKIPPED: \${{ needs.skipped.outputs.y }}
          CHAIN: \${{ needs.skipped.outputs.y || needs.ran.outputs.x }}
        run: echo "skipped=[$SKIPPED] chain=[$CHAIN]"
  last-words:
    runs-on: ubuntu-24.04
    steps:
      - run: |
          seq -f 'line %g of a long step' 1 20000
          echo "::error::the last words of a failing step"
          exit 1
`;

const ARTIFACTS = `name: artifacts check
on: workflow_dispatch
jobs:
  up:
    runs-on: ubuntu-24.04
    steps:
      - run: mkdir -p out/sub && echo a > out/a.txt && echo b > out/sub/b.txt && echo h > out/.hidden
      - uses: actions/upload-artifact@330a01c490aca151604b8cf639adc76d48f6c5d4
        with: { name: bundle, path: out }
      # include-hidden-files, and replacing the artifact of that name

      - uses: actions/upload-artifact@330a01c490aca151604b8cf639adc76d48f6c5d4
        with: { name: bundle, path: out, include-hidden-files: true, overwrite: true }
      - uses: actions/upload-artifact@330a01c490aca151604b8cf639adc76d48f6c5d4
        with: { name: twice, path: out }
      - id: again
        continue-on-error: true
        uses: actions/upload-artifact@330a01c490aca151604b8cf639adc76d48f6c5d4
        with: { name: twice, path: out }
      - run: echo "again=\${{ steps.again.outcome }}"
  down:
    needs: up
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/download-artifact@634f93cb2916e3fdff6788551b99b062d0335ce0
        with: { name: bundle, path: got }
      - run: cd got && find . -type f | sort | tr '\\n' ' '
      - id: missing
        continue-on-error: true
        uses: actions/download-artifact@634f93cb2916e3fdff6788551b99b062d0335ce0
        with: { name: no-such-artifact, path: none }
      - run: echo "missing=\${{ steps.missing.outcome }}"
`;

describe.skipIf(act.skip)(`the act runner${act.skip ? ` (skipped: ${act.skip})` : ''}`, () => {
  const t = tempDir('hc-act-runner-');
  let run: ActRun;
  const repo = join(t.dir, 'repo');

  beforeAll(async () => {
    mkdirSync(join(repo, '.github', 'workflows'), { recursive: true });
    writeFileSync(join(repo, '.github', 'workflows', 'check.yml'), WORKFLOW);
    git(t.dir, {}, 'init', '-q', '-b', 'main', repo);
    git(repo, {}, 'add', '-A');
    git(repo, {}, 'commit', '-q', '-m', 'workflow');
    git(repo, {}, 'remote', 'add', 'origin', 'https://github.com/octo/runner.git');
    const world = new ActWorld({ dir: join(t.dir, 'act'), remotes: {} });
    run = await runAct({
      act: act.path!,
      world,
      repo,
      workflow: 'check.yml',
      event: 'workflow_dispatch',
      payload: {},
      apiUrl: 'http://127.0.0.1:9',
      runId: 1,
    });
  }, 300_000);
  afterAll(() => {
    if (!process.env.HILLCLIMB_KEEP_ACT) t.cleanup();
  });

  it('reports each job: ran, skipped by its condition, the one that needs both, and a failure', () => {
    expect(run.code, run.describe()).toBe(1);
    expect(Object.fromEntries([...run.jobs.values()].map((j) => [j.id, j.result]))).toEqual({
      ran: 'success',
      skipped: 'skipped',
      reader: 'success',
      'last-words': 'failure',
    });
    expect(run.output('ran', 'x', 's')).toBe('from-ran');
  });

  it("gives a skipped job's outputs as empty strings, as GitHub does", () => {
    expect(run.text('reader')).toContain('skipped=[] chain=[from-ran]');
  });

  it("keeps a failed step's last lines: its whole output and the ::error:: it printed before exit 1", () => {
    expect(run.text('last-words')).toContain('line 20000 of a long step');
    expect(run.errors('last-words')).toEqual(['the last words of a failing step']);
  });

  it('sees each job output where a later job reads it', () => {
    const file = join(repo, '.github', 'workflows', 'check.yml');
    // act evaluates a step's env in map order: sort to compare.
    const seen = handOvers(run, file).sort((a, b) => a.expression.localeCompare(b.expression));
    expect(seen).toEqual([
      { to: 'reader', expression: 'needs.skipped.outputs.y', seen: '', sent: '' },
      {
        to: 'reader',
        expression: 'needs.skipped.outputs.y || needs.ran.outputs.x',
        seen: 'from-ran',
        sent: 'from-ran',
      },
    ]);
  });
});

const realArtifacts = usesRealArtifactActions();

describe.skipIf(act.skip)(
  'the artifact actions, as the workflows use them: the stand-ins do what the real ones do',
  () => {
    const t = tempDir('hc-act-artifacts-');
    const runs: { real?: ActRun; standIn?: ActRun } = {};

    beforeAll(async () => {
      const repo = join(t.dir, 'repo');
      mkdirSync(join(repo, '.github', 'workflows'), { recursive: true });
      writeFileSync(join(repo, '.github', 'workflows', 'artifacts.yml'), ARTIFACTS);
      git(t.dir, {}, 'init', '-q', '-b', 'main', repo);
      git(repo, {}, 'add', '-A');
      git(repo, {}, 'commit', '-q', '-m', 'workflow');
      git(repo, {}, 'remote', 'add', 'origin', 'https://github.com/octo/artifacts.git');
      const world = new ActWorld({ dir: join(t.dir, 'act'), remotes: {} });
      const run = (runId: number, standIns: boolean) =>
        runAct({
          act: act.path!,
          world,
          repo,
          workflow: 'artifacts.yml',
          event: 'workflow_dispatch',
          payload: {},
          apiUrl: 'http://127.0.0.1:9',
          runId,
          standIns,
        });
      runs.standIn = await run(1, true);
      if (realArtifacts) runs.real = await run(2, false);
    }, 300_000);
    afterAll(() => {
      if (!process.env.HILLCLIMB_KEEP_ACT) t.cleanup();
    });

    const check = (r: ActRun) => {
      expect(r.code, r.describe()).toBe(0);
      // A folder's files become the artifact's root; dot-files only when asked for (the second upload,
      // which replaced the first because overwrite was set).
      expect(r.text('down')).toContain('./.hidden ./a.txt ./sub/b.txt');
      // A download of a name that does not exist fails.
      expect(r.text('down')).toContain('missing=failure');
    };

    it('stand-ins: upload (root, dot-files, overwrite) and download (a missing name fails)', () => {
      check(runs.standIn!);
      // The same name again without overwrite fails, as GitHub's artifact service answers 409 Conflict.
      expect(runs.standIn!.text('up')).toContain('again=failure');
    });

    it.skipIf(!realArtifacts)(
      `the real actions at their pinned commits, with act's artifact server${realArtifacts ? '' : ` (skipped: no ${ACTION_FIXTURES})`}`,
      () => {
        check(runs.real!);
        // act's artifact server takes the same name again without overwrite, where GitHub's answers 409:
        // only the stand-ins catch an upload that forgets `overwrite: true`.
        expect(runs.real!.text('up')).toContain('again=success');
      },
    );
  },
);
