/**
 * Seconds per verdict, before and after the export/verify split, on the real gdn target (`tiny`
 * kernel and `tiny` model, CPU, Pallas interpret mode):
 *
 * - before: the in-process bench of the release before the split (kernels/harness/tests/hacks/
 *   bench_inprocess.py), one fresh process per run, arms interleaved A B B A …, the unpaired rule;
 * - after: the verifier (`python -E -s -m kernels.harness.programs verify --mode measure`), both arms'
 *   exported programs timed call by call in one process, one round = one run per arm, the paired rule.
 *
 * Champion A is HEAD's kernel; B adds examples/replay/gdn/0001 (a real speed-up); A′ adds 0001.3 (a
 * different program doing the same work: the A/A of the split, since identical programs are never
 * timed). From the measured cost and noise of each mode it reports the seconds a verdict takes at
 * n = runs_per_arm, the MDE there, and the seconds each mode needs to reach the same MDE (equal
 * power); and how often each rule accepts A′ against A (false accepts at no change).
 *
 * Then the shared screening session's cost (issue 36): verifier sessions of 2 to 5 arms (A, then B, A′,
 * B′ = 0001 + 0001.3, and B's programs once more under a fifth name: the verifier leaves out only arms
 * whose programs are the first's, so it times that one too) at 1 and R rounds, fitted to
 * seconds = fixed + perArm·arms + perArmRound·arms·rounds, and the overhead per arm in arm-rounds the
 * search simulation's cost model takes for k + 1 arms, with bench:search's shared screen at it (× one
 * lineage's true gain per accelerator-hour). `--overhead-only` runs that part alone.
 *
 *   npm run bench:verdict -- [--rounds R] [--sessions S] [--aa N] [--overhead-only]
 *     [--overhead-rounds R] [--overhead-repeats N] [--load N] [--beside CMD] [--skip-before]
 *     [--repeats N] [--min-time-ms T]
 *   npm run bench:verdict -- --sessions-from bench-out/verdict-sessions
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_SEARCH_POLICY } from '../../src/search/index.js';
import {
  DEFAULT_COST,
  MEASURED_NOISE,
  PLAUSIBLE_PRIOR,
  type SearchSummary,
  simulateSearch,
} from '../../src/search/simulation.js';
import {
  compareArms,
  DEFAULT_SEQUENTIAL_POLICY,
  decideNext,
  minimumDetectableEffect,
  pairedNoiseCv,
  robustNoiseCv,
} from '../../src/stats/index.js';
import {
  fitSessionCost,
  overheadArmRounds,
  type SessionCost,
  type SessionCostFit,
} from '../shared-session-overhead.js';

// npm runs the bench from the repository root (the bundle itself lives in a temporary folder).
const ROOT = process.cwd();
const PYTHON = join(ROOT, '.venv', 'bin', 'python');
const N = 5; // measure.runs_per_arm's default
const TARGET = ['--preset', 'tiny', '--model', 'tiny'];
const METRIC = 'fwd_bwd';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '8' }, // before: fresh-process runs per arm
    sessions: { type: 'string', default: '4' }, // after: verifier sessions of N rounds, A vs B
    aa: { type: 'string', default: '8' }, // A/A′ comparisons per mode
    load: { type: 'string', default: '0' }, // busy processes beside the bench
    beside: { type: 'string' }, // a command run over and over beside the bench (its own process group)
    'skip-before': { type: 'boolean', default: false }, // the fresh-process mode (slow; unchanged)
    'overhead-only': { type: 'boolean', default: false }, // only the shared session's cost (a few minutes)
    'overhead-rounds': { type: 'string', default: String(N) }, // the longer sessions' rounds
    'overhead-repeats': { type: 'string', default: '1' }, // times the grid of sessions is measured
    'sessions-from': { type: 'string' }, // a folder of kept session documents: their table, nothing timed
    // Timed calls per round and program in the verifier's sessions, and the time that adds calls to a
    // cheap program's (the gdn target's bench.repeats and bench.min_time_ms; 0: repeats calls each).
    repeats: { type: 'string', default: '10' },
    'min-time-ms': { type: 'string', default: '1000' },
  },
});
const OVERHEAD_ARMS = [2, 3, 4, 5];

/**
 * `n` busy processes until stopped: even ones spin (the scheduler's share), odd ones multiply 512²
 * matrices with NumPy on one thread (caches and memory bandwidth too). Each also stops once this
 * process is gone: the bench runs synchronously, so a signal that ends it runs no handler of its own,
 * and the load would otherwise go on loading the machine.
 */
