// Review of the k-candidates search (7e511b6, 5f46031): failures found by reading it, each a scenario
// on the toy target. These tests fail until the search is fixed.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listLocalPulls, showLocalPull } from '../../src/forge/local-reader.js';
import { type LoopResult, runLoop } from '../../src/loop/drivers/run.js';
import { readHistory } from '../../src/loop/state/history.js';
import { memoryLogger } from '../../src/util/log.js';
import { tempDir } from '../helpers/paths.js';
import { DOCSTRING_PATCH, gitIn, makeToyRepo, STANDARD_PATCHES } from './toy-repo.js';

const noSleep = async () => undefined;
const [faster, , sameSpeed] = STANDARD_PATCHES as [
  (typeof STANDARD_PATCHES)[0],
  (typeof STANDARD_PATCHES)[0],
  (typeof STANDARD_PATCHES)[0],
];

function usePython(): void {
  process.env.HILLCLIMB_PYTHON = execFileSync('sh', ['-c', 'command -v python3'], {
    encoding: 'utf8',
  }).trim();
}

describe('a search over two iterations (k = 3)', () => {
  const t = tempDir('hc-search-review-');
  const repo = join(t.dir, 'repo');
  let result: LoopResult;

  beforeAll(async () => {
    usePython();
    // Iteration 1: c1 the real gain (winner), c2 a null (screened out), c3 a docstring (no-op at the screen).
    makeToyRepo(repo, [
      { ...faster, name: '0001-shorter-delay' },
      { ...sameSpeed, name: '0001.2-same-speed' },
      { ...DOCSTRING_PATCH, name: '0001.3-docstring' },
    ]);
    // Iteration 2: c2's change again, as a patch on the new champion (c1's kernel).
    const kernel = join(repo, 'toy', 'kernel.py');
    const base = readFileSync(kernel, 'utf8');
    const champion = faster.edit['toy/kernel.py']!(base);
    writeFileSync(kernel, champion);
    gitIn(repo, 'add', 'toy/kernel.py');
    writeFileSync(kernel, sameSpeed.edit['toy/kernel.py']!(champion));
    const patch = gitIn(repo, 'diff', '--', 'toy/kernel.py');
    gitIn(repo, 'reset', '-q', '--', 'toy/kernel.py');
    gitIn(repo, 'checkout', '-q', '--', 'toy/kernel.py');
    writeFileSync(join(repo, 'replay', '0002-same-speed-again.patch'), patch);
    writeFileSync(join(repo, 'replay', '0002-same-speed-again.json'), JSON.stringify(sameSpeed.json));
    gitIn(repo, 'add', 'replay');
    gitIn(repo, 'commit', '-q', '-m', 'iteration 2 patch');
    result = await runLoop({
      configFile: join(repo, 'hillclimb.yml'),
      overrides: { 'loop.iterations': 2, 'loop.candidates': 3 },
      logger: memoryLogger(),
      sleep: noSleep,
    });
  }, 300_000);
  afterAll(t.cleanup);

  it('sets the scene: c1 wins iteration 1, c2 is screened out, c3 is a no-op at its screen', () => {
    const [first] = result.iterations;
    expect(first!.candidates!.map((c) => c.verdict)).toEqual(['improved', 'screened-out', 'no-op']);
    expect(first!.candidates![2]!.evidence.screen).toBeUndefined();
  });

  // src/loop/drivers/search.ts searchRow: a candidate whose screen ended it (no-op, invalid, error) has
  // no ev.screen and stoppedAt 'measure', so its stage is 'measure', shown as "full comparison".
  it("the winner's search table does not say a candidate ended by its screen reached the full comparison", () => {
    const pulls = listLocalPulls(result.stateDir);
    const winnerBranch = result.iterations[0]!.candidates![0]!.evidence.candidate!.branch;
    const pull = pulls.find((p) => p.branch === winnerBranch)!;
    const comment = showLocalPull(result.stateDir, pull.number)!.comments[0]!.body;
    const row = comment.split('\n').find((l) => l.startsWith('| 3 |'))!;
    expect(row).toContain('no-op');
    expect(row).not.toContain('full comparison');
  });

  // src/loop/steps/guard.ts sameChangeEarlier: a `screened-out` row (two screening rounds, never
  // measured in full) blocks the same change forever, even on a new champion, where a fully measured
  // `no-change` would be measured again.
  it('a change screened out on an old champion is not refused as a repeat on the new one', () => {
    const second = result.iterations[1]!.candidates![0]!.evidence;
    expect(second.base.commit).not.toBe(result.iterations[0]!.candidates![1]!.evidence.base.commit);
    expect(second.verdictReasons[0] ?? '').not.toMatch(/^novelty check/);
  });
});

describe('a search resumed without its -k', () => {
  const t = tempDir('hc-search-review-resume-');
  afterAll(t.cleanup);

  // src/loop/drivers/run.ts resumeRun: the journal's config hash covers the file, not the overrides, and
  // loop.candidates names the bundles; a run started with -k 2 and resumed without it runs iteration 1
  // again as a single candidate (a second agent run, bundle i001, history row and PR for iteration 1).
  it('continues the search it started (or refuses), never redoing the iteration as k = 1', async () => {
    usePython();
    const repo = join(t.dir, 'repo');
    makeToyRepo(repo, [
      { ...sameSpeed, name: '0001-same-speed' },
      { ...faster, name: '0001.2-shorter-delay' },
    ]);
    const configFile = join(repo, 'hillclimb.yml');
    const controller = new AbortController();
    const first = await runLoop({
      configFile,
      overrides: { 'loop.iterations': 1, 'loop.candidates': 2 },
      logger: memoryLogger(),
      sleep: noSleep,
      signal: controller.signal,
      progress: (l) => {
        if (l.startsWith('[i001-c2 toy] screen:')) controller.abort();
      },
    }).catch((e: unknown) => e);
    expect((first as Error).name).toBe('Interrupted');
    // `hillclimb loop --resume`, without -k.
    const resumed = await runLoop({
      configFile,
      resume: true,
      logger: memoryLogger(),
      sleep: noSleep,
    }).catch((e: unknown) => e);
    if (resumed instanceof Error) return; // a refusal is fine
    const rows = readHistory((resumed as LoopResult).stateDir, 'toy');
    expect(rows.filter((r) => r.iteration === 1 && r.slot === undefined)).toEqual([]);
    expect((resumed as LoopResult).iterations[0]!.candidates).toBeDefined();
  }, 300_000);
});
