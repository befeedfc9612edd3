// The README's main command: `hillclimb demo` over the real GDN kernel and its replay patches, on CPU.
// Its first iteration is a search among three candidates (one real gain, one wrong, one null: the
// folder's slot files), its second a change the guard refuses. Slow (a few minutes: three CPU gates, two
// screens and one A/B measurement with JAX), so it asserts what must hold on any machine: every
// candidate ends where it should, with its evidence, and the winner alone has a PR record.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { describePatch, listReplayPatches, replaySlots } from '../../src/agent/agents/replay.js';
import { CLI, REPO_ROOT, tempDir } from '../helpers/paths.js';

const run = promisify(execFile);
const REPLAY = join(REPO_ROOT, 'examples', 'replay', 'gdn');

interface DemoCandidate {
  slot: number;
  verdict: string;
  reason: string;
  subject: string | null;
  screen: number | null;
  prUrl: string | null;
}

interface DemoJson {
  endReason: string;
  iterations: Array<{
    iteration: number;
    verdict: string;
    reason: string;
    subject: string | null;
    prUrl: string | null;
    bundle: string;
    candidates?: DemoCandidate[];
  }>;
}

describe('the replay patches of the demo', () => {
  it('apply to the kernel as it is, in the order the demo reaches them, each with a real subject', async () => {
    const t = tempDir('hc-demo-patches-');
    try {
      const wt = join(t.dir, 'wt');
      await run('git', ['-C', REPO_ROOT, 'worktree', 'add', '--detach', '--quiet', wt, 'HEAD']);
      try {
        const patches = listReplayPatches(REPLAY);
        expect(patches.map((p) => p.patch.split('/').pop())).toEqual([
          '0001-blocked-inverse.patch',
          '0002-relax-fp32-tolerance.patch',
        ]);
        // Iteration 1's other candidates (replay.ts: NNNN.s-*.patch), from the same champion.
        const slots = readdirSync(REPLAY).filter((n) => /^\d{4}\.\d+-.+\.patch$/.test(n));
        expect(slots).toEqual(['0001.2-outer-product-decay.patch', '0001.3-wrapper-layout-helpers.patch']);
        expect(replaySlots(REPLAY)).toBe(3);
        for (const file of [...patches.map((p) => p.patch), ...slots.map((n) => join(REPLAY, n))]) {
          const described = describePatch(readFileSync(file, 'utf8'), file);
          expect(described.subject).not.toMatch(/^replay patch/);
          await run('git', ['-C', wt, 'apply', '--check', file]);
        }
        // 0001 is the improvement: iteration 2's patch must also apply on top of it.
        await run('git', ['-C', wt, 'apply', patches[0]!.patch]);
        await run('git', ['-C', wt, 'apply', '--check', patches[1]!.patch]);
      } finally {
        await run('git', ['-C', REPO_ROOT, 'worktree', 'remove', '--force', wt]);
      }
    } finally {
      t.cleanup();
    }
  });
});

