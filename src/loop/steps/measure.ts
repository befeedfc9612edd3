/**
 * measure: champion (A) and candidate (B) timed by the verifier (./programs.ts): a process that never
 * imports either's code loads both arms' exported programs, verifies every one on fresh inputs, then
 * times them call by call (A B B A …) in rounds; each round gives one run per arm, and the comparison
 * is paired by round (noise both arms share in a round cancels). Byte-identical programs end as
 * `no-op`. Rounds are added while the confidence interval could still clear the accept bar
 * (sequential stopping, rule fixed in the harness), in at most two verifier sessions.
 *
 * The candidate's programs are the ones its gate verified (the same files, checked by hash). The
 * champion is timed by the programs it won with (kept when it was promoted, in the state and the
 * store); only a champion that never won (the run's first) or whose programs are not to be found is
 * exported again — arm-blind, asked exactly what its candidate was asked — and where the history says
 * which programs it won with under the same JAX, the export must give those bytes. A candidate that
 * fails verification makes the iteration `invalid`; a champion that does is an infrastructure failure,
 * retried by the runner.
 */
import { cpSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { sampleMachine } from '../../compute/index.js';
import {
  atPooledPeak,
  busiest,
  comparabilityProblems,
  type MeasuredRun,
  type MeasurementEvidence,
  type MetricsFile,
  machineLoadBetween,
  metricValue,
  type PeakInfo,
  peakInfo,
  pooledPeak,
  readMetricsFile,
  runLevels,
  type SessionArm,
  summarizeLevels,
  timedWallMs,
  wallMetricPath,
} from '../../evidence/index.js';
import {
  type CompareOptions,
  createRng,
  decideNext,
  median,
  SEQUENTIAL_STEP,
  type SequentialPolicy,
} from '../../stats/index.js';
import { errorMessage, writeJsonAtomic } from '../../util/index.js';
import { type Bundle, BundleFiles } from '../state/bundle.js';
import { championPrograms } from './champion-programs.js';
import { InfraFailure } from './failures.js';
import {
  type ArmName,
  bundlePrograms,
  crashProbe,
  exportPrograms,
  iterationDraw,
  type Platform,
  ProgramFiles,
  requestPlan,
  runVerifier,
  timedCalls,
  VerifierCrashed,
  VerifierFailed,
  type VerifierRun,
} from './programs.js';
import type { Step, StepEnv, StepResult } from './step.js';

export function metricUnit(path: string): string {
  if (path.endsWith('_ms')) return 'ms';
  if (path.endsWith('mfu')) return 'MFU';
  if (path.endsWith('tflops_per_s')) return 'TFLOP/s';
  if (path.endsWith('tokens_per_s')) return 'tok/s';
  return '';
}

export const measureStep: Step = {
  name: 'measure',
  evaluation: true,
  run: measure,
};

async function measure(env: StepEnv): Promise<StepResult> {
  const { ctx, ev, bundle } = env;
  const metricConfig = ctx.target.bench.metric;
  const seed = ctx.config.measure.seed + ev.iteration;
  // A resumed measurement keeps the rounds of the sessions that finished (verified, paired data) and
  // replays its looks over them.
  ev.measurement ??= {
    metric: {
      path: metricConfig.path,
      direction: metricConfig.direction,
      label: metricConfig.label ?? metricConfig.path,
      unit: metricUnit(metricConfig.path),
    },
    runs: [],
    firstArm: createRng(seed).uniform() < 0.5 ? 'A' : 'B',
    mfu: { a: null, b: null },
    noise: { cv: null, champion_runs: 0 },
    looks: [],
    sessions: [],
  };
  const m = ev.measurement;
  m.looks = [];
  m.sessions ??= [];
  const platform = ctx.backend.info().platform;
  const programs = await armPrograms(env, platform);
  if ('verdict' in programs) return programs.verdict;

  // Each round times both arms call by call in one process: the comparison is paired by round, and
  // its noise is the per-round ratio's, measured here. (An A/A pool of the champion's runs measures
  // per-arm noise, which pairing cancels in part, so it does not set the bar.)
  m.noise = { cv: null, champion_runs: 0 };
  const opts: CompareOptions = {
    direction: metricConfig.direction,
    seed,
    confidence: ctx.config.measure.confidence,
    resamples: ctx.config.measure.resamples,
    practicalDelta: ctx.config.measure.practical_delta,
    regressionDelta: ctx.config.measure.regression_delta,
    implausibleSpeedup: ctx.config.measure.implausible_speedup,
    paired: true,
  };
  const policy: SequentialPolicy = {
    nStart: ctx.config.measure.runs_per_arm,
    nMax: ctx.config.measure.max_runs_per_arm,
    step: SEQUENTIAL_STEP,
  };

  // At most two sessions: nStart rounds, then, if the first look asks for more, every round up to nMax
  // at once (a session costs a process start and a verification of both arms; a round costs only its
  // timed calls). The looks then follow the sequential rule over the rounds in order, exactly as if
  // each had been a session of its own; rounds after the look that stops are kept aside, unused.
  const values = (arm: ArmName, n = Number.POSITIVE_INFINITY) =>
    m.runs.filter((r) => r.arm === arm && r.value !== null && r.index <= n).map((r) => r.value as number);
  let measured = Math.min(values('A').length, values('B').length);
  for (let n = 0; ; ) {
    const decision = decideNext(values('A', n), values('B', n), opts, policy);
    if (decision.action === 'stop') {
      m.looks.push({ n, action: 'stop', reason: decision.reason });
      m.comparison = decision.comparison ?? undefined;
      setAside(m, n);
      break;
    }
    if (n > 0) m.looks.push({ n, action: 'more', reason: decision.reason });
    const next = n + Math.max(decision.addRuns.a, decision.addRuns.b);
    if (next > measured) {
      const rounds = (n === 0 ? next : policy.nMax) - measured;
      const ended = await session(env, platform, programs, rounds);
      if (ended) return ended;
      measured += rounds;
    }
    n = next;
  }

  // Against the comparison's one peak (levels.ts pooledPeak), as the levels' MFUs are.
  const pooled = pooledPeak(m.runs);
  const mfus = (arm: ArmName) =>
    m.runs
      .filter((r) => r.arm === arm)
      .map((r) => (r.mfu === null ? null : atPooledPeak(r.mfu, r.levels?.peakFlopsPerS, pooled)));
  const medianOrNull = (xs: Array<number | null>) =>
    xs.length > 0 && xs.every((x) => x !== null) ? median(xs as number[]) : null;
  m.mfu = { a: medianOrNull(mfus('A')), b: medianOrNull(mfus('B')) };
  const lastB = [...m.runs].reverse().find((r) => r.arm === 'B' && r.value !== null);
  if (lastB) {
    const metrics = await readMetricsFile(bundle.path(lastB.metricsFile));
    m.device = {
      backend: metrics.device.backend,
      kind: metrics.device.kind,
      count: metrics.device.count,
      interpret: metrics.device.interpret,
    };
    m.clock = clockOf(m, metrics);
    const machine = busiest((m.sessions ?? []).flatMap((x) => (x.machine ? [x.machine] : [])));
    if (machine) m.machine = machine;
    m.versions = { ...metrics.versions };
    m.preset = metrics.preset;
    m.impl = metrics.impl;
    m.levels = summarizeLevels(
      m.runs,
      { ...levelInfo(metrics), verdict: { path: m.metric.path, comparison: m.comparison } },
      {
        confidence: ctx.config.measure.confidence,
        resamples: ctx.config.measure.resamples,
        seed,
      },
    );
  }
  const c = m.comparison;
  const sessions = m.sessions?.length ?? 0;
  return {
    status: 'done',
    note: c ? `${c.verdict} after ${m.runs.length} runs in ${sessions} verifier session(s)` : undefined,
  };
}

/** Rounds measured after the look that stopped: kept as evidence, never part of the comparison. */
function setAside(m: NonNullable<StepEnv['ev']['measurement']>, n: number): void {
  const later = m.runs.filter((r) => r.index > n);
  if (later.length === 0) return;
  m.runs = m.runs.filter((r) => r.index <= n);
  m.discarded = [
    ...(m.discarded ?? []),
    ...later.map((r) => ({ ...r, problem: `measured after the look at n = ${n} that stopped` })),
  ];
}

/** A run's name as its files are named: A-01, B-12. */
export function runName(arm: ArmName, index: number): string {
  return `${arm}-${String(index).padStart(2, '0')}`;
}

export interface ArmPrograms {
  A: string;
  B: string;
  /** The hashes the candidate's gate verified on this platform, when it ran there. */
  verifiedByGate?: Record<string, string>;
}

/**
 * Both arms' programs for `platform`: the candidate's as its gate exported and verified them (exported
 * now where no gate ran on this platform), the champion's as it won with them (championPrograms).
 */
export async function armPrograms(
  env: StepEnv,
  platform: Platform,
): Promise<ArmPrograms | { verdict: StepResult }> {
  const { ctx, ev, bundle } = env;
  const candidate = ev.candidate!;
  const gate = platform === 'cpu' ? ev.gates.cpu : ev.gates.accelerator;
  const gated = gate?.verifier?.passed === true && gate.verifier.platform === platform;
  const plan = await requestPlan(ctx, ev, { backend: ctx.backend, harness: ev.base.commit, platform });
  const B = bundlePrograms(bundle, 'B', platform);
  if (!gated || !existsSync(join(B, 'manifest.json'))) {
    const exported = await exportPrograms(ctx, ev, {
      backend: ctx.backend,
      commit: candidate.commit,
      plan,
      dest: B,
      logFile: bundle.path(ProgramFiles.exportLog('B', platform)),
      record: { dir: ProgramFiles.dir('B', platform), logFile: ProgramFiles.exportLog('B', platform) },
      name: `B-${platform}`,
      step: 'measure',
    });
    if (exported.status === 'failed') {
      return {
        verdict: {
          status: 'verdict',
          verdict: 'invalid',
          reasons: [`the candidate's programs could not be exported: ${exported.reason}`],
        },
      };
    }
  }
  const A = await championPrograms(ctx, ev, ev.base.commit, plan);
  const inBundle = bundlePrograms(bundle, 'A', platform);
  rmSync(inBundle, { recursive: true, force: true });
  cpSync(A.dir, inBundle, { recursive: true });
  ev.championPrograms = { ...ev.championPrograms, [platform]: A.source };
  return { A: inBundle, B, ...(gated ? { verifiedByGate: gate.verifier!.programs } : {}) };
}

/**
 * What a session found of one candidate's programs, whether it had the session alone or shared it
 * (./screen.ts): `invalid` when they failed verification or are not the ones its gate verified, `no-op`
 * when they are the champion's bytes; undefined when they may be timed.
 */
export function candidateVerdict(
  arm: SessionArm,
  sameAsChampion: boolean,
  programs: Pick<ArmPrograms, 'verifiedByGate'>,
  what: 'measured' | 'screened',
): StepResult | undefined {
  const ended = (verdict: 'invalid' | 'no-op', reason: string): StepResult => ({
    status: 'verdict',
    verdict,
    reasons: [reason],
  });
  if (arm.failure) return ended('invalid', `the candidate's programs failed verification: ${arm.failure}`);
  if (sameAsChampion) {
    const n = Object.keys(arm.programs).length;
    return ended(
      'no-op',
      `the candidate's programs are identical to the champion's (${n} timed program(s), same sha256)`,
    );
  }
  const gate = programs.verifiedByGate;
  const forged = Object.entries(arm.programs).filter(
    ([key, hash]) => gate?.[key] !== undefined && gate[key] !== hash,
  );
  if (forged.length > 0) {
    return ended(
      'invalid',
      `the programs ${what} are not the ones the gate verified: ${forged.map(([k]) => k).join(', ')}`,
    );
  }
  return undefined;
}

/**
 * One paired verifier session of champion (A) and candidate (B), `rounds` rounds, checked: the session
 * document when every check holds, else the verdict it ends the candidate with (`invalid`, `no-op`); a
 * champion that fails verification, or a session without an arm or with the wrong number of rounds,
 * throws. `what` names the purpose in reasons ("measured", "screened"); `ran` sees the run before any
 * check (measure records its session there, whatever the checks find). Shared by measure and the
 * screen (./screen.ts), so both hold a candidate to the same checks.
 */
export async function pairedSession(
  env: StepEnv,
  platform: Platform,
  programs: ArmPrograms,
  o: { name: string; rounds: number; what: 'measured' | 'screened'; ran?: (run: VerifierRun) => void },
): Promise<{ run: VerifierRun } | { verdict: StepResult }> {
  const { ctx, ev, bundle } = env;
  const { name, rounds } = o;
  const invalid = (reason: string) => ({
    verdict: { status: 'verdict', verdict: 'invalid', reasons: [reason] } satisfies StepResult,
  });
  const session = (arms: { A: string; B: string }, suffix = '') =>
    runVerifier(ctx, ev, {
      mode: 'measure',
      platform,
      draw: iterationDraw(ev),
      arms: ['A', 'B'],
      rounds,
      ...timedCalls(ctx),
      backend: ctx.backend,
      harness: ev.base.commit,
      programs: arms,
      sessionFile: bundle.path(ProgramFiles.session(`${name}${suffix}`)),
      logFile: bundle.path(ProgramFiles.verifyLog(`${name}${suffix}`)),
      name: `${name}${suffix}`,
      step: 'measure',
    });
  const purpose = o.what === 'measured' ? 'measurement' : 'screen';
  let run: VerifierRun;
  try {
    run = await session({ A: programs.A, B: programs.B });
  } catch (e) {
    if (e instanceof VerifierFailed) return invalid(`${purpose}: ${e.message}`);
    if (e instanceof VerifierCrashed) {
      const why = await crashProbe(e, {
        again: () => session({ A: programs.A, B: programs.B }, '-again'),
        // The champion's programs as both arms, through the same session: verified, then identical.
        champion: () => session({ A: programs.A, B: programs.A }, '-probe'),
      });
      return invalid(`${purpose}: ${why}`);
    }
    throw e;
  }
  o.ran?.(run);
  const s = run.session;
  const a = s.arms.A;
  const b = s.arms.B;
  if (!a || !b) throw new InfraFailure(`${ProgramFiles.session(name)}: the session lacks an arm`);
  if (b.failure) return { verdict: candidateVerdict(b, false, programs, o.what)! };
  if (a.failure) {
    throw new InfraFailure(`the champion's programs failed verification: ${a.failure}`, {
      hint: `see the session log in the bundle (${ProgramFiles.verifyLog(name)})`,
    });
  }
  const ended = candidateVerdict(b, s.identical, programs, o.what);
  if (ended) return { verdict: ended };
  if (s.rounds.length !== rounds) {
    throw new InfraFailure(`${ProgramFiles.session(name)}: ${s.rounds.length} rounds, asked for ${rounds}`);
  }
  return { run };
}

/**
 * One verifier session of `rounds` rounds: its runs join the measurement, or it ends the iteration
 * (`no-op`, `invalid`; a champion failure throws).
 */
async function session(
  env: StepEnv,
  platform: Platform,
  programs: ArmPrograms,
  rounds: number,
): Promise<StepResult | undefined> {
  const { ctx, ev, bundle } = env;
  const m = ev.measurement!;
  const index = (m.sessions?.length ?? 0) + 1;
  const name = `measure-${String(index).padStart(2, '0')}`;
  ctx.progress(`measure: verifier session ${index}, ${rounds} round(s) of both arms`);
  // A session on this machine shares its cores: how busy they were goes beside the verdict.
  const before = ctx.backend.name === 'local' ? sampleMachine() : undefined;
  const checked = await pairedSession(env, platform, programs, {
    name,
    rounds,
    what: 'measured',
    ran: (run) => {
      m.sessions!.push({
        index,
        rounds,
        durationMs: run.durationMs,
        file: ProgramFiles.session(name),
        logFile: ProgramFiles.verifyLog(name),
        ...(before ? { machine: machineLoadBetween(before, sampleMachine()) } : {}),
      });
      env.save();
      const { A: a, B: b } = run.session.arms;
      if (a && b) m.programs = { platform, A: a.programs, B: b.programs };
    },
  });
  if ('verdict' in checked) return checked.verdict;
  const { run } = checked;
  const s = run.session;
  const invalid = (reason: string): StepResult => ({
    status: 'verdict',
    verdict: 'invalid',
    reasons: [reason],
  });
  for (const round of s.rounds) {
    const order: ArmName[] = round.first === 'B' ? ['B', 'A'] : ['A', 'B'];
    for (const arm of order) {
      const problem = addRun(env, arm, round.metrics[arm]!, {
        index,
        logFile: ProgramFiles.verifyLog(name),
      });
      if (problem) return invalid(problem);
    }
  }
  env.save();
  const mismatch = await comparability(bundle, m.runs);
  if (mismatch.length > 0) return invalid(`runs are not comparable: ${mismatch.join('; ')}`);
  return undefined;
}

/** Record one round of one arm as a run; returns why it cannot count, if so. */
function addRun(
  env: StepEnv,
  arm: ArmName,
  metrics: MetricsFile,
  from: { index: number; logFile: string },
): string | undefined {
  const { ctx, bundle, ev } = env;
  const m = ev.measurement!;
  const runIndex = m.runs.filter((r) => r.arm === arm).length + 1;
  const metricsFile = BundleFiles.runMetrics(arm, runIndex);
  writeJsonAtomic(bundle.path(metricsFile), metrics);
  const run: MeasuredRun = {
    arm,
    index: runIndex,
    value: null,
    mfu: null,
    exitCode: 0,
    durationMs: timedWallMs(metrics),
    metricsFile,
    logFile: from.logFile,
    session: from.index,
  };
  m.runs.push(run);
  try {
    run.value = metricValue(metrics, ctx.target.bench.metric.path, metricsFile);
  } catch (e) {
    run.problem = errorMessage(e);
    return `${runName(arm, runIndex)}: ${run.problem}`;
  }
  if (!(run.value > 0)) {
    run.problem = `metric ${ctx.target.bench.metric.path} is ${run.value}, not positive`;
    run.value = null;
    return `${runName(arm, runIndex)}: ${run.problem}`;
  }
  run.mfu = optionalMetric(metrics, ctx.target.bench.mfu_path, metricsFile);
  const wallPath = wallMetricPath(ctx.target.bench.metric.path);
  const wall = wallPath === undefined ? null : optionalMetric(metrics, wallPath, metricsFile);
  if (wall !== null && wall > 0) run.wall = wall;
  run.levels = runLevels(metrics);
  return undefined;
}

/**
 * The clock that timed the verdict's metric, and what the wall clock kept beside it says of the same
 * rounds: the ratio of the arms' medians the comparison's own ratio is (A / B for a lower-is-better
 * time), for the reader to see both clocks agree.
 */
function clockOf(m: MeasurementEvidence, metrics: MetricsFile): MeasurementEvidence['clock'] {
  const name = metrics.timing.clock;
  const wallName = metrics.timing.wall_clock;
  if (!wallName) return { name };
  const walls = (arm: ArmName) =>
    m.runs.filter((r) => r.arm === arm && r.value !== null && r.wall !== undefined).map((r) => r.wall!);
  const a = walls('A');
  const b = walls('B');
  const ratio =
    a.length === 0 || b.length === 0
      ? null
      : m.metric.direction === 'lower'
        ? median(a) / median(b)
        : median(b) / median(a);
  return { name, wall: { name: wallName, ratio } };
}

/** What the candidate's metrics say about both levels: the peak, and the model its runs trained. */
function levelInfo(metrics: MetricsFile): {
  peak?: PeakInfo;
  model?: { preset: string; gdnLayers: number; layerMatchesKernel: boolean };
} {
  const peak = peakInfo(metrics);
  const model = metrics.model;
  const s = metrics.shapes;
  const layer = model?.gdn_layer_shape;
  return {
    ...(peak ? { peak } : {}),
    ...(model && layer
      ? {
          model: {
            preset: model.preset,
            gdnLayers: model.gdn_layers,
            // The estimate of the kernels' share needs the kernel timed at the shape the model calls it.
            layerMatchesKernel:
              layer.B === s.B && layer.T === s.T && layer.H === s.H && layer.K === s.K && layer.V === s.V,
          },
        }
      : {}),
  };
}

function optionalMetric(metrics: MetricsFile, path: string, file: string): number | null {
  try {
    return metricValue(metrics, path, file);
  } catch {
    return null;
  }
}

/** Every run must measure the same problem on the same kind of device as the first champion run. */
async function comparability(bundle: Bundle, runs: readonly MeasuredRun[]): Promise<string[]> {
  const firstA = runs.find((r) => r.arm === 'A' && r.value !== null);
  if (!firstA) return [];
  const a = await readMetricsFile(bundle.path(firstA.metricsFile));
  for (const run of runs) {
    if (run === firstA || run.value === null) continue;
    const problems = comparabilityProblems(a, await readMetricsFile(bundle.path(run.metricsFile)));
    if (problems.length > 0) return problems.map((p) => `${runName(run.arm, run.index)}: ${p}`);
  }
  return [];
}
