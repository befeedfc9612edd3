// The README's main command: `hillclimb demo` over the real GDN kernel and its replay patches, on CPU.
// Slow (a few minutes: three CPU gates and two A/B measurements with JAX), so it asserts what must hold
// on any machine: every iteration ends where it should, with its evidence and its PR record.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { describePatch, listReplayPatches } from '../../src/agent/agents/replay.js';
import { CLI, REPO_ROOT, tempDir } from '../helpers/paths.js';

const run = promisify(execFile);
const REPLAY = join(REPO_ROOT, 'examples', 'replay', 'gdn');

interface DemoJson {
  endReason: string;
  iterations: Array<{
    iteration: number;
    verdict: string;
    reason: string;
    subject: string | null;
    prUrl: string | null;
    bundle: string;
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
          '0002-outer-product-decay.patch',
          '0003-wrapper-layout-helpers.patch',
          '0004-relax-fp32-tolerance.patch',
        ]);
        for (const p of patches) {
          const described = describePatch(readFileSync(p.patch, 'utf8'), p.patch);
          expect(described.subject).not.toMatch(/^replay patch/);
          await run('git', ['-C', wt, 'apply', '--check', p.patch]);
        }
        // 0001 is the improvement: the others must also apply on top of it.
        await run('git', ['-C', wt, 'apply', patches[0]!.patch]);
        for (const p of patches.slice(1)) await run('git', ['-C', wt, 'apply', '--check', p.patch]);
      } finally {
        await run('git', ['-C', REPO_ROOT, 'worktree', 'remove', '--force', wt]);
      }
    } finally {
      t.cleanup();
    }
  });
});

describe('hillclimb demo', () => {
  it('runs the loop end to end on CPU: each patch reaches its verdict, with evidence and a PR record', async () => {
    const t = tempDir('hc-demo-');
    try {
      const r = await run(process.execPath, [CLI, 'demo', '--json', '--dir', join(t.dir, 'repo')], {
        cwd: REPO_ROOT,
        maxBuffer: 64 * 1024 * 1024,
      });
      const demo = JSON.parse(r.stdout) as DemoJson;
      expect(demo.endReason).toBe('completed');
      const [blocked, outer, helpers, tolerance] = demo.iterations;
      // Measured candidates: the blocked inverse is faster by ~1.45x on a quiet machine; the verdict then
      // is `improved`, but a heavily loaded machine may widen the interval into `no-change`.
      expect(['improved', 'no-change']).toContain(blocked!.verdict);
      expect(blocked!.subject).toContain('blockwise');
      // Wrong math is caught by the CPU tests, before any measurement.
      expect(outer!.verdict).toBe('invalid');
      expect(outer!.reason).toContain('CPU correctness failed');
      // A cosmetic change measures as no change (or, under load, never as a regression).
      expect(['no-change', 'improved']).toContain(helpers!.verdict);
      // Loosening the protected tolerance is caught by the path guard, before anything runs.
      expect(tolerance!.verdict).toBe('invalid');
      expect(tolerance!.reason).toContain('kernels/harness/spec.py');
      // Every iteration the guard let through has a PR record; the one it refused was never pushed.
      for (const it of [blocked, outer, helpers])
        expect(it!.prUrl).toMatch(/^file:\/\/.*\/forge\/pulls\/\d+\.json$/);
      expect(tolerance!.prUrl).toBeNull();
      // Each measured iteration's sticky comment shows both levels on CPU: kernel and model MFU (against
      // the measured matmul peak, labelled so) with their changes, the kernels' share and Amdahl's bound.
      for (const it of [blocked, helpers]) {
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
