import { describe, expect, it } from 'vitest';
import type { IterationEvidence, SearchEvidence } from '../../src/evidence/index.js';
import { raceOutcome, searchSection } from '../../src/report/search.js';
import { baseEvidence } from './builders.js';

// A search of three: candidate 2 won, candidate 1 kept to the end beside it, candidate 3 dropped.
function search(race: SearchEvidence['race']): SearchEvidence {
  return {
    role: 'winner',
    winner: 2,
    measured: [2],
    threshold: 1.02,
    screenRounds: 3,
    ...(race ? { race } : {}),
    candidates: [
      {
        slot: 1,
        subject: 'null layout change',
        stage: 'screen',
        verdict: 'screened-out',
        estimate: 1.076,
        interval: { lo: 0.98, hi: 1.18 },
        rounds: 6,
        reason: 'screen 1.0760 [0.9800, 1.1800] over 6 rounds ≥ 1.0200, behind candidate 2',
      },
      {
        slot: 2,
        subject: 'blocked inverse',
        stage: 'measure',
        verdict: null,
        estimate: 1.21,
        interval: { lo: 1.05, hi: 1.39 },
        rounds: 6,
        reason: '',
      },
      {
        slot: 3,
        subject: 'slower',
        stage: 'screen',
        verdict: 'screened-out',
        estimate: 0.8,
        interval: { lo: 0.77, hi: 0.83 },
        rounds: 3,
        reason: 'dropped',
      },
    ],
  };
}

const winnerEvidence = (race: SearchEvidence['race']): IterationEvidence => ({
  ...baseEvidence(),
  slot: { index: 2, of: 3 },
  search: search(race),
});

describe('the search table', () => {
  it('shows each candidate with its interval and rounds, and says the winner was chosen at the budget', () => {
    const text = searchSection(winnerEvidence({ ending: 'budget', confidence: 0.99444, maxRounds: 6 }))!;
    expect(text).toContain(
      '| 1 | null layout change | screen | 1.076× [0.980×, 1.180×] | 6 | screened-out |',
    );
    expect(text).toContain(
      '| **2** (this) | blocked inverse | full comparison | 1.210× [1.050×, 1.390×] | 6 |',
    );
    expect(text).toContain('raced up to 6 rounds');
    expect(text).toContain('(99.44% per look)');
    // The level sits in the column too: a reader of the table alone would take a bracket for 95%.
    expect(text).toContain('| screen [99.44% interval] | rounds |');
    expect(text).toContain(
      'Candidate 2 was chosen on its estimate at the round budget (6 rounds), not separated from candidate 1 (1.076×)',
    );
  });

  it('names as the runner-up only a candidate no interval dropped, and says when the race was cut short', () => {
    const s = search({
      ending: 'budget',
      confidence: 0.99444,
      maxRounds: 6,
      cutShort: 'session 3 could not run (the backend went away)',
    });
    // Candidate 1 was dropped behind the winner at the last look: it is no runner-up.
    s.candidates[0] = { ...s.candidates[0]!, dropped: 'behind' };
    s.candidates[2] = { ...s.candidates[2]!, estimate: 1.05, rounds: 6 };
    expect(raceOutcome(s)).toBe(
      'The race was cut short after 6 rounds (session 3 could not run (the backend went away)): ' +
        'candidate 2 was chosen on those rounds, not separated from candidate 3 (1.050×), and the full comparison decides.',
    );
    // Whatever the ending the ranking made of the rounds it ended on (one candidate left, or separated).
    for (const ending of ['alone', 'separated'] as const) {
      expect(raceOutcome({ ...s, race: { ...s.race!, ending } })).toMatch(
        /^The race was cut short after 6 rounds \(session 3 could not run/,
      );
    }
  });

  it('says when the race separated the winner, and says nothing of a race for records before it', () => {
    expect(raceOutcome(search({ ending: 'separated', confidence: 0.99, maxRounds: 6 }))).toBe(
      'The race separated candidate 2 from every other candidate: each was dropped by an interval.',
    );
    expect(raceOutcome(search(undefined))).toBeUndefined();
    expect(searchSection(winnerEvidence(undefined))).toContain(
      'screened against the champion (3 paired rounds)',
    );
  });
});