describe('hillclimb demo', () => {
  it('runs the loop end to end on CPU: each candidate reaches its verdict, the winner alone has a PR record', async () => {
    const t = tempDir('hc-demo-');
    try {
      const r = await run(process.execPath, [CLI, 'demo', '--json', '--dir', join(t.dir, 'repo')], {
        cwd: REPO_ROOT,
        maxBuffer: 64 * 1024 * 1024,
      });
      const demo = JSON.parse(r.stdout) as DemoJson;
      expect(demo.endReason).toBe('completed');
      const [search, second] = demo.iterations;
      const [blocked, outer, helpers] = search!.candidates!;
      // The winner: the blocked inverse is faster by ~1.45x on a quiet machine; the verdict then is
      // `improved`, but a heavily loaded machine may widen the interval into `no-change`.
      expect(['improved', 'no-change']).toContain(blocked!.verdict);
      expect(search!.verdict).toBe(blocked!.verdict);
      expect(blocked!.subject).toContain('blockwise');
      expect(blocked!.screen!).toBeGreaterThan(1.02);
      // Wrong math is caught by the CPU tests, before any screen or measurement.
      expect(outer!.verdict).toBe('invalid');
      expect(outer!.reason).toContain('CPU correctness failed');
      expect(outer!.screen).toBeNull();
      // A cosmetic change is screened, and goes no further: below the bar, or behind the winner.
      expect(helpers!.verdict).toBe('screened-out');
      expect(helpers!.screen).not.toBeNull();
      // Loosening the protected tolerance is caught by the path guard, before anything runs; its
      // iteration's other candidates have no patch (no commit).
      const [tolerance, ...empty] = second!.candidates!;
      expect(tolerance!.verdict).toBe('invalid');
      expect(tolerance!.reason).toContain('kernels/harness/spec.py');
      expect(empty.map((c) => c.verdict)).toEqual(['no-op', 'no-op']);
      // The winner alone has a PR record; losers and the refused change were never pushed.
      expect(blocked!.prUrl).toMatch(/^file:\/\/.*\/forge\/pulls\/\d+\.json$/);
      for (const c of [outer, helpers, tolerance]) expect(c!.prUrl).toBeNull();
      // The winner's sticky comment shows both levels on CPU: kernel and model MFU (against the measured
      // matmul peak, labelled so) with their changes, the kernels' share and Amdahl's bound; and the
      // search's table of all three candidates.
      for (const it of [blocked]) {
        const pull = JSON.parse(readFileSync(new URL(it!.prUrl!), 'utf8')) as { number: number };
        const comments = join(fileURLToPath(it!.prUrl!), '..', '..', 'comments', String(pull.number));
        const body = readdirSync(comments)
          .map((f) => (JSON.parse(readFileSync(join(comments, f), 'utf8')) as { body: string }).body)
          .join('\n');
        expect(body).toMatch(
          /\| kernel \| MFU vs measured matmul peak \| [\d.]+% \| [\d.]+% \| [+−][\d.]+ pp/,
        );
        expect(body).toMatch(
          /\| model `tiny` \| MFU vs measured matmul peak \| [\d.]+% \| [\d.]+% \| [+−]?[\d.]+ pp/,
        );
        expect(body).toMatch(
          /\| model `tiny` \| train step time, median \| [\d.]+ ms \| [\d.]+ ms \| [+−]?[\d.]+% \[/,
        );
        expect(body).toMatch(
          /GDN kernels' share of the step \(estimated from the medians\) \| [\d.]+% \| [\d.]+%/,
        );
        expect(body).toMatch(/\*\*Amdahl\*\* .*a 2× faster kernel gives at most [\d.]+× step speed/);
        expect(body).toContain('; model MFU ');
        expect(body).toContain('#### Search: 3 candidates, candidate 1 measured in full');
        expect(body).toMatch(/\| 2 \| [^|]+ \| CPU gate \| — \| — \| invalid \|/);
        // The screen's estimate with its interval (the race's) and its rounds.
        expect(body).toMatch(
          /\| 3 \| [^|]+ \| screen \| [\d.]+× \[[\d.]+×, [\d.]+×\] \| \d+ \| screened-out \|/,
        );
        // One peak for both arms of the comparison: MFU moves against the time, never with it (a peak
        // measured per arm once printed "model MFU 8.21% → 7.07%" beside a step 7.8% faster).
        for (const level of ['kernel', 'model `tiny`']) {
          const row = (what: string) => {
            const m = body.match(
              new RegExp(`\\| ${level} \\| ${what} \\| ([\\d.]+) ?(?:ms|%) \\| ([\\d.]+) ?(?:ms|%) \\|`),
            );
            return m ? [Number(m[1]), Number(m[2])] : undefined;
          };
          const time = row(level === 'kernel' ? '[^|]*time[^|]*' : 'train step time, median');
          const mfu = row('MFU vs measured matmul peak');
          expect(mfu, `${level} MFU row`).toBeDefined();
          if (!time || Math.abs(time[1]! / time[0]! - 1) < 0.01) continue;
          expect(Math.sign(mfu![1]! - mfu![0]!), `${level}: time ${time}, MFU ${mfu}`).toBe(
            -Math.sign(time[1]! - time[0]!),
          );
        }
      }
    } finally {
      t.cleanup();
    }
  }, 1_800_000);
});
