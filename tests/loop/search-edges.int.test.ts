// The k-candidates search at its edges (src/loop/drivers/search.ts), each a scenario on the toy target
// found by an attacker's and a statistician's review: the table's stage of a candidate its screen ended,
// the novelty check on a change screened out on an older champion, the fallback when the winner's full
// comparison says nothing about its effect, and a resume that keeps the run's own -k.
import { appendFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listLocalPulls, showLocalPull } from '../../src/forge/local-reader.js';
import { type LoopResult, runLoop } from '../../src/loop/drivers/run.js';
import { readHistory } from '../../src/loop/state/history.js';
import { memoryLogger } from '../../src/util/log.js';
import { tempDir } from '../helpers/paths.js';
import { DOCSTRING_PATCH, gitIn, makeToyRepo, STANDARD_PATCHES, systemPython } from './toy-repo.js';

const noSleep = async () => undefined;
const [faster, , sameSpeed] = STANDARD_PATCHES as [
  (typeof STANDARD_PATCHES)[0],
  (typeof STANDARD_PATCHES)[0],
  (typeof STANDARD_PATCHES)[0],
];

function usePython(): void {
  process.env.HILLCLIMB_PYTHON = systemPython();
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

  // A candidate whose screen ended it (no-op, invalid, error) has no ev.screen and stoppedAt 'measure'
  // (the step the screen stands in for): it reached the screen, not the full comparison.
  it("the winner's search table does not say a candidate ended by its screen reached the full comparison", () => {
    const pulls = listLocalPulls(result.stateDir);
    const winnerBranch = result.iterations[0]!.candidates![0]!.evidence.candidate!.branch;
    const pull = pulls.find((p) => p.branch === winnerBranch)!;
    const comment = showLocalPull(result.stateDir, pull.number)!.comments[0]!.body;
    const row = comment.split('\n').find((l) => l.startsWith('| 3 |'))!;
    expect(row).toContain('no-op');
    expect(row).not.toContain('full comparison');
  });

  // A `screened-out` row (a short screen, never measured in full) refuses the same change only on the
  // champion it was screened on, as a fully measured `no-change` does.
  it('a change screened out on an old champion is not refused as a repeat on the new one', () => {
    const second = result.iterations[1]!.candidates![0]!.evidence;
    expect(second.base.commit).not.toBe(result.iterations[0]!.candidates![1]!.evidence.base.commit);
    expect(second.verdictReasons[0] ?? '').not.toMatch(/^novelty check/);
  });
});

describe('a winner whose full comparison says nothing about its effect', () => {
  const t = tempDir('hc-search-fallback-');
  afterAll(t.cleanup);
  const twoGains = [
    { ...faster, name: '0001-shorter-delay' }, // 2.5× faster: wins the screen
    {
      ...faster,
      name: '0001.2-a-little-shorter', // 1.4×: survives the screen too
      edit: { 'toy/kernel.py': (text: string) => text.replace('DELAY_S = 0.02', 'DELAY_S = 0.014') },
    },
  ];

  // c1's programs are changed in its bundle after the screen picked it: its full comparison ends
  // `invalid` before any look (not the programs its gate verified), so c2 is measured in full instead.
  it('measures the next survivor in full when the winner ends before its first look', async () => {
    usePython();
    const repo = join(t.dir, 'tampered');
    makeToyRepo(repo, twoGains);
    const tamper = () => {
      const runs = join(repo, '.hillclimb', 'runs');
      const programs = join(runs, readdirSync(runs)[0]!, 'i001-c1', 'programs', 'B-cpu');
      for (const f of readdirSync(programs).filter((n) => n !== 'manifest.json'))
        appendFileSync(join(programs, f), '\n');
    };
    const r = await runLoop({
      configFile: join(repo, 'hillclimb.yml'),
      overrides: { 'loop.iterations': 1, 'loop.candidates': 2 },
      logger: memoryLogger(),
      sleep: noSleep,
      progress: (l) => {
        if (l.includes('search: candidate 1 of 2 goes on to the full comparison')) tamper();
      },
    });
    const [c1, c2] = r.iterations[0]!.candidates!;
    expect(c1!.verdict).toBe('invalid');
    expect(c1!.evidence.measurement?.comparison).toBeUndefined();
    expect(c2!.verdict).toBe('improved');
    expect(r.iterations[0]!.verdict).toBe('improved');
    expect(c2!.evidence.search).toMatchObject({ role: 'winner', winner: 2, measured: [1, 2] });
    expect(c1!.evidence.search).toMatchObject({ role: 'loser', winner: 2, measured: [1, 2] });
    const rows = readHistory(r.stateDir, 'toy');
    expect(rows.map((row) => [row.slot, row.verdict])).toEqual([
      [1, 'invalid'],
      [2, 'improved'],
    ]);
    const pulls = listLocalPulls(r.stateDir);
    expect(pulls.map((p) => p.branch)).toEqual([c2!.evidence.candidate!.branch]);
    const comment = showLocalPull(r.stateDir, pulls[0]!.number)!.comments[0]!.body;
    expect(comment).toContain(
      '#### Search: 2 candidates, candidates 1 and 2 measured in full, in that order',
    );
    const row1 = comment.split('\n').find((l) => l.startsWith('| 1 |'))!;
    expect(row1).toContain('full comparison');
    expect(row1).toContain('invalid');
  }, 300_000);

  // An implausible speed-up (measure.implausible_speedup 2) is an answer: needs-human, a PR for a person
  // to look at, and no second full comparison (it would give the search a second chance at a look).
  it('ends the search at a needs-human winner, which gets its PR', async () => {
    usePython();
    const repo = join(t.dir, 'implausible');
    makeToyRepo(repo, twoGains);
    const r = await runLoop({
      configFile: join(repo, 'hillclimb.yml'),
      overrides: { 'loop.iterations': 1, 'loop.candidates': 2, 'measure.implausible_speedup': 2 },
      logger: memoryLogger(),
      sleep: noSleep,
    });
    const [c1, c2] = r.iterations[0]!.candidates!;
    expect([c1!.verdict, c2!.verdict]).toEqual(['needs-human', 'screened-out']);
    expect(c1!.evidence.search).toMatchObject({ role: 'winner', winner: 1, measured: [1] });
    expect(c2!.evidence.measurement).toBeUndefined();
    expect(listLocalPulls(r.stateDir).map((p) => p.branch)).toEqual([c1!.evidence.candidate!.branch]);
  }, 300_000);
});