function startLoad(n: number, beside: string | undefined): ChildProcess[] {
  const parent = process.pid;
  const again = beside
    ? [
        spawn('bash', ['-c', `while kill -0 ${parent} 2>/dev/null; do ${beside}; done`], {
          stdio: 'ignore',
          detached: true,
        }),
      ]
    : [];
  const spin = ['-e', `for (;;) { if (process.ppid !== ${parent}) process.exit(0); }`];
  const matmul = [
    '-c',
    `import os\nimport numpy as np\na = np.random.rand(512, 512)\nwhile os.getppid() == ${parent}: a = (a @ a) / 512`,
  ];
  return [
    ...again,
    ...Array.from({ length: n }, (_, i) =>
      spawn(i % 2 === 0 ? process.execPath : PYTHON, i % 2 === 0 ? spin : matmul, {
        stdio: 'ignore',
        env: { ...process.env, OPENBLAS_NUM_THREADS: '1', OMP_NUM_THREADS: '1', MKL_NUM_THREADS: '1' },
      }),
    ),
  ];
}

function sh(cwd: string, argv: string[], env: Record<string, string> = {}): number {
  const t0 = performance.now();
  execFileSync(argv[0]!, argv.slice(1), {
    cwd,
    env: { ...process.env, JAX_PLATFORMS: 'cpu', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
    maxBuffer: 64 << 20,
  });
  return (performance.now() - t0) / 1000;
}

/**
 * `sh`, through bash so its `times` says the command's CPU seconds (user + system) beside the wall's:
 * on a busy machine the wall stretches with the other processes' share of the core, the CPU time of a
 * process pinned to one core does not.
 */
function shTimed(cwd: string, argv: string[]): { wall: number; cpu: number } {
  const t0 = performance.now();
  const out = execFileSync('bash', ['-c', '"$@" >/dev/null && times', 'bash', ...argv], {
    cwd,
    env: { ...process.env, JAX_PLATFORMS: 'cpu' },
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 << 20,
  }).toString();
  const wall = (performance.now() - t0) / 1000;
  // `times`: the shell's own user and system time, then its children's (here: the command's).
  const children = out
    .trim()
    .split('\n')
    .at(-1)!
    .match(/(\d+)m([\d.]+)s\s+(\d+)m([\d.]+)s/);
  if (!children)
    throw new Error(`bench:verdict: cannot read the CPU time from bash's times: ${JSON.stringify(out)}`);
  const [, um, us, sm, ss] = children.map(Number) as [number, number, number, number, number];
  return { wall, cpu: um * 60 + us + sm * 60 + ss };
}

/**
 * bench:search's shared screen (the loop's screen policy, measured noise, fresh winners, 20 searches
 * of 10 accelerator-hours) with every session at the overhead `fit` gives a session of `arms` arms.
 */
function searchAt(fit: SessionCostFit, k: number, arms: number): SearchSummary {
  return simulateSearch({
    strategy: { policy: { ...DEFAULT_SEARCH_POLICY, candidates: k }, evidence: 'fresh' },
    prior: PLAUSIBLE_PRIOR,
    noise: MEASURED_NOISE,
    cost: { ...DEFAULT_COST, screenSessions: 'shared', overheadPerArm: overheadArmRounds(fit, arms) },
    budgetHours: 10,
    trials: 20,
    seed: 1,
  });
}

/**
 * The true gain per accelerator-hour at the measured overhead, × one lineage's, for k = 2…4. The
 * simulation has one overhead for every session, so each k runs with every session at the 2-arm
 * overhead (the screen overpaid) and at the k + 1-arm one (the full comparisons underpaid).
 */
function gainLines(fit: SessionCostFit): string[] {
  const lineage = searchAt(fit, 1, 2).trueGainPctPerHour;
  const times = (s: SearchSummary) => `${(s.trueGainPctPerHour / lineage).toFixed(2)}×`;
  return [
    '',
    `bench:search's shared screen at this overhead (CPU time), × one lineage's true gain per accelerator-hour (${f(lineage)} log %/h):`,
    ...[2, 3, 4].map(
      (k) =>
        `  k = ${k}: ${times(searchAt(fit, k, 2))} with every session at the 2-arm overhead, ${times(searchAt(fit, k, k + 1))} at the screen's`,
    ),
  ];
}

/** A scratch tree of the kernel workspace with `patches` applied, and the pre-split bench beside it. */
function tree(dir: string, patches: string[]): string {
  mkdirSync(dir, { recursive: true });
  for (const p of ['kernels', 'packages', 'schemas', 'pyproject.toml']) {
    cpSync(join(ROOT, p), join(dir, p), { recursive: true, filter: (s) => !s.includes('__pycache__') });
  }
  cpSync(
    join(ROOT, 'kernels', 'harness', 'tests', 'hacks', 'bench_inprocess.py'),
    join(dir, 'kernels', 'harness', 'bench_inprocess.py'),
  );
  execFileSync('git', ['init', '-q'], { cwd: dir });
  for (const p of patches)
    execFileSync('git', ['apply', join(ROOT, 'examples', 'replay', 'gdn', p)], { cwd: dir });
  return dir;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

/**
 * The mean of the faster half of a round's calls (the ⌈n/2⌉ fastest): a candidate per-round statistic
 * (issue 36) beside the median the verifier reports. Interference only ever adds time to a call, so the
 * faster calls are the ones it touched least; averaging five of them is steadier than the one middle call.
 */
const fasterHalfMean = (calls: readonly number[]): number => {
  const fastest = [...calls].sort((a, b) => a - b).slice(0, Math.ceil(calls.length / 2));
  return fastest.reduce((sum, x) => sum + x, 0) / fastest.length;
};

/**
 * How a round's calls are read: the clock that decides (the verifier's `samples_ms`) or the wall clock
 * kept beside it, each by the round's median (what the verifier reports and the verdict decides on) or
 * by the mean of its faster half (`fasterHalfMean`).
 */
type Clock = 'decisive' | 'wall' | 'decisive-fast' | 'wall-fast';
interface PerRound {
  A: number[];
  B: number[];
}
interface Session {
  seconds: number;
  /** Each arm's per-round values by every reading; `decisive` is what the verdict decides on. */
  readings: Record<Clock, PerRound>;
  /** The decisive clock's name, as the metrics say it. */
  clock: string;
}
const READINGS: readonly Clock[] = ['decisive', 'wall', 'decisive-fast', 'wall-fast'];
/** A verifier session's document (arms A and B) as the bench reads it. */
function sessionOf(doc: SessionDocument, seconds: number): Session {
  const values = (arm: 'A' | 'B', clock: Clock) =>
    doc.rounds.map((r) => {
      const m = r[arm].measurements[METRIC]!;
      if (clock === 'decisive') return m.median_ms;
      if (clock === 'wall') return m.wall_median_ms ?? m.median_ms;
      return fasterHalfMean(clock === 'wall-fast' ? (m.wall_samples_ms ?? m.samples_ms) : m.samples_ms);
    });
  return {
    seconds,
    readings: Object.fromEntries(
      READINGS.map((clock) => [clock, { A: values('A', clock), B: values('B', clock) }]),
    ) as Record<Clock, PerRound>,
    clock: doc.rounds[0]!.A.timing.clock,
  };
}
interface SessionDocument {
  rounds: Array<
    Record<
      'A' | 'B',
      {
        timing: { clock: string };
        measurements: Record<
          string,
          { median_ms: number; samples_ms: number[]; wall_median_ms?: number; wall_samples_ms?: number[] }
        >;
      }
    >
  >;
}

/** A user error: said in one line, exit status 2, no stack trace. */
function fail(message: string): never {
  console.error(`bench:verdict: ${message}`);
  process.exit(2);
}

/**
 * `--sessions-from DIR`: the table of readings again from the session documents an earlier run kept
 * (`bench-out/verdict-sessions`; its one-round warm-up sessions left out), without timing anything.
 */
function readingsOfKept(dir: string): string[] {
  if (!existsSync(dir))
    fail(`--sessions-from ${dir}: no such folder (a run keeps its sessions in bench-out/verdict-sessions)`);
  const kept = readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => ({ name, doc: JSON.parse(readFileSync(join(dir, name), 'utf8')) as SessionDocument }))
    .filter(({ doc }) => doc.rounds.length >= 2);
  const ab = kept.filter(({ name }) => name.endsWith('-A-B.json')).map(({ doc }) => sessionOf(doc, 0));
  const aa = kept.filter(({ name }) => name.endsWith('-A-A2.json')).map(({ doc }) => sessionOf(doc, 0));
  if (ab.length === 0 || aa.length === 0) {
    fail(`--sessions-from ${dir}: needs A/B and A/A′ sessions of 2 rounds or more (…-A-B.json, …-A-A2.json)`);
  }
  return [
    `${ab.length} A/B and ${aa.length} A/A′ sessions kept in ${dir}`,
    '',
    `| clock of the verifier session, per-round statistic | paired CV | MDE at n = ${N} | 0001 speed-up (sessions) | A/B improved at the first look | A/A′ accepted |`,
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...clockRows(ab, aa, ab[0]!.clock).map((r) => `| ${r.join(' | ')} |`),
  ];
}

const loads: number[] = [];
const pct = (x: number) => `${(x * 100).toFixed(2)}%`;
const f = (x: number, d = 1) => x.toFixed(d);

/**
 * One row per reading (clock and per-round statistic): its paired noise, MDE, speed-up, first-look
 * accepts of A/B and accepts of A/A′, each as the verdict's rule would give them on those values.
 */
function clockRows(ab: Session[], aa: Session[], decisive: string): string[][] {
  const on = (s: Session, clock: Clock): PerRound => s.readings[clock];
  const opts = { direction: 'lower', seed: 1, paired: true } as const;
  const wall = 'perf_counter+block_until_ready';
  const clocks: Array<[Clock, string]> = [
    ['decisive', `${decisive}, median (decides)`],
    ['wall', `${wall} (wall, beside), median`],
    ['decisive-fast', `${decisive}, mean of the faster half`],
    ['wall-fast', `${wall} (wall), mean of the faster half`],
  ];
  return clocks.map(([clock, label]) => {
    const cv = median([...ab, ...aa].map((s) => pairedNoiseCv(on(s, clock).A, on(s, clock).B)));
    const speedups = ab.map((s) => median(on(s, clock).A) / median(on(s, clock).B));
    const firstLook = ab.filter((s) => {
      const d = decideNext(on(s, clock).A, on(s, clock).B, opts, DEFAULT_SEQUENTIAL_POLICY);
      return d.action === 'stop' && d.comparison?.verdict === 'improved';
    }).length;
    const aaAccepted = aa.filter(
      (s) => compareArms(on(s, clock).A, on(s, clock).B, opts).verdict === 'improved',
    ).length;
    return [
      label,
      pct(cv),
      pct(minimumDetectableEffect(cv, N, N, { paired: true })),
      `${median(speedups).toFixed(3)} (${Math.min(...speedups).toFixed(3)}–${Math.max(...speedups).toFixed(3)})`,
      `${firstLook} of ${ab.length}`,
      `${aaAccepted} of ${aa.length}`,
    ];
  });
}

function main(): void {
  const work = mkdtempSync(join(tmpdir(), 'hc-verdict-'));
  try {
    const trees = {
      A: tree(join(work, 'A'), []),
      B: tree(join(work, 'B'), ['0001-blocked-inverse.patch']),
      A2: tree(join(work, 'A2'), ['0001.3-wrapper-layout-helpers.patch']),
    };
    const overheadOnly = args['overhead-only'];
    const caches = Object.fromEntries(Object.keys(trees).map((k) => [k, join(work, `cache-${k}`)]));

    // --- before: one fresh in-process bench per run ------------------------------------------------
    const oldRun = (arm: keyof typeof trees): { seconds: number; value: number } => {
      const out = join(work, `${arm}.json`);
      const seconds = sh(trees[arm], [
        PYTHON,
        '-m',
        'kernels.harness.bench_inprocess',
        '--impl',
        'pallas',
        ...TARGET,
        '--repeats',
        '10',
        '--warmup',
        '2',
        '--pin-cpu',
        '--compile-cache',
        caches[arm]!,
        '--out',
        out,
      ]); // prettier-ignore
      return { seconds, value: JSON.parse(readFileSync(out, 'utf8')).measurements[METRIC].median_ms };
    };
    const load = startLoad(Number(args.load), args.beside);
    const stopLoad = () => {
      for (const p of load) {
        try {
          // The command beside leads a process group of its own: end all of it.
          if (p.pid !== undefined) process.kill(args.beside && p === load[0] ? -p.pid : p.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    };
    process.once('exit', stopLoad);
    const before = !args['skip-before'] && !overheadOnly;
    if (before) for (const arm of ['A', 'B', 'A2'] as const) oldRun(arm); // warm each compile cache
    const old = { A: [] as number[], B: [] as number[], A2: [] as number[], seconds: [] as number[] };
    const rounds = before ? Number(args.rounds) : 0;
    for (let r = 0; r < rounds; r++) {
      for (const arm of r % 2 === 0 ? (['A', 'B', 'A2'] as const) : (['A2', 'B', 'A'] as const)) {
        const run = oldRun(arm);
        old[arm].push(run.value);
        old.seconds.push(run.seconds);
      }
    }

    // --- after: exports once, then verifier sessions -------------------------------------------------
    // As the loop does: the requests step in the verifier's tree (no kernel in it) says what every
    // export builds; each arm's export builds it from its own tree.
    const verifier = tree(join(work, 'verifier'), []);
    rmSync(join(verifier, 'kernels', 'gdn'), { recursive: true });
    const requests = join(work, 'requests.json');
    sh(verifier, [
      PYTHON,
      '-E',
      '-s',
      '-m',
      'kernels.harness.programs',
      'requests',
      '--draw',
      '1',
      '--out',
      requests,
      '--',
      ...TARGET,
    ]); // prettier-ignore
    const programs = Object.fromEntries(Object.keys(trees).map((k) => [k, join(work, `programs-${k}`)]));
    /** Export the programs of the kernel in `dir` into `out`, as a candidate's export does: its seconds. */
    const exportPrograms = (dir: string, out: string): number =>
      sh(
        dir,
        [
          PYTHON,
          '-m',
          'kernels.harness.programs',
          'export',
          '--platform',
          'cpu',
          '--requests',
          requests,
          '--out',
          out,
          '--',
          ...TARGET,
        ], // prettier-ignore
        { JAX_TRACEBACK_IN_LOCATIONS_LIMIT: '0' }, // the loop's CANDIDATE_ENV
      );
    const exportSeconds: Record<string, number> = {};
    for (const [arm, dir] of Object.entries(trees)) exportSeconds[arm] = exportPrograms(dir, programs[arm]!);
    const verifierCache = join(work, 'cache-verifier');
    /** One verifier session of `arms` (name → programs folder) over `n` rounds: its seconds and document. */
    const verify = (arms: Array<[string, string]>, n: number) => {
      const out = join(work, 'session.json');
      const { wall: seconds, cpu } = shTimed(verifier, [
        PYTHON,
        '-E',
        '-s',
        '-m',
        'kernels.harness.programs',
        'verify',
        '--mode',
        'measure',
        '--platform',
        'cpu',
        '--draw',
        '1',
        ...arms.flatMap(([name, dir]) => ['--arm', `${name}=${dir}`]),
        '--rounds',
        String(n),
        '--repeats',
        String(args.repeats),
        '--min-time-ms',
        String(args['min-time-ms']),
        '--warmup',
        '2',
        '--pin-cpu',
        '--compile-cache',
        verifierCache,
        '--out',
        out,
        '--',
        ...TARGET,
      ]); // prettier-ignore
      return { seconds, cpu, out, doc: JSON.parse(readFileSync(out, 'utf8')) };
    };
    const session = (a: string, b: string, n: number): Session => {
      const { seconds, out, doc } = verify(
        [
          ['A', programs[a]!],
          ['B', programs[b]!],
        ],
        n,
      );
      // Every session document, samples and all, for a closer look afterwards.
      const kept = join(ROOT, 'bench-out', 'verdict-sessions');
      mkdirSync(kept, { recursive: true });
      cpSync(out, join(kept, `${String(loads.length + 1).padStart(2, '0')}-${a}-${b}.json`));
      loads.push(loadavg()[0]!);
      return sessionOf(doc, seconds);
    };
    /**
     * The shared screening session's cost (issue 36): sessions of the champion and 1 to 4 candidates at
     * 1 and R rounds, fitted to seconds = fixed + perArm·arms + perArmRound·arms·rounds, and the overhead
     * per arm in arm-rounds the search simulation takes for k + 1 arms.
     */
    const sharedSessionCost = (): string[] => {
      const programsB2 = join(work, 'programs-B2');
      const exportB2 = exportPrograms(
        tree(join(work, 'B2'), ['0001-blocked-inverse.patch', '0001.3-wrapper-layout-helpers.patch']),
        programsB2,
      );
      // The candidates C1…C4 as the loop names them. The fifth arm is B's programs again: the verifier
      // leaves out only arms whose programs are the first arm's, so it loads, verifies and times it.
      const candidates = [programs.B!, programs.A2!, programsB2, programs.B!];
      const armsOf = (count: number): Array<[string, string]> => [
        ['A', programs.A!],
        ...candidates.slice(0, count - 1).map((dir, i): [string, string] => [`C${i + 1}`, dir]),
      ];
      const overheadLoads: number[] = [];
      /** A session's wall seconds and its CPU seconds (the verifier pinned to one core). */
      interface Timed {
        arms: number;
        rounds: number;
        wall: number;
        cpu: number;
      }
      const timed = (arms: number, rounds: number): Timed => {
        const { seconds, cpu, doc } = verify(armsOf(arms), rounds);
        const first = (doc.rounds as Array<Record<string, unknown>> | undefined)?.[0];
        const untimed = armsOf(arms).filter(([name]) => first?.[name] === undefined);
        if (untimed.length > 0) {
          const failures = Object.entries(doc.arms as Record<string, { failure: unknown }>).map(
            ([name, arm]) => `${name}: ${arm.failure ?? 'none'}`,
          );
          throw new Error(
            `bench:verdict: the ${arms}-arm session did not time ${untimed.map(([n]) => n).join(', ')} (same_as_first ${JSON.stringify(doc.same_as_first)}; failures ${failures.join('; ')})`,
          );
        }
        overheadLoads.push(loadavg()[0]!);
        process.stderr.write(
          `  ${arms} arms, ${rounds} round(s): ${f(seconds, 2)} s wall, ${f(cpu, 2)} s CPU, load ${f(loadavg()[0]!)}\n`,
        );
        return { arms, rounds, wall: seconds, cpu };
      };
      timed(Math.max(...OVERHEAD_ARMS), 1); // every program in the verifier's compile cache
      const longRounds = Number(args['overhead-rounds']);
      const grid = OVERHEAD_ARMS.flatMap((arms) => [1, longRounds].map((rounds) => ({ arms, rounds })));
      const sessions: Timed[] = [];
      for (let repeat = 0; repeat < Number(args['overhead-repeats']); repeat++) {
        // Every other pass in reverse, so a drift in the machine's load does not line up with the arms.
        for (const { arms, rounds } of repeat % 2 === 0 ? grid : [...grid].reverse()) {
          sessions.push(timed(arms, rounds));
        }
      }
      const on = (clock: 'wall' | 'cpu'): SessionCost[] =>
        sessions.map((s) => ({ arms: s.arms, rounds: s.rounds, seconds: s[clock] }));
      const fits = { cpu: fitSessionCost(on('cpu')), wall: fitSessionCost(on('wall')) };
      const signed = (x: number) => `${x >= 0 ? '+' : ''}${f(x, 2)}`;
      const rms = (xs: number[]) => Math.sqrt(xs.reduce((sum, r) => sum + r * r, 0) / xs.length);
      const fitLine = (label: string, fit: SessionCostFit & { residuals: number[] }) =>
        `${label}: seconds = ${f(fit.fixedSeconds, 2)} + ${f(fit.perArmSeconds, 2)}·arms + ${f(fit.perArmRoundSeconds, 3)}·arms·rounds (RMS residual ${f(rms(fit.residuals), 2)} s)`;
      mkdirSync(join(ROOT, 'bench-out'), { recursive: true });
      writeFileSync(
        join(ROOT, 'bench-out', 'verdict-overhead.json'),
        JSON.stringify(
          { load: Number(args.load), beside: args.beside ?? null, loads: overheadLoads, sessions, fits },
          null,
          1,
        ),
      );
      return [
        '',
        `## The shared screening session's cost: A and 1–${Math.max(...OVERHEAD_ARMS) - 1} candidates in one verifier session`,
        `1-minute load average at the sessions' ends ${f(median(overheadLoads))} (median), ${f(Math.min(...overheadLoads))}–${f(Math.max(...overheadLoads))} on ${availableParallelism()} cores; B′ (0001 + 0001.3) exported in ${f(exportB2)} s`,
        '',
        '| arms | rounds | CPU s | residual | wall s | residual |',
        '| ---: | ---: | ---: | ---: | ---: | ---: |',
        ...sessions.map(
          (s, i) =>
            `| ${s.arms} | ${s.rounds} | ${f(s.cpu, 2)} | ${signed(fits.cpu.residuals[i]!)} | ${f(s.wall, 2)} | ${signed(fits.wall.residuals[i]!)} |`,
        ),
        '',
        `Least squares over ${sessions.length} sessions. The verifier is pinned to one core, so its CPU time is the session's length on a quiet machine; the wall's, beside it, stretches with the load.`,
        fitLine('CPU time (the overhead below)', fits.cpu),
        fitLine('wall', fits.wall),
        '',
        '| k candidates (arms) | overhead per arm = (fixed/arms + perArm) / perArmRound: CPU time | wall |',
        '| --- | ---: | ---: |',
        ...[1, 2, 3, 4, 8].map(
          (k) =>
            `| ${k} (${k + 1}) | ${f(overheadArmRounds(fits.cpu, k + 1), 2)} arm-rounds | ${f(overheadArmRounds(fits.wall, k + 1), 2)} |`,
        ),
        ...gainLines(fits.cpu),
      ];
    };
    const output: string[] = [];
    if (!overheadOnly) {
      session('A', 'B', 1); // warm the verifier's compile cache
      session('A', 'A2', 1);
      const ab = Array.from({ length: Number(args.sessions) }, () => session('A', 'B', N));
      const aa = Array.from({ length: Number(args.aa) }, () => session('A', 'A2', N));

      // --- the numbers ---------------------------------------------------------------------------------
      const sessionSeconds = median([...ab, ...aa].map((s) => s.seconds));
      // Time of one round beyond the session's start: from a session of N rounds and one of 1 round.
      const oneRound = session('A', 'B', 1).seconds;
      const perRound = Math.max(0, (sessionSeconds - oneRound) / (N - 1));
      /** The before/after table: the fresh-process mode against one verifier session. */
      const beforeRows = (): string[] => {
        const secondsPerRun = median(old.seconds);
        // Per-run noise of the old design: each arm's runs (pooled, outliers dropped).
        const oldCv = robustNoiseCv([old.A, old.B, old.A2]);
        const newCv = median(
          [...ab, ...aa].map((s) => pairedNoiseCv(s.readings.decisive.A, s.readings.decisive.B)),
        );
        const mdeOld = (n: number) => minimumDetectableEffect(oldCv, n, n);
        const mdeNew = (n: number) => minimumDetectableEffect(newCv, n, n, { paired: true });
        const target = mdeOld(N);
        let nNew = 3;
        while (mdeNew(nNew) > target && nNew < 200) nNew += 1;
        const secondsOld = 2 * N * secondsPerRun;
        const secondsNew = oneRound + (nNew - 1) * perRound;
        const speedupOld = (xs: { A: number[]; B: number[] }) => median(xs.A) / median(xs.B);
        const oldAccepts = (b: number[], a: number[]) =>
          compareArms(a, b, { direction: 'lower', seed: 1 }).verdict === 'improved';
        // Old-mode A/A′ verdicts: consecutive windows of N runs per arm.
        let oldAA = 0;
        let oldAAn = 0;
        for (let i = 0; i + N <= rounds; i += N) {
          oldAAn += 1;
          if (oldAccepts(old.A2.slice(i, i + N), old.A.slice(i, i + N))) oldAA += 1;
        }
        const newAA = aa.filter(
          (s) =>
            compareArms(s.readings.decisive.A, s.readings.decisive.B, {
              direction: 'lower',
              seed: 1,
              paired: true,
            }).verdict === 'improved',
        ).length;
        return [
          '',
          '| | before: fresh process per run | after: one verifier session |',
          '| --- | ---: | ---: |',
          `| cost | ${f(secondsPerRun)} s a run | ${f(oneRound)} s a session of 1 round, +${f(perRound, 2)} s a round |`,
          `| seconds per verdict at n = ${N} | ${f(secondsOld)} s (${2 * N} processes) | ${f(sessionSeconds)} s (1 process) |`,
          `| noise (per-run CV; after: paired, per-round ratio / √2) | ${pct(oldCv)} | ${pct(newCv)} |`,
          `| MDE at n = ${N} (80% power) | ${pct(mdeOld(N))} | ${pct(mdeNew(N))} |`,
          `| n for the before-MDE ${pct(target)} | ${N} | ${nNew} |`,
          `| seconds per verdict at equal power | ${f(secondsOld)} s | ${f(secondsNew)} s (**${f(secondsOld / secondsNew)}× fewer**) |`,
          `| 0001 speed-up, median of A / median of B | ${f(speedupOld(old), 3)} | ${f(median(ab.map((s) => speedupOld(s.readings.decisive))), 3)} |`,
          `| A vs A′ (0003, no true change) accepted as improved | ${oldAA} of ${oldAAn} | ${newAA} of ${aa.length} |`,
        ];
      };

      const lines = [
        `gdn tiny kernel + tiny model, CPU (Pallas interpret mode), metric ${METRIC}.median_ms, n = ${N} per arm`,
        `load beside: ${Number(args.load)} busy process(es)${args.beside ? `, \`${args.beside}\` over and over` : ''}; 1-minute load average at the sessions' ends ${f(median(loads))} (median), ${f(Math.max(...loads))} (max) on ${availableParallelism()} cores`,
      ];
      if (before) {
        lines.push(...beforeRows());
      } else {
        lines.push(`cost: ${f(oneRound)} s a session of 1 round, +${f(perRound, 2)} s a round`);
      }
      lines.push(
        '',
        `| clock of the verifier session, per-round statistic | paired CV | MDE at n = ${N} | 0001 speed-up (sessions) | A/B improved at the first look | A/A′ accepted |`,
        '| --- | ---: | ---: | ---: | ---: | ---: |',
        ...clockRows(ab, aa, ab[0]?.clock ?? 'decisive').map((r) => `| ${r.join(' | ')} |`),
        '',
        `exports (once per candidate, shared with its gate; the champion's once per run): ${Object.entries(
          exportSeconds,
        )
          .map(([k, s]) => `${k} ${f(s)} s`)
          .join(', ')}`,
      );
      output.push(...lines);
      mkdirSync(join(ROOT, 'bench-out'), { recursive: true });
      writeFileSync(
        join(ROOT, 'bench-out', 'verdict.json'),
        JSON.stringify(
          { load: Number(args.load), beside: args.beside ?? null, loads, old, ab, aa, exportSeconds },
          null,
          1,
        ),
      );
    }
    if (Number(args['overhead-repeats']) > 0) {
      if (overheadOnly)
        output.push(`gdn tiny kernel + tiny model, CPU (Pallas interpret mode), verifier sessions only`);
      output.push(...sharedSessionCost());
    }
    stopLoad();
    console.log(output.join('\n'));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (args['sessions-from'] === undefined) main();
else console.log(readingsOfKept(args['sessions-from']).join('\n'));
