// `hillclimb log lint` through the real CLI (dist/cli.js, built by the vitest global setup).
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendLogEntry, renderLogEntry } from '../../src/report/log-entry.js';
import { CLI, tempDir } from '../helpers/paths.js';
import { IMPROVED, invalidByCpuGate, measured } from './builders.js';

const execFileP = promisify(execFile);

async function hillclimb(args: string[], cwd: string) {
  try {
    const r = await execFileP(process.execPath, [CLI, ...args], { cwd });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

describe('hillclimb log lint', () => {
  let t: ReturnType<typeof tempDir>;
  let log: string;

  beforeEach(() => {
    t = tempDir();
    // A project without hillclimb.yml: the defaults docs/hillclimb-log.md and .hillclimb apply.
    const evidence = [measured(IMPROVED, { device: 'tpu' }), invalidByCpuGate()];
    let text: string | undefined;
    evidence.forEach((ev, i) => {
      ev.iteration = i + 1;
      const path = `runs/r1/i00${i + 1}/evidence.json`;
      mkdirSync(join(t.dir, '.hillclimb', 'runs', 'r1', `i00${i + 1}`), { recursive: true });
      writeFileSync(join(t.dir, '.hillclimb', path), JSON.stringify(ev, null, 2));
      text = appendLogEntry(text, renderLogEntry(ev, { evidencePath: path }));
    });
    mkdirSync(join(t.dir, 'docs'));
    log = join(t.dir, 'docs', 'hillclimb-log.md');
    writeFileSync(log, text!);
  });
  afterEach(() => t.cleanup());

  it('passes a freshly rendered log (exit 0)', async () => {
    const r = await hillclimb(
      ['--root', t.dir, 'log', 'lint', '--scope', 'all', '--require-evidence'],
      t.dir,
    );
    expect(r.stdout.trim()).toBe('log lint passed');
    expect(r.code).toBe(0);
  });

  it('reports a hand-edited number with its line (exit 1)', async () => {
    const text = readFileSync(log, 'utf8');
    writeFileSync(
      log,
      text.replace('- MFU: 31.20% → 38.33% (+7.13 pp)', '- MFU: 31.20% → 41.00% (+9.80 pp)'),
    );
    const line = text.split('\n').findIndex((l) => l.startsWith('- MFU: 31.20%')) + 1;
    const r = await hillclimb(['--root', t.dir, 'log', 'lint', '--scope', 'all'], t.dir);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      `docs/hillclimb-log.md:${line}: error: harness line differs from the evidence ("41.00%", "+9.80 pp" not in the evidence); expected: - MFU: 31.20% → 38.33% (+7.13 pp) [harness-line-edited]`,
    );
    expect(r.stdout).toContain('log lint failed: 1 error(s), 0 warning(s)');
  });

  it('warns without evidence and fails with --require-evidence', async () => {
    const empty = join(t.dir, 'elsewhere');
    mkdirSync(empty);
    const warn = await hillclimb(['--root', t.dir, 'log', 'lint', '--evidence-root', empty], t.dir);
    expect(warn.code).toBe(0);
    expect(warn.stdout).toMatch(/:\d+: warning: evidence runs\/r1\/i002\/evidence\.json not available/);
    expect(warn.stdout).toContain('log lint passed (1 warning(s))');
    const fail = await hillclimb(
      ['--root', t.dir, 'log', 'lint', '--evidence-root', empty, '--require-evidence'],
      t.dir,
    );
    expect(fail.code).toBe(1);
  });

  it('rejects a placeholder and a decreasing heading, unless allowed', async () => {
    writeFileSync(log, `${readFileSync(log, 'utf8')}\n### Iteration 1 - by hand\n- Commit: (pending)\n`);
    const r = await hillclimb(['--root', t.dir, 'log', 'lint'], t.dir);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/error: iteration number decreased \(1 after 2\) \[monotonic\]/);
    expect(r.stdout).toMatch(/error: placeholder "- Commit: \(pending\)"/);
    const allowed = await hillclimb(['--root', t.dir, 'log', 'lint', '--allow-non-monotonic'], t.dir);
    expect(allowed.stdout).not.toContain('[monotonic]');
  });

  it('exits 2 when the file is missing or the scope is unknown', async () => {
    const missing = await hillclimb(['--root', t.dir, 'log', 'lint', '--file', 'nope.md'], t.dir);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('nope.md: file not found');
    const scope = await hillclimb(['--root', t.dir, 'log', 'lint', '--scope', 'first'], t.dir);
    expect(scope.code).toBe(2);
  });

  it("on main before any loop PR merged: lints the newest run's copy, and says so", async () => {
    writeFileSync(join(t.dir, '.hillclimb', 'runs', 'r1', 'hillclimb-log.md'), readFileSync(log, 'utf8'));
    rmSync(log);
    const r = await hillclimb(['--root', t.dir, 'log', 'lint'], t.dir);
    expect(r.stdout).toContain(
      "docs/hillclimb-log.md is not here yet (loop PRs carry it until one merges): checking the newest run's copy",
    );
    expect(r.stdout).toContain('log lint passed');
    expect(r.code).toBe(0);
    // No run either: the error says where the log lives.
    rmSync(join(t.dir, '.hillclimb', 'runs', 'r1', 'hillclimb-log.md'));
    const none = await hillclimb(['--root', t.dir, 'log', 'lint'], t.dir);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("no log yet: the loop writes each entry on its iteration's PR branch");
  });
});
