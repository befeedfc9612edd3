// A search on one machine runs its candidates' agents side by side (search.parallel_proposals), each in
// its own clone and sandbox, and at most that many at once; guards and gates follow one after another.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runLoop } from '../../src/loop/drivers/run.js';
import { allSettledInTurn } from '../../src/loop/drivers/search.js';
import { memoryLogger } from '../../src/util/log.js';
import { tempDir } from '../helpers/paths.js';
import { makeToyRepo, systemPython, TOY_CONFIG } from './toy-repo.js';

/** An agent that takes a second and a half and says when it started and ended (in its log). */
const SLOW_AGENT = `agent:
  kind: command
  command:
    command: ["sh", "-c", "echo start $(date +%s%N); sleep 1.5; echo end $(date +%s%N)"]
`;

/** The [start, end] of each candidate's agent, in ns, from its log. */
function agentSpans(runDir: string, k: number): Array<[number, number]> {
  return Array.from({ length: k }, (_, s) => {
    const log = readFileSync(join(runDir, `i001-c${s + 1}`, 'agent', 'attempt-1', 'agent.log'), 'utf8');
    const at = (word: string) => Number(new RegExp(`${word} (\\d+)`).exec(log)?.[1]);
    return [at('start'), at('end')];
  });
}

const overlapping = ([a0, a1]: [number, number], [b0, b1]: [number, number]) => a0 < b1 && b0 < a1;

describe('the agents of a search on one machine', () => {
  const t = tempDir('hc-search-parallel-');
  afterAll(t.cleanup);

  it.each([
    [3, 'all three at once'],
    [1, 'one after another'],
  ])(
    'search.parallel_proposals %i: %s',
    async (parallel) => {
      process.env.HILLCLIMB_PYTHON = systemPython();
      const repo = join(t.dir, `repo-${parallel}`);
      const config = TOY_CONFIG.replace(
        /agent:\n {2}kind: replay\n {2}replay: \{dir: replay\}\n/,
        SLOW_AGENT,
      );
      expect(config).toContain('kind: command');
      makeToyRepo(repo, [], config);
      const result = await runLoop({
        configFile: join(repo, 'hillclimb.yml'),
        overrides: { 'loop.iterations': 1, 'loop.candidates': 3, 'search.parallel_proposals': parallel },
        logger: memoryLogger(),
        progress: () => {},
        sleep: async () => undefined,
      });
      // No change from any of them: each is a no-op, recorded.
      expect(result.iterations[0]!.candidates!.map((c) => c.verdict)).toEqual(['no-op', 'no-op', 'no-op']);
      const [a, b, c] = agentSpans(result.runDir, 3) as [
        [number, number],
        [number, number],
        [number, number],
      ];
      const overlaps = [overlapping(a, b), overlapping(a, c), overlapping(b, c)];
      expect(overlaps).toEqual(parallel === 3 ? [true, true, true] : [false, false, false]);
    },
    240_000,
  );
});

describe('allSettledInTurn', () => {
  it('runs at most `limit` at once, every item to its end, then throws the first failure', async () => {
    let running = 0;
    let most = 0;
    const done: number[] = [];
    const work = async (n: number) => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 5 * (n % 3)));
      running--;
      done.push(n);
      if (n === 2 || n === 5) throw new Error(`item ${n}`);
    };
    await expect(allSettledInTurn([1, 2, 3, 4, 5, 6, 7], 3, work)).rejects.toThrow('item 2');
    expect(most).toBe(3);
    expect(done.sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });
});
