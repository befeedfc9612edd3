// The novelty check's rules (src/loop/steps/guard.ts): which earlier row a change repeats, what the
// refusal says, and when a person's change is exempt.

import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { HistoryRow } from '../../../src/evidence/index.js';
import { Bundle, iterationDirName } from '../../../src/loop/state/bundle.js';
import {
  personsChange,
  repeatReason,
  sameChangeEarlier,
  sameChangeInSearch,
} from '../../../src/loop/steps/guard.js';
import { tempDir } from '../../helpers/paths.js';
import { baseEvidence, historyRows, invalidByGuard } from '../../report/builders.js';

const CHANGE = `sha256:${'c'.repeat(64)}`;
const OLD = 'a'.repeat(40);
const NEW = 'b'.repeat(40);

function row(
  iteration: number,
  verdict: HistoryRow['verdict'],
  base: string,
  extra: Partial<HistoryRow> = {},
) {
  const r = historyRows(1)[0]!;
  return {
    ...r,
    runId: 'run-1',
    iteration,
    verdict,
    baseCommit: base,
    change: CHANGE,
    reason: `${verdict}: why`,
    ratio: 1.002,
    ciLow: 0.981,
    ciHigh: 1.023,
    ...extra,
  } satisfies HistoryRow;
}

describe('sameChangeEarlier', () => {
  const self = { runId: 'run-2', iteration: 5, base: NEW };

  it('a change is a repeat only on the same champion, whatever the earlier verdict', () => {
    const verdicts = [
      'no-change',
      'screened-out',
      'no-op',
      'regressed',
      'invalid',
      'improved',
      'needs-human',
    ] as const;
    for (const verdict of verdicts) {
      // On another champion it is another experiment: measured again (issue 37: a comment-only change
      // refused as a repeat of a no-op on an older champion).
      expect(sameChangeEarlier([row(1, verdict, OLD)], CHANGE, self), verdict).toBeUndefined();
      expect(sameChangeEarlier([row(1, verdict, NEW)], CHANGE, self)?.iteration, verdict).toBe(1);
    }
    // The newest row on this champion is the one named, though a later one on another champion exists.
    expect(sameChangeEarlier([row(1, 'no-op', NEW), row(2, 'no-op', OLD)], CHANGE, self)?.iteration).toBe(1);
  });

  it('skips earlier refusals of the same repeat (never measured), errors, and its own row', () => {
    const first = row(1, 'no-change', OLD);
    const refused = row(2, 'invalid', OLD, {
      reason: repeatReason(first),
      ratio: null,
      ciLow: null,
      ciHigh: null,
    });
    const legacy = row(3, 'invalid', OLD, {
      reason: 'novelty check: the same change as iteration 1 of run run-1 (…)',
    });
    // The champion moved: the no-change does not count, and neither do the refusals that cited it.
    expect(sameChangeEarlier([first, refused, legacy], CHANGE, self)).toBeUndefined();
    // On the champion it was measured on, the refusal names the measured iteration, not a refusal.
    expect(sameChangeEarlier([first, refused, legacy], CHANGE, { ...self, base: OLD })?.iteration).toBe(1);
    expect(sameChangeEarlier([row(1, 'error', NEW)], CHANGE, self)).toBeUndefined();
    expect(sameChangeEarlier([row(5, 'invalid', NEW, { runId: 'run-2' })], CHANGE, self)).toBeUndefined();
  });
});

describe('repeatReason', () => {
  it('names the iteration it repeats, its verdict and ratio, and how a person has it measured anyway', () => {
    expect(repeatReason(row(3, 'regressed', OLD, { reason: 'upper CI bound 0.95 < 0.99' }))).toBe(
      `novelty check: a repeat of iteration 3 of run run-1 (regressed, ratio 1.002 [0.981, 1.023]: upper CI bound 0.95 < 0.99), the same change on the same champion ${OLD.slice(0, 12)}. ` +
        'Not measured again until the champion moves; no PR is opened for it; a person who wants it measured anyway measures it as their own change: ' +
        '/hillclimb measure on a pull request that makes it, or hillclimb measure --base <champion> --head <commit>.',
    );
    const noChange = repeatReason(row(2, 'no-change', OLD, { slot: 2 }));
    expect(noChange).toMatch(
      /^novelty check: a repeat of iteration 2-c2 of run run-1 \(no-change, ratio 1\.002 /,
    );
    expect(noChange).toContain('Not measured again until the champion moves;');
    expect(repeatReason(row(4, 'invalid', OLD, { ratio: null, ciLow: null, ciHigh: null }))).toContain(
      '(invalid, not measured: invalid: why)',
    );
  });
});

describe('personsChange: only a harness fact exempts a repeat', () => {
  const withFrom = { candidate: { from: NEW } as never, steps: {} };
  it('believes `candidate.from` in the job that made the candidate', () => {
    expect(personsChange({ proposes: true }, withFrom)).toBe(true);
  });
  it("believes it in a later job only with the maker's guard record, which trust.ts keeps for an attested bundle only", () => {
    expect(personsChange({ proposes: false }, withFrom)).toBe(false);
    const attested = {
      ...withFrom,
      steps: { guard: { status: 'done', startedAt: '', finishedAt: '' } } as never,
    };
    expect(personsChange({ proposes: false }, attested)).toBe(true);
  });
  it('an agent’s candidate (no `from`) is never exempt', () => {
    expect(personsChange({ proposes: true }, { candidate: {} as never, steps: {} })).toBe(false);
  });
});

describe('sameChangeInSearch', () => {
  const t = tempDir('hc-novelty-search-');
  afterAll(t.cleanup);

  it('names the earlier candidate of the same search iteration that made the same change', () => {
    const save = (index: number, change: string | undefined) => {
      const ev = { ...baseEvidence(), iteration: 3, slot: { index, of: 4 } };
      if (change) ev.guard = { ...invalidByGuard().guard!, change };
      new Bundle(join(t.dir, iterationDirName({ iteration: 3, slot: { index } }))).save(ev);
    };
    save(1, `sha256:${'d'.repeat(64)}`);
    save(2, CHANGE);
    save(3, undefined);
    const of = (index: number, iteration = 3) => ({ iteration, slot: { index, of: 4 } });
    expect(sameChangeInSearch(t.dir, of(4), CHANGE)).toBe(2);
    expect(sameChangeInSearch(t.dir, of(3), CHANGE)).toBe(2);
    // Only lower slots count (the first to make a change is the one tested), in the same iteration.
    expect(sameChangeInSearch(t.dir, of(2), CHANGE)).toBeUndefined();
    expect(sameChangeInSearch(t.dir, of(4, 4), CHANGE)).toBeUndefined();
    expect(sameChangeInSearch(t.dir, { iteration: 3 }, CHANGE)).toBeUndefined();
  });
});
