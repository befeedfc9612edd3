// A shared screening session runs every arm's programs in one process, so one candidate's programs can
// make another's fail there (their memory, a stray write). The candidate that failed beside the others
// is screened in a session of its own, and only that session may call it invalid (issue 36's review).
// The toy's FAIL_WITH_RIVALS program fails in any session of more than two arms and passes alone.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runLoop } from '../../src/loop/drivers/run.js';
import { memoryLogger } from '../../src/util/log.js';
import { tempDir } from '../helpers/paths.js';
import { makeToyRepo, STANDARD_PATCHES, systemPython } from './toy-repo.js';

const [faster, , sameSpeed] = STANDARD_PATCHES as [
  (typeof STANDARD_PATCHES)[0],
  (typeof STANDARD_PATCHES)[0],
  (typeof STANDARD_PATCHES)[0],
];

describe('a candidate that fails only beside the others in the shared screen', () => {
  const t = tempDir('hc-shared-blame-');
  afterAll(t.cleanup);

  it('is screened alone, where it passes, and can still win', async () => {
    process.env.HILLCLIMB_PYTHON = systemPython();
    const repo = join(t.dir, 'repo');
    makeToyRepo(repo, [
      {
        ...faster,
        name: '0001-shorter-delay-fragile',
        edit: { 'toy/kernel.py': (s) => `${faster.edit['toy/kernel.py']!(s)}\nFAIL_WITH_RIVALS = True\n` },
      },
      { ...sameSpeed, name: '0001.2-same-speed' },
    ]);
    const lines: string[] = [];
    const result = await runLoop({
      configFile: join(repo, 'hillclimb.yml'),
      overrides: { 'loop.iterations': 1, 'loop.candidates': 2 },
      logger: memoryLogger(),
      progress: (l) => lines.push(l),
      sleep: async () => undefined,
    });
    const [fragile, other] = result.iterations[0]!.candidates!.map((c) => c.evidence);
    // It failed in the shared session, was timed alone, and went on: never `invalid` for a rival's sake.
    expect(fragile!.verdict).not.toBe('invalid');
    expect(fragile!.screen!.sharedWith ?? []).not.toContain(1);
    expect(other!.screen!.sharedWith).toEqual([2]);
    expect(lines.join('\n')).toMatch(/failed in the shared session/);
    expect(result.iterations[0]!.verdict).toBe('improved');
  }, 300_000);
});
