// hillclimb test / measure / profile through the real CLI on the toy target.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MetricsFile } from '../../../src/evidence/metrics.js';
import type { IterationEvidence } from '../../../src/evidence/record.js';
import { LocalForge } from '../../../src/forge/forges/local.js';
import { memoryLogger } from '../../../src/util/log.js';
import { CLI, tempDir } from '../../helpers/paths.js';
import { gitIn, makeToyRepo, systemPython } from '../toy-repo.js';

const run = promisify(execFile);
const python = systemPython();

async function hillclimb(repo: string, ...args: string[]) {
  try {
    const r = await run(process.execPath, [CLI, ...args, '--root', repo], {
      env: { ...process.env, HILLCLIMB_PYTHON: python },
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

describe('hillclimb test, measure and profile', () => {
  const t = tempDir('hc-manual-');
  const repo = join(t.dir, 'repo');
  let base: string;
  let faster: string;

  beforeAll(() => {
    base = makeToyRepo(repo, []);
    const kernel = join(repo, 'toy', 'kernel.py');
    writeFileSync(kernel, readFileSync(kernel, 'utf8').replace('DELAY_S = 0.02', 'DELAY_S = 0.008'));
    gitIn(repo, 'commit', '-qam', 'faster');
    faster = gitIn(repo, 'rev-parse', 'HEAD').trim();
    writeFileSync(kernel, readFileSync(kernel, 'utf8').replace('return [2 * x', 'return [3 * x'));
    gitIn(repo, 'commit', '-qam', 'wrong');
  });
  afterAll(t.cleanup);

  it('test: a passing gate exits 0 with its JUnit counts; a failing one exits 1 naming the failures', async () => {
    const ok = await hillclimb(repo, 'test', '--ref', faster);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('3 passed, 0 failed');
    const bad = await hillclimb(repo, 'test');
    expect(bad.code).toBe(1);
    // The suite and the verifier run side by side and the first to fail the candidate stops the other:
    // which one names the failure depends on the machine's load, never whether one is named.
    expect(bad.stdout).toMatch(
      /FAILED harness\.check::test_compute\[n5\]|exported programs failed verification, first: fwd_bwd@toy/,
    );
  });

  it('measure: A/B of two commits gives the verdict with its interval', async () => {
    const r = await hillclimb(repo, 'measure', '--base', base, '--head', faster, '--json');
    expect(r.code).toBe(0);
    const ev = JSON.parse(r.stdout) as IterationEvidence;
    expect(ev.verdict).toBe('improved');
    expect(ev.measurement?.comparison?.ci?.lo).toBeGreaterThan(1);
    // The sessions ran on this machine (the local backend): how busy it was is recorded beside them.
    expect(ev.measurement?.sessions?.[0]?.machine?.cpus).toBeGreaterThan(0);
    expect(ev.measurement?.machine?.loadPerCore).toBeGreaterThanOrEqual(0);
    expect(ev.profile?.status).toBe('done');
    // Each run's "took" is its own timed calls on the wall clock, read from its own metrics, not its
    // verifier session's time shared out evenly over the rounds.
    const bundleDir = join(repo, '.hillclimb', 'runs', ev.runId, 'i001');
    for (const run of ev.measurement!.runs) {
      const metrics = JSON.parse(readFileSync(join(bundleDir, run.metricsFile), 'utf8')) as MetricsFile;
      const timed = Object.values(metrics.measurements).flatMap((m) => m.wall_samples_ms ?? m.samples_ms);
      expect(run.durationMs).toBeCloseTo(
        timed.reduce((x, y) => x + y, 0),
        6,
      );
    }
  });

  it('measure --pr --dry-run prints the commands and leaves the PR comment alone', async () => {
    const r = await hillclimb(repo, 'measure', '--base', base, '--head', faster, '--pr', '7', '--dry-run');
    expect(r.stderr).toMatch(/dry run: \S*python\S* -m harness\.programs export --platform cpu /);
    expect(r.stdout).toContain('PR #7: dry run, sticky comment left alone');
    expect(existsSync(join(repo, '.hillclimb', 'forge'))).toBe(false);
  });

  it('measure --pr: measures, then writes the sticky comment on that PR (exit 0)', async () => {
    // A person's PR on the local forge: the branch and its record, as the forge keeps them.
    gitIn(repo, 'branch', 'faster-kernel', faster);
    const forge = new LocalForge({
      repoDir: repo,
      stateDir: join(repo, '.hillclimb'),
      logger: memoryLogger(),
    });
    const { pr } = await forge.upsertPullRequest({
      branch: 'faster-kernel',
      base: 'main',
      title: 'faster kernel',
      body: 'by hand',
      draft: false,
      labels: [],
    });
    const r = await hillclimb(repo, 'measure', '--base', base, '--head', faster, '--pr', String(pr.number));
    expect(r.stderr).not.toContain('no champion was given');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`PR #${pr.number}: sticky comment created`);
    const comments = forge.records.comments(pr.number);
    expect(comments).toHaveLength(1);
    // The comment carries the measurement itself, not a refusal of the bundle.
    expect(comments[0]?.body).toContain('improved');
    expect(comments[0]?.body).not.toContain('no attested result');
  });

  it('measure: a change to the protected harness is not measured as a speedup', async () => {
    const check = join(repo, 'harness', 'check.py');
    writeFileSync(check, `${readFileSync(check, 'utf8')}\n# edited\n`);
    gitIn(repo, 'commit', '-qam', 'harness edit');
    const r = await hillclimb(repo, 'measure', '--base', faster, '--head', 'HEAD', '--no-profile');
    expect(r.stdout).toContain('needs-human');
    expect(r.stdout).toContain('protected harness paths (harness/check.py)');
  });

  it('profile: summarizes one profiled run', async () => {
    const r = await hillclimb(repo, 'profile', '--ref', base);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('toy_kernel');
  });
});

// An older branch compared with a main that moved on (issue 37): the change is what the branch did
// since it branched off (GitHub's three-dot diff), never main's newer commits undone.
describe('hillclimb measure of a branch older than its base', () => {
  const t = tempDir('hc-moved-main-');
  const repo = join(t.dir, 'repo');
  afterAll(t.cleanup);

  beforeAll(() => {
    makeToyRepo(repo, []);
    gitIn(repo, 'switch', '-qc', 'faster');
    const kernel = join(repo, 'toy', 'kernel.py');
    writeFileSync(kernel, readFileSync(kernel, 'utf8').replace('DELAY_S = 0.02', 'DELAY_S = 0.008'));
    gitIn(repo, 'commit', '-qam', 'faster');
    // main moves on after the branch point: a protected file added, and a kernel line the branch
    // never touched.
    gitIn(repo, 'switch', '-q', 'main');
    mkdirSync(join(repo, 'replay'), { recursive: true });
    writeFileSync(join(repo, 'replay', '0001-later.patch'), 'added on main later\n');
    writeFileSync(kernel, `${readFileSync(kernel, 'utf8')}\n# main's own note\n`);
    gitIn(repo, 'add', '-A');
    gitIn(repo, 'commit', '-qm', 'main moves on');
  });

  it("measures the branch's own change on main: not needs-human over main's files", async () => {
    const r = await hillclimb(
      repo,
      'measure',
      '--base',
      'main',
      '--head',
      'faster',
      '--no-profile',
      '--json',
    );
    const ev = JSON.parse(r.stdout) as IterationEvidence;
    expect(ev.candidate?.changedPaths).toEqual(['toy/kernel.py']);
    // Measured, whatever the timing says: a verdict on the kernel, not on main's files.
    expect(['improved', 'no-change', 'regressed'], ev.verdictReasons.join('; ')).toContain(ev.verdict);
    // The candidate is main plus the branch's change: main's later commit is kept, not undone.
    const head = ev.candidate!.commit;
    expect(gitIn(repo, 'show', `${head}:replay/0001-later.patch`)).toBe('added on main later\n');
    const kernel = gitIn(repo, 'show', `${head}:toy/kernel.py`);
    expect(kernel).toContain('DELAY_S = 0.008');
    expect(kernel).toContain("# main's own note");
  });

  it('a branch that conflicts with main is refused, naming the file and saying to rebase', async () => {
    gitIn(repo, 'switch', '-qc', 'clash', 'faster');
    const kernel = join(repo, 'toy', 'kernel.py');
    writeFileSync(kernel, `${readFileSync(kernel, 'utf8')}\n# the branch's own note\n`);
    gitIn(repo, 'commit', '-qam', 'clash');
    gitIn(repo, 'switch', '-q', 'main');
    const r = await hillclimb(repo, 'measure', '--base', 'main', '--head', 'clash', '--no-profile');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('clash and main both changed toy/kernel.py since clash branched off');
    expect(r.stderr).toContain('hint: rebase clash onto main');
  });
});
