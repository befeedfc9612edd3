// Issue 36 item 2: the screen races. Two candidates of the same real gain (the shorter delay, one with a
// docstring so that their programs differ) cannot be separated by any interval, so after the first
// shared session the race gives them a second one, up to search.screen_max_rounds, and the leader is
// chosen on its estimate at the budget. The run is interrupted as the second session starts (and a kill
// between its saves is staged: one record has it) and resumed: the race goes on from the rounds in the
// records, and the session files stay whole.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IterationEvidence } from '../../src/evidence/index.js';
import { listLocalPulls, showLocalPull } from '../../src/forge/local-reader.js';
import { type LoopResult, runLoop } from '../../src/loop/drivers/run.js';
import { memoryLogger } from '../../src/util/log.js';
import { tempDir } from '../helpers/paths.js';
import { makeToyRepo, STANDARD_PATCHES, systemPython } from './toy-repo.js';

const noSleep = async () => undefined;
const faster = STANDARD_PATCHES[0]!;
const fasterToo = {
  ...faster,
  edit: {
    'toy/kernel.py': (t: string) =>
      faster.edit['toy/kernel.py']!(t).replace(
        'def compute(xs):',
        'def compute(xs):\n    """Double every element."""',
      ),
  },
};

// Two sessions of 3 rounds at most: the smallest race.
const RACE = { 'loop.iterations': 1, 'loop.candidates': 2, 'search.screen_max_rounds': 6 };

/** The toy repository with the two equal candidates; returns its config file. */
function makeRaceRepo(repo: string): string {
  process.env.HILLCLIMB_PYTHON = systemPython();
  makeToyRepo(repo, [
    { ...faster, name: '0001-shorter-delay' },
    { ...fasterToo, name: '0001.2-shorter-delay-documented' },
  ]);
  return join(repo, 'hillclimb.yml');
}

/** Candidate `slot`'s bundle of the first iteration in the repository's (only) run. */
function candidateBundle(repo: string, slot: number): string {
  const runs = join(repo, '.hillclimb', 'runs');
  return join(runs, readdirSync(runs)[0]!, `i001-c${slot}`);
}

describe('a screen that needs a second session to rank (the race), interrupted and resumed', () => {
  const t = tempDir('hc-search-race-');
  const repo = join(t.dir, 'repo');
  let interrupted: unknown;
  let result: LoopResult;
  const lines: string[] = [];

  beforeAll(async () => {
    const configFile = makeRaceRepo(repo);
    const controller = new AbortController();
    interrupted = await runLoop({
      configFile,
      overrides: RACE,
      logger: memoryLogger(),
      sleep: noSleep,
      signal: controller.signal,
      progress: (l) => {
        lines.push(l);
        if (l.includes('(session 2 of the race)')) controller.abort();
      },
    }).catch((e: unknown) => e);
    // A hard kill between the saves of session 2 as well: candidate 1's record has it, candidate 2's
    // not. The resumed race must cut it and run it again for both, or the rounds no longer pair.
    const record = join(candidateBundle(repo, 1), 'evidence.json');
    const ev = JSON.parse(readFileSync(record, 'utf8')) as IterationEvidence;
    const first = ev.screen!;
    const session = first.sessions![0]!;
    ev.screen = {
      ...first,
      rounds: 2 * first.rounds,
      a: [...first.a, ...first.a],
      b: [...first.b, ...first.b],
      // As raceSession appends it: with the slots the session timed.
      sessions: [
        session,
        { ...session, sessionFile: session.sessionFile.replace('shared', 'shared-2'), sharedWith: [1, 2] },
      ],
    };
    writeFileSync(record, JSON.stringify(ev));
    result = await runLoop({
      configFile,
      overrides: RACE,
      resume: true,
      logger: memoryLogger(),
      sleep: noSleep,
      progress: (l) => lines.push(l),
    });
  }, 300_000);
  afterAll(t.cleanup);

  it('races on after the first session, and picks the leader on its estimate at the budget', () => {
    expect((interrupted as Error).name).toBe('Interrupted');
    const [iteration] = result.iterations;
    expect(iteration!.candidates!.map((c) => c.verdict).sort()).toEqual(['improved', 'screened-out']);
    const [first, second] = iteration!.candidates!.map((c) => c.evidence);
    for (const ev of [first!, second!]) {
      // Every round of both sessions, paired: the champion's values are the same in both records.
      expect(ev.screen!.rounds).toBe(6);
      expect(ev.screen!.a).toHaveLength(6);
      expect(ev.screen!.sessions!.map((s) => s.rounds)).toEqual([3, 3]);
      expect(ev.screen!.sessions![1]!.sessionFile).toMatch(/screen-i001-c\d-shared-2\./);
      expect(ev.screen!.interval).not.toBeNull();
      expect(ev.screen!.droppedBy).toBeUndefined();
      for (const s of ev.screen!.sessions!) {
        expect(existsSync(join(iteration!.candidates![ev.slot!.index - 1]!.bundleDir, s.sessionFile))).toBe(
          true,
        );
      }
    }
    expect(first!.screen!.a).toEqual(second!.screen!.a);
    expect(first!.search!.race).toMatchObject({ ending: 'budget', maxRounds: 6 });
    const loser = [first!, second!].find((ev) => ev.verdict === 'screened-out')!;
    expect(loser.verdictReasons[0]).toMatch(/over 6 rounds ≥ 1\.2000, behind candidate \d/);
    expect(lines.filter((l) => l.includes('(session 2 of the race)'))).toHaveLength(2);
    expect(lines).toContainEqual(
      expect.stringMatching(
        /the race's last session was recorded for candidate\(s\) 1 only before the run stopped: cut/,
      ),
    );
  });

  it('says in the PR comment that the winner was chosen on its estimate, not separated', () => {
    const pulls = listLocalPulls(result.stateDir);
    expect(pulls).toHaveLength(1);
    const comment = showLocalPull(result.stateDir, pulls[0]!.number)!.comments[0]!.body;
    expect(comment).toMatch(
      /Candidate \d was chosen on its estimate at the round budget \(6 rounds\), not separated from candidate \d/,
    );
    expect(comment).toMatch(/\| \d\.\d{3}× \[\d\.\d{3}×, \d\.\d{3}×\] \| 6 \| screened-out \|/);
  });
});

