import { describe, expect, it } from 'vitest';
import { renderLogEntry } from '../../src/report/log-entry.js';
import { pullRequestTitle, renderPullRequest, reproduceCommands } from '../../src/report/pr.js';
import {
  BASE_SHA,
  CANDIDATE_SHA,
  errored,
  everyVerdict,
  FAILING_TESTS,
  IMPROVED,
  invalidByCpuGate,
  invalidByGuard,
  measured,
  NO_CHANGE,
  noOp,
  REGRESSED,
} from './builders.js';
import { checkWellFormed } from './markdown-checks.js';

describe('pullRequestTitle', () => {
  it('carries the delta, CI and device for measured verdicts', () => {
    expect(pullRequestTitle(measured(IMPROVED))).toBe(
      'perf(gdn): Tile the chunk loop over K by 128 (fwd+bwd time −18.6% [−20.1%, −17.0%] on CPU)',
    );
    expect(pullRequestTitle(measured(REGRESSED, { device: 'tpu' }))).toBe(
      'perf(gdn): Tile the chunk loop over K by 128 (fwd+bwd time +10.5% [+7.5%, +13.6%] on TPU v5p ×4)',
    );
    expect(pullRequestTitle(measured(NO_CHANGE))).toMatch(
      /^perf\(gdn\): .* \(fwd\+bwd time −0\.5% \[−2\.0%, \+1\.0%\] on CPU\)$/,
    );
  });

  it('names the verdict for the others', () => {
    expect(pullRequestTitle(invalidByGuard())).toBe('[invalid] gdn: Tile the chunk loop over K by 128');
    expect(pullRequestTitle(errored())).toBe('[error] gdn: Tile the chunk loop over K by 128');
    expect(pullRequestTitle(noOp())).toBe('[no-op] gdn: (no commit)');
  });

  it('shortens the subject, never the numbers, to 256 characters', () => {
    const ev = measured(IMPROVED);
    ev.candidate!.subject = `Tile ${'very '.repeat(100)}much`;
    const title = pullRequestTitle(ev);
    expect(title.length).toBe(256);
    expect(title).toMatch(/…\(|… \(/);
    expect(title.endsWith('(fwd+bwd time −18.6% [−20.1%, −17.0%] on CPU)')).toBe(true);
    const invalid = invalidByGuard();
    invalid.candidate!.subject = 'x'.repeat(400);
    expect(pullRequestTitle(invalid).length).toBeLessThanOrEqual(256);
  });
});

describe('renderPullRequest', () => {
  it('labels by verdict', () => {
    for (const [, ev] of everyVerdict()) {
      expect(renderPullRequest(ev).labels).toEqual([`hillclimb:${ev.verdict}`]);
    }
  });

  it('quotes the agent’s words and labels them as such', () => {
    const body = renderPullRequest(measured(IMPROVED)).body;
    expect(body).toContain('### What changed (the agent’s words)');
    expect(body).toContain(
      '> agent hypothesis: The K loop reloads the state tile; tiling by 128 should cut the 30% spent in copies.',
    );
    expect(body).toContain(
      '> agent next idea: Fuse the gate cumsum into the same kernel (maybe 2x fewer launches).',
    );
    expect(body).toContain('The harness reads no numbers from it');
  });

  it('gives the verdict, reasons, checks and the measurement headline', () => {
    const body = renderPullRequest(measured(IMPROVED)).body;
    expect(body.split('\n')[0]).toBe('## ✓ improved: fwd+bwd time −18.6% [−20.1%, −17.0%] (n=5+5)');
    expect(body).toContain('### Verdict: ✓ improved');
    expect(body).toContain('- lower CI bound 1.2048 > accept bar 1.0100');
    expect(body).toContain('| CPU correctness | passed, 128 tests: 126 passed, 2 skipped (41.2 s) |');
    expect(body).toContain(
      '**Measurement:** fwd+bwd time 12.31 ms → 10.02 ms, −18.6% [−20.1%, −17.0%] (n=5+5), MFU n/a on CPU.',
    );
  });

  it('names failing tests of a failed gate', () => {
    const body = renderPullRequest(invalidByCpuGate()).body;
    for (const name of FAILING_TESTS) expect(body).toContain(`\`${name}\``);
    expect(body).toContain('Evaluation stopped at `cpu-gate`.');
    expect(body).toContain('**Measurement:** not run.');
  });

  it('has the exact commands to reproduce, on the same backend', () => {
    expect(reproduceCommands(measured(IMPROVED))).toEqual([
      'git fetch origin hillclimb/gdn/20261121-2340-ab12/i003',
      `hillclimb test --target gdn --backend local --ref ${CANDIDATE_SHA}`,
      `hillclimb measure --target gdn --backend local --base ${BASE_SHA} --head ${CANDIDATE_SHA}`,
    ]);
    expect(reproduceCommands(measured(IMPROVED, { device: 'tpu', withProfile: false }))).toEqual([
      'git fetch origin hillclimb/gdn/20261121-2340-ab12/i003',
      `hillclimb test --target gdn --backend tpu-vm --ref ${CANDIDATE_SHA}`,
      `hillclimb test --target gdn --backend tpu-vm --ref ${CANDIDATE_SHA} --accelerator`,
      `hillclimb measure --target gdn --backend tpu-vm --base ${BASE_SHA} --head ${CANDIDATE_SHA} --no-profile`,
    ]);
    expect(reproduceCommands(invalidByGuard())).toEqual([
      'git fetch origin hillclimb/gdn/20261121-2340-ab12/i003',
      `hillclimb test --target gdn --backend local --ref ${CANDIDATE_SHA}`,
    ]);
    expect(reproduceCommands(noOp())).toEqual([
      `# the agent made no commit; nothing to reproduce (base ${BASE_SHA})`,
    ]);
  });

  it('links the evidence bundle and includes the log entry collapsed', () => {
    const ev = measured(IMPROVED);
    ev.publish = {
      warnings: [],
      bundleUrl: 'https://hf.co/datasets/o/r/resolve/main/runs/x/i003/evidence.json',
    };
    const entry = renderLogEntry(ev);
    const body = renderPullRequest(ev, { logEntry: entry }).body;
    expect(body).toContain(
      '[runs/20261121-2340-ab12/i003/evidence.json](https://hf.co/datasets/o/r/resolve/main/runs/x/i003/evidence.json)',
    );
    expect(body).toContain('<details><summary>docs/hillclimb-log.md</summary>');
    expect(body).toContain(entry.trim());
    checkWellFormed(body);
  });

  it('drops the log entry, not the evidence, when the body is too long', () => {
    const ev = measured(IMPROVED);
    const entry = renderLogEntry(ev);
    const full = renderPullRequest(ev, { logEntry: entry });
    const capped = renderPullRequest(ev, { logEntry: entry, maxChars: full.body.length - 100 });
    expect(capped.truncated).toBe(true);
    expect(capped.body).toContain('See `docs/hillclimb-log.md` in this branch.');
    expect(capped.body).toContain('### Reproduce');
  });
});
