// The loop on the Ray backend against a real local Ray head: the toy target's benchmark and profile run as
// Ray jobs (the CPU gate stays local); a job that fails is the candidate's fault, a head that is gone is
// the infrastructure's.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLoop } from '../../src/loop/drivers/run.js';
import { HillclimbError } from '../../src/util/errors.js';
import { memoryLogger } from '../../src/util/log.js';
import { type RayHead, rayUnavailableReason, startRayHead, VENV_PYTHON } from '../compute/ray-head.js';
import { tempDir } from '../helpers/paths.js';
import { makeToyRepo, STANDARD_PATCHES, systemPython, TOY_CONFIG } from './toy-repo.js';

const unavailable = rayUnavailableReason();
const python = systemPython();

function rayConfig(address: string): string {
  return `${TOY_CONFIG}compute:\n  backend: ray\n  ray:\n    address: ${address}\n    python: ${VENV_PYTHON}\n    poll_seconds: 0.5\n`;
}

describe.skipIf(unavailable !== undefined)(
  `loop on a real Ray head${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    const t = tempDir('hc-loop-ray-');
    let head: RayHead;

    beforeAll(async () => {
      process.env.HILLCLIMB_PYTHON = python;
      head = await startRayHead();
    }, 180_000);
    afterAll(async () => {
      await head?.stop();
      t.cleanup();
    });

    it('measures and profiles on Ray: an improvement is improved, a candidate whose export crashes is invalid', async () => {
      const crash = {
        name: '0002-crash-bench',
        edit: { 'toy/kernel.py': (s: string) => `${s}\nCRASH_BENCH = True\n` },
        json: { hypothesis: 'h', summary: 'crash', next_idea: 'n' },
      };
      const repo = join(t.dir, 'ok');
      makeToyRepo(repo, [STANDARD_PATCHES[0]!, crash], rayConfig(head.address));
      const r = await runLoop({
        configFile: join(repo, 'hillclimb.yml'),
        logger: memoryLogger(),
        sleep: async () => undefined,
        overrides: { 'loop.iterations': 2 },
      });
      expect(r.iterations.map((i) => i.verdict)).toEqual(['improved', 'invalid']);
      const first = r.iterations[0]!.evidence;
      expect(first.provenance.backend?.backend).toBe('ray');
      expect(first.measurement?.runs.every((run) => run.value !== null)).toBe(true);
      expect(first.profile?.status).toBe('done');
      // The verifier's sessions ran on the cluster, with the programs shipped in its tree.
      expect(first.isolation?.measure?.mode).toBe('remote');
      expect(first.measurement?.sessions?.length).toBeGreaterThanOrEqual(1);
      expect(r.iterations[1]!.reason).toMatch(
        /the candidate's programs could not be exported: the export exited 3/,
      );
    }, 300_000);

    // Issue 25: the screens of an iteration's candidates run as parallel Ray jobs (parallel_jobs: 2).
    it('screens two candidates as Ray jobs at once; the winner alone is measured in full', async () => {
      const repo = join(t.dir, 'search');
      makeToyRepo(
        repo,
        [
          { ...STANDARD_PATCHES[0]!, name: '0001-shorter-delay' },
          { ...STANDARD_PATCHES[2]!, name: '0001.2-same-speed' },
        ],
        rayConfig(head.address).replace('poll_seconds: 0.5\n', 'poll_seconds: 0.5\n    parallel_jobs: 2\n'),
      );
      const r = await runLoop({
        configFile: join(repo, 'hillclimb.yml'),
        logger: memoryLogger(),
        sleep: async () => undefined,
        overrides: { 'loop.iterations': 1, 'loop.candidates': 2 },
      });
      const [winner, loser] = r.iterations[0]!.candidates!.map((c) => c.evidence);
      expect([winner!.verdict, loser!.verdict]).toEqual(['improved', 'screened-out']);
      expect(loser!.isolation?.measure?.mode).toBe('remote');
      // Both screening jobs were running at the same time.
      const span = (s: NonNullable<typeof winner>['screen']) => {
        const start = Date.parse(s!.startedAt);
        return [start, start + s!.durationMs] as const;
      };
      const [a, b] = [span(winner!.screen), span(loser!.screen)];
      expect(Math.max(a[0], b[0])).toBeLessThan(Math.min(a[1], b[1]));
      expect(winner!.measurement!.sessions!.length).toBeGreaterThanOrEqual(1);
    }, 300_000);

    it('a Ray head that dies mid-run: the job fails as infrastructure, is retried, ends in error, and the failure budget stops the loop', async () => {
      const repo = join(t.dir, 'dies');
      makeToyRepo(repo, [STANDARD_PATCHES[0]!, STANDARD_PATCHES[2]!], rayConfig(head.address));
      const log = memoryLogger();
      let stopping: Promise<void> | undefined;
      const r = await runLoop({
        configFile: join(repo, 'hillclimb.yml'),
        logger: log,
        sleep: async () => undefined,
        overrides: { 'loop.iterations': 2, 'loop.failure_budget': 0 },
        progress: (line) => {
          if (!stopping && line.startsWith('[i002 toy] measure ')) stopping = head.stop();
        },
      });
      await stopping;
      expect(r.iterations.map((i) => i.verdict)).toEqual(['improved', 'error']);
      expect(r.iterations[1]!.reason).toMatch(/^measure: /);
      expect(r.endReason).toBe('failure-budget');
      expect(log.lines.some((l) => l.includes('measure:') && l.includes('retry 1/'))).toBe(true);
      // The runs measured before the head died are kept in the evidence.
      expect(r.iterations[1]!.evidence.steps.measure?.status).toBe('failed');
    }, 300_000);

    it('an unreachable Ray head at start is a clear error naming the address, before any iteration', async () => {
      const repo = join(t.dir, 'unreachable');
      makeToyRepo(repo, STANDARD_PATCHES.slice(0, 1), rayConfig('http://127.0.0.1:9'));
      const err = (await runLoop({ configFile: join(repo, 'hillclimb.yml'), logger: memoryLogger() }).catch(
        (e: unknown) => e,
      )) as HillclimbError;
      expect(err).toBeInstanceOf(HillclimbError);
      expect(err.message).toContain('the Ray job server does not answer');
      expect(err.hint).toContain('tunnel');
    }, 120_000);
  },
);
