// Issue 25: an iteration with k = 3 candidates on the toy target — one wrong (invalid at the CPU gate),
// one null (screened out), one real gain (the winner, measured in full on fresh rounds). One PR, for the
// winner, whose comment lists all three; every candidate has its history row and log entry.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listLocalPulls, showLocalPull } from '../../src/forge/local-reader.js';
import { type LoopResult, runLoop } from '../../src/loop/drivers/run.js';
import { readHistory } from '../../src/loop/state/history.js';
import { evidenceLoader } from '../../src/report/log-evidence.js';
import { lintLog } from '../../src/report/log-lint.js';
import { memoryLogger } from '../../src/util/log.js';
import { tempDir } from '../helpers/paths.js';
import { gitIn, makeToyRepo, STANDARD_PATCHES, systemPython } from './toy-repo.js';

const noSleep = async () => undefined;
const [faster, wrong, sameSpeed] = STANDARD_PATCHES as [
  (typeof STANDARD_PATCHES)[0],
  (typeof STANDARD_PATCHES)[0],
  (typeof STANDARD_PATCHES)[0],
];

describe('an iteration with three candidates (loop.candidates: 3)', () => {
  const t = tempDir('hc-search-');
  const repo = join(t.dir, 'repo');
  let result: LoopResult;
  const lines: string[] = [];

  beforeAll(async () => {
    process.env.HILLCLIMB_PYTHON = systemPython();
    // Candidate 1 is the iteration's patch; candidates 2 and 3 are its slot files (replay.ts).
    makeToyRepo(repo, [
      { ...wrong, name: '0001-wrong-math' },
      { ...sameSpeed, name: '0001.2-same-speed' },
      { ...faster, name: '0001.3-shorter-delay' },
    ]);
    result = await runLoop({
      configFile: join(repo, 'hillclimb.yml'),
      overrides: { 'loop.iterations': 1, 'loop.candidates': 3 },
      logger: memoryLogger(),
      progress: (l) => lines.push(l),
      sleep: noSleep,
    });
  }, 300_000);
  afterAll(t.cleanup);

  it('gives each candidate the verdict it deserves, and the iteration the winner’s', () => {
    expect(result.endReason).toBe('completed');
    const [iteration] = result.iterations;
    expect(iteration!.verdict).toBe('improved');
    expect(iteration!.candidates!.map((c) => c.verdict)).toEqual(['invalid', 'screened-out', 'improved']);
    const [first, second, third] = iteration!.candidates!.map((c) => c.evidence);
    expect(first!.stoppedAt).toBe('cpu-gate');
    expect(first!.screen).toBeUndefined();
    expect(second!.screen!.survived).toBe(false);
    // Three rounds resolve a null change against a 2.5× one at the first look: the race ends there.
    expect(second!.verdictReasons[0]).toMatch(
      /^screen \d\.\d{4} \[\d\.\d{4}, \d\.\d{4}\] over 3 rounds: (interval wholly below 1\.2000|candidate 3 ahead by \d\.\d{4} .*) at look 1: dropped/,
    );
    expect(second!.screen!.droppedBy).toBeDefined();
    expect(third!.search!.race).toMatchObject({ ending: 'separated', maxRounds: 3 });
    expect(second!.screen!.sessions).toHaveLength(1);
    expect(second!.measurement).toBeUndefined();
    // One machine: the two candidates that passed their gates were screened in one session with the
    // champion, each against the champion's values of the same rounds, and the session is in both records.
    expect(second!.screen!.sharedWith).toEqual([2, 3]);
    expect(third!.screen!.sharedWith).toEqual([2, 3]);
    expect(second!.screen!.a).toEqual(third!.screen!.a);
    expect(second!.screen!.sessionFile).toBe(third!.screen!.sessionFile);
    for (const c of iteration!.candidates!.slice(1)) {
      expect(existsSync(join(c.bundleDir, c.evidence!.screen!.sessionFile))).toBe(true);
    }
    expect(
      lines.some((l) => /screen: 3 rounds of the champion and 2 candidates in one verifier session$/.test(l)),
    ).toBe(true);
    expect(third!.search!.role).toBe('winner');
    expect(result.champion.iteration).toBe(1);
    expect(result.champion.commit).toBe(third!.candidate!.logCommit);
    // Each candidate worked in a repository of its own and got a prompt that says it is one of three.
    const prompt = readFileSync(join(iteration!.candidates![1]!.bundleDir, 'agent', 'prompt.md'), 'utf8');
    expect(prompt).toContain('## Candidate 2 of 3');
    expect(lines.some((l) => l.startsWith('[i001 toy] search: candidate 3 of 3 goes on'))).toBe(true);
  });

  it('judges the winner on fresh rounds only: none of its screening rounds is in the comparison', () => {
    const winner = result.iterations[0]!.evidence;
    const screen = winner.screen!;
    expect(screen.rounds).toBe(3);
    // Its own interval against the champion is three rounds wide (on a busy machine it can reach
    // below 1): what chose it is the ranking above, not this interval.
    expect(screen.interval!.lo).toBeLessThanOrEqual(screen.estimate!);
    expect(screen.estimate!).toBeGreaterThanOrEqual(1.2);
    const m = winner.measurement!;
    expect(m.sessions!.map((s) => s.file)).not.toContain(screen.sessionFile);
    const used = new Set(m.runs.map((r) => r.value));
    for (const v of [...screen.a, ...screen.b]) expect(used.has(v)).toBe(false);
    expect(m.runs.filter((r) => r.arm === 'B').length).toBeGreaterThanOrEqual(5);
    expect(m.comparison!.verdict).toBe('improved');
  });

  it('opens one PR, for the winner, whose comment lists every candidate', () => {
    const pulls = listLocalPulls(result.stateDir);
    expect(pulls).toHaveLength(1);
    const winner = result.iterations[0]!.evidence;
    expect(pulls[0]!.branch).toBe(winner.candidate!.branch);
    expect(pulls[0]!.branch).toMatch(/\/i001-c3$/);
    const comment = showLocalPull(result.stateDir, pulls[0]!.number)!.comments[0]!.body;
    expect(comment).toContain('#### Search: 3 candidates, candidate 3 measured in full');
    expect(comment).toMatch(/runs\/[^/]+\/i001-c3\/evidence\.json/);
    expect(comment).toMatch(/\| 1 \| [^|]+ \| CPU gate \| — \| — \| invalid \|/);
    expect(comment).toMatch(
      /\| 2 \| [^|]+ \| screen \| \d\.\d{3}× \[\d\.\d{3}×, \d\.\d{3}×\] \| 3 \| screened-out \|/,
    );
    expect(comment).toMatch(
      /\| \*\*3\*\* \(this\) \| [^|]+ \| full comparison \| \d\.\d{3}× \[\d\.\d{3}×, \d\.\d{3}×\] \| 3 \| improved \|/,
    );
    expect(comment).toContain('The screen separated candidate 3 from every other candidate');
    expect(comment).toContain('in one session of 3 paired rounds: after it a candidate was dropped');
    expect(comment).not.toContain('raced up to');
    // Losers are never pushed.
    const branches = gitIn(repo, 'branch', '--list', '--format=%(refname:short)');
    for (const loser of result.iterations[0]!.candidates!.slice(0, 2)) {
      expect(loser.evidence.publish?.prNumber).toBeUndefined();
      if (loser.evidence.candidate) expect(branches).not.toContain(loser.evidence.candidate.branch);
    }
  });

  it('records every candidate: a history row each (the winner last) and log entries that pass the lint', () => {
    const rows = readHistory(result.stateDir, 'toy');
    expect(rows.map((r) => [r.iteration, r.slot, r.verdict])).toEqual([
      [1, 1, 'invalid'],
      [1, 2, 'screened-out'],
      [1, 3, 'improved'],
    ]);
    const runLog = readFileSync(join(result.runDir, 'hillclimb-log.md'), 'utf8');
    expect(runLog).toMatch(/- Run: `[^`]+`, iteration 1 of 1 \(candidate 2 of 3\)/);
    // The three entries of iteration 1 keep its number, lettered in the order they were recorded.
    expect(runLog.match(/^### Iteration \w+/gm)).toEqual([
      '### Iteration 1a',
      '### Iteration 1b',
      '### Iteration 1c',
    ]);
    expect(runLog).toMatch(
      /- Screen: 3 paired rounds against the champion: \d\.\d{3}× \[\d\.\d{3}×, \d\.\d{3}×\] \(bar 1\.200×\); (interval wholly below the bar|separated behind candidate 3): dropped/,
    );
    const lint = lintLog(runLog, {
      scope: 'all',
      loadEvidence: evidenceLoader([result.stateDir]),
      requireEvidence: true,
    });
    expect(lint).toEqual([]);
  });
});

describe('a search interrupted during its screens', () => {
  const t = tempDir('hc-search-resume-');
  afterAll(t.cleanup);

  it('resumes with the screens already measured and reaches the same outcome, recorded once', async () => {
    process.env.HILLCLIMB_PYTHON = systemPython();
    const repo = join(t.dir, 'repo');
    makeToyRepo(repo, [
      { ...sameSpeed, name: '0001-same-speed' },
      { ...faster, name: '0001.2-shorter-delay' },
    ]);
    const configFile = join(repo, 'hillclimb.yml');
    // A session per candidate, so that one candidate is screened and the other not when it stops.
    const overrides = { 'loop.iterations': 1, 'loop.candidates': 2, 'search.shared_screen': false };
    const controller = new AbortController();
    const first = await runLoop({
      configFile,
      overrides,
      logger: memoryLogger(),
      sleep: noSleep,
      signal: controller.signal,
      // Stop once candidate 1 is screened and candidate 2's screen has begun.
      progress: (l) => {
        if (l.startsWith('[i001-c2 toy] screen:')) controller.abort();
      },
    }).catch((e: unknown) => e);
    expect((first as Error).name).toBe('Interrupted');
    const result = await runLoop({
      configFile,
      overrides,
      resume: true,
      logger: memoryLogger(),
      sleep: noSleep,
    });
    expect(result.iterations[0]!.candidates!.map((c) => c.verdict)).toEqual(['screened-out', 'improved']);
    const rows = readHistory(result.stateDir, 'toy');
    expect(rows.map((r) => [r.slot, r.verdict])).toEqual([
      [1, 'screened-out'],
      [2, 'improved'],
    ]);
    expect(listLocalPulls(result.stateDir)).toHaveLength(1);
  }, 300_000);
});