describe('a search resumed without its -k', () => {
  const t = tempDir('hc-search-review-resume-');
  afterAll(t.cleanup);

  // loop.candidates names the bundles: a run started with -k 2 and resumed as k = 1 would run iteration 1
  // again as a single candidate (a second agent run, bundle i001, history row and PR for iteration 1).
  it('continues the search it started with its own -k, and refuses another -k', async () => {
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
      // Stop once the screen has begun (one session for both candidates, or the second's own).
      progress: (l) => {
        if (/^\[i001-c\d toy\] screen:/.test(l)) controller.abort();
      },
    }).catch((e: unknown) => e);
    expect((first as Error).name).toBe('Interrupted');
    // `hillclimb loop --resume -k 3`: a different search, refused before anything runs.
    await expect(
      runLoop({ configFile, resume: true, overrides: { 'loop.candidates': 3 }, logger: memoryLogger() }),
    ).rejects.toThrow(/started with loop.candidates = 2; --resume cannot change it to 3/);
    // A real run resumed as a dry run would end with its steps skipped for good.
    await expect(runLoop({ configFile, resume: true, dryRun: true, logger: memoryLogger() })).rejects.toThrow(
      /is a real run; it cannot be resumed with --dry-run/,
    );
    // `hillclimb loop --resume`, without -k: the run's own -k 2 again (and -k 2 given again is the same).
    const resumed = await runLoop({
      configFile,
      resume: true,
      overrides: { 'loop.candidates': 2 },
      logger: memoryLogger(),
      sleep: noSleep,
    });
    const rows = readHistory(resumed.stateDir, 'toy');
    expect(rows.map((r) => [r.iteration, r.slot])).toEqual([
      [1, 1],
      [1, 2],
    ]);
    expect(resumed.iterations[0]!.candidates!.map((c) => c.verdict)).toEqual(['screened-out', 'improved']);
  }, 300_000);
});

describe('a dry run of a search', () => {
  const t = tempDir('hc-search-dry-');
  afterAll(t.cleanup);

  it('screens nothing, and only the stand-in winner would open a PR', async () => {
    usePython();
    const repo = join(t.dir, 'repo');
    makeToyRepo(repo, [
      { ...faster, name: '0001-shorter-delay' },
      { ...sameSpeed, name: '0001.2-same-speed' },
    ]);
    const progress: string[] = [];
    const r = await runLoop({
      configFile: join(repo, 'hillclimb.yml'),
      overrides: { 'loop.candidates': 2 },
      dryRun: true,
      logger: memoryLogger(),
      progress: (l) => progress.push(l),
      sleep: noSleep,
    });
    const [c1, c2] = r.iterations[0]!.candidates!;
    expect(progress.join('\n')).toContain('dry run: the screen would time each candidate');
    expect(c1!.evidence.screen).toBeUndefined();
    expect(c1!.evidence.steps.publish?.note).toContain('PR "[dry run] toy: ');
    expect(c2!.evidence.steps.publish?.note).toBe(
      'dry run: candidate 2 of 2 lost the search: no PR would be opened (search.publish_losers is off)',
    );
    // The journal says which candidate each step belongs to.
    const journal = readFileSync(join(r.runDir, 'journal.jsonl'), 'utf8').trim().split('\n');
    const publishes = journal.map((l) => JSON.parse(l)).filter((e) => e.t === 'step' && e.step === 'publish');
    expect(publishes.map((e) => e.slot).sort()).toEqual([1, 2]);
  }, 120_000);
});