// The review of the race: a later session that pins a verdict on one contender (here its programs on
// disk are no longer the ones its gate verified) must record that verdict — the candidate once stayed
// unjudged and could still be chosen on its first session's rounds — and the race ends there.
describe('a contender that a later session of the race finds invalid', () => {
  const t = tempDir('hc-search-race-invalid-');
  const repo = join(t.dir, 'repo');
  let result: LoopResult;
  const lines: string[] = [];

  beforeAll(async () => {
    const configFile = makeRaceRepo(repo);
    let tampered = false;
    result = await runLoop({
      configFile,
      overrides: RACE,
      logger: memoryLogger(),
      sleep: noSleep,
      progress: (l) => {
        lines.push(l);
        if (tampered || !l.includes('(session 2 of the race)')) return;
        // Candidate 2's kept program, rewritten between the sessions (the session reads it next).
        const program = join(candidateBundle(repo, 2), 'programs', 'B-cpu', 'fwd_bwd_toy.jaxexport');
        writeFileSync(program, `${readFileSync(program, 'utf8')} `);
        tampered = true;
      },
    });
  }, 300_000);
  afterAll(t.cleanup);

  it('is recorded invalid, leaves the race, and the other contender goes on alone', () => {
    const [iteration] = result.iterations;
    const [first, second] = iteration!.candidates!.map((c) => c.evidence);
    expect(second!.verdict).toBe('invalid');
    expect(second!.verdictReasons[0]).toMatch(/the programs screened are not the ones the gate verified/);
    expect(second!.search?.role).not.toBe('winner');
    // Its screen keeps the first session's rounds only; the other's has both sessions, paired.
    expect(second!.screen!.sessions).toHaveLength(1);
    expect(first!.screen!.rounds).toBe(6);
    expect(first!.search!.role).toBe('winner');
    expect(['improved', 'no-change']).toContain(first!.verdict);
    expect(lines.some((l) => /screen session 2 → invalid/.test(l))).toBe(true);
    // The race ended there, and the comment says so (not "one candidate was screened").
    expect(first!.search!.race).toMatchObject({ cutShort: 'candidate 2 ended invalid in session 2' });
    const comment = readFileSync(join(iteration!.candidates![0]!.bundleDir, 'report', 'comment.md'), 'utf8');
    expect(comment).toContain(
      'The race was cut short after 6 rounds (candidate 2 ended invalid in session 2): candidate 1 was chosen on those rounds',
    );
  });
});
