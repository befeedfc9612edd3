/**
 * Hostile bytes against the verifier (issue 35): a candidate's program that kills the verifier's process
 * (as a mutated module aborts MLIR's parser, or a mis-sized LAPACK buffer segfaults it) is the
 * candidate's failure — `invalid`, named, never retried — once the same session over the champion's
 * programs alone ends cleanly. The toy target's verifier aborts on a program that asks it to
 * (tests/loop/toy/programs.py), standing in for the parser; the real signature checks and the fuzzing of
 * the real loader are in packages/hillclimb-bench/tests.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LoopResult, runLoop } from '../../src/loop/drivers/run.js';
import { memoryLogger } from '../../src/util/log.js';
import { tempDir } from '../helpers/paths.js';
import { makeToyRepo, systemPython, TOY_CONFIG } from '../loop/toy-repo.js';

const CRASHING = {
  name: '0001-crash-the-verifier',
  edit: {
    'toy/kernel.py': (s: string) =>
      `${s.replace('DELAY_S = 0.02', 'DELAY_S = 0.008')}\nCRASH_VERIFIER = True\n`,
  },
  json: {
    hypothesis: 'Less waiting.',
    summary: 'And a program the verifier cannot read.',
    next_idea: 'None.',
  },
};

const CRASHING_WHEN_TIMED = {
  name: '0002-crash-the-measurement',
  edit: {
    'toy/kernel.py': (s: string) =>
      `${s.replace('DELAY_S = 0.02', 'DELAY_S = 0.008')}\nCRASH_VERIFIER = "measure"\n`,
  },
  json: {
    hypothesis: 'Less waiting, verified.',
    summary: 'And a program only the measurement cannot read.',
    next_idea: 'None.',
  },
};

describe('a program that crashes the verifier', () => {
  const t = tempDir('hc-hostile-');
  const repo = join(t.dir, 'repo');
  let result: LoopResult;

  beforeAll(async () => {
    process.env.HILLCLIMB_PYTHON = systemPython();
    makeToyRepo(repo, [CRASHING, CRASHING_WHEN_TIMED], `${TOY_CONFIG}sandbox:\n  mode: required\n`);
    result = await runLoop({
      configFile: join(repo, 'hillclimb.yml'),
      logger: memoryLogger(),
      sleep: async () => undefined,
      overrides: { 'loop.iterations': 2 },
    });
  }, 240_000);
  afterAll(t.cleanup);

  it('is invalid at the gate, naming the signal, once the champion’s programs pass the same session', () => {
    const it1 = result.iterations[0]!;
    expect(it1.verdict, it1.reason).toBe('invalid');
    expect(it1.reason).toMatch(
      /^CPU correctness failed: the candidate's programs crashed the verifier twice \(SIGABRT\), which runs the champion's cleanly/,
    );
  });

  it('is invalid in the measurement too, once the champion as both arms passes the same session', () => {
    const it2 = result.iterations[1]!;
    expect(it2.verdict, it2.reason).toBe('invalid');
    expect(it2.reason).toMatch(
      /^measurement: the candidate's programs crashed the verifier twice \(SIGABRT\), which runs the champion's cleanly/,
    );
  });

  it('is never retried as an infrastructure failure', () => {
    for (const { evidence: ev } of result.iterations) {
      expect(ev.failedAttempts?.['cpu-gate'] ?? []).toEqual([]);
      expect(ev.failedAttempts?.measure ?? []).toEqual([]);
    }
    expect(result.endReason).toBe('completed');
  });
});
