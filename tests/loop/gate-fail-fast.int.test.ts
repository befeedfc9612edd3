// The CPU gate's two halves — the kernel's test suite and the export + verifier — run side by side; the
// first to fail the candidate stops the other (src/loop/steps/gates.ts). A wrong kernel is caught by the
// verifier in seconds, so a slow suite must not hold the gate for its whole run.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runLoop } from '../../src/loop/drivers/run.js';
import { memoryLogger } from '../../src/util/log.js';
import { tempDir } from '../helpers/paths.js';
import { makeToyRepo, STANDARD_PATCHES, systemPython, TOY_CONFIG } from './toy-repo.js';

const WRONG_MATH = STANDARD_PATCHES[1]!;
/** A suite that takes two minutes before it runs the real check (and its JUnit report). */
const SLOW_SUITE = TOY_CONFIG.replace(
  'command: ["{python}", "harness/check.py", "--junit", "{junit}"]\n        timeout_minutes: 0.5\n        idle_timeout_minutes: 0.2',
  'command: ["sh", "-c", "sleep 120; exec \\"$0\\" harness/check.py --junit \\"$1\\"", "{python}", "{junit}"]\n        timeout_minutes: 3\n        idle_timeout_minutes: 3',
);

describe('a CPU gate whose verifier fails the candidate first', () => {
  const t = tempDir('hc-gate-fail-fast-');
  afterAll(t.cleanup);

  it('stops the test suite and says so; the verdict is the verifier’s', async () => {
    expect(SLOW_SUITE).not.toBe(TOY_CONFIG);
    process.env.HILLCLIMB_PYTHON = systemPython();
    const repo = join(t.dir, 'repo');
    makeToyRepo(repo, [WRONG_MATH], SLOW_SUITE);
    const r = await runLoop({
      configFile: join(repo, 'hillclimb.yml'),
      overrides: { 'loop.iterations': 1 },
      logger: memoryLogger(),
      sleep: async () => undefined,
    });
    const ev = r.iterations[0]!.evidence;
    expect(ev.verdict).toBe('invalid');
    expect(ev.stoppedAt).toBe('cpu-gate');
    expect(ev.verdictReasons[0]).toMatch(
      /^CPU correctness failed: \d+ of \d+ exported programs failed verification/,
    );
    expect(ev.verdictReasons[1]).toBe(
      'the test suite was stopped once the verifier had failed the candidate (no test results)',
    );
    const gate = ev.gates.cpu!;
    expect(gate).toMatchObject({ status: 'failed', exitCode: null });
    expect(gate.junit).toBeUndefined();
    expect(gate.verifier?.passed).toBe(false);
  }, 150_000);
});
