// Evidence fixtures for the report tests: one complete IterationEvidence per verdict, on CPU or TPU,
// with or without a profile, and history rows for trajectories. Numbers are fixed (no bootstrap) so
// tests can assert exact lines.

import { HISTORY_SCHEMA, type HistoryRow } from '../../src/evidence/history-row.js';
import { summarizeLevels } from '../../src/evidence/levels.js';
import {
  EVIDENCE_SCHEMA,
  type GateEvidence,
  type IterationEvidence,
  type MeasuredRun,
  type MeasurementEvidence,
  type ProfileEvidence,
} from '../../src/evidence/record.js';
import type { Verdict } from '../../src/evidence/verdicts.js';
import type { Comparison, StatsVerdict } from '../../src/stats/index.js';
import { type DiffRow, TRACE_DIFF_SCHEMA, type TraceDiff } from '../../src/trace/types.js';

export const BASE_SHA = '9f8e7d6c5b4a39281706f5e4d3c2b1a098765432';
export const CANDIDATE_SHA = '1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d';
export const RUN_ID = '20261121-2340-ab12';
export const METRIC = {
  path: 'measurements.fwd_bwd.median_ms',
  direction: 'lower' as const,
  label: 'fwd+bwd time',
  unit: 'ms',
};

export interface ComparisonSpec {
  verdict: StatsVerdict;
  a: number;
  b: number;
  /** Interval of the improvement ratio (A/B for time). */
  ci: { lo: number; hi: number };
  n?: number;
}

/**
 * A comparison with fixed numbers, shaped like stats/compare-arms.ts compareArms output for paired
 * rounds (every verdict the loop reaches).
 */
export function comparison(spec: ComparisonSpec): Comparison {
  const n = spec.n ?? 5;
  const ratio = spec.a / spec.b;
  return {
    verdict: spec.verdict,
    reasons: [
      spec.verdict === 'improved'
        ? `lower CI bound ${spec.ci.lo.toFixed(4)} > accept bar 1.0100`
        : `CI [${spec.ci.lo.toFixed(4)}, ${spec.ci.hi.toFixed(4)}] decided ${spec.verdict}`,
      `speedup (geometric mean of the rounds' A / B) ${ratio.toFixed(4)} [${spec.ci.lo.toFixed(4)}, ${spec.ci.hi.toFixed(4)}] (95% t interval of the rounds' log ratios, paired by round, n = ${n}/${n})`,
    ],
    direction: 'lower',
    a: { n, median: spec.a, cv: 0.012 },
    b: { n, median: spec.b, cv: 0.009 },
    ratio,
    ci: { ...spec.ci },
    deltaPct: (ratio - 1) * 100,
    deltaCiPct: { lo: (spec.ci.lo - 1) * 100, hi: (spec.ci.hi - 1) * 100 },
    mde: 0.0592,
    mdeSource: 'observed',
    noiseCv: 0.021,
    acceptMargin: 0.0066,
    acceptBar: 1.01,
    falseAcceptRate: 0.01,
    power: 0.8,
    practicalDelta: 0.01,
    regressBar: 0.98,
    confidence: 0.95,
    ciMethod: 'paired-t',
    resamples: 0,
    seed: 42,
  };
}

/** Runs around the medians, interleaved A/B starting with A. */
function runs(a: number, b: number, n: number, mfu: { a: number | null; b: number | null }): MeasuredRun[] {
  const spread = [0, -0.011, 0.009, 0.004, -0.003, 0.006, -0.007];
  const out: MeasuredRun[] = [];
  for (let i = 0; i < n; i++) {
    for (const [arm, median, armMfu] of [
      ['A', a, mfu.a],
      ['B', b, mfu.b],
    ] as const) {
      // B takes the same spread in reverse round order: the same medians, rounds that do not move together.
      const at = arm === 'A' ? i : n - 1 - i;
      const v = Number((median * (1 + (spread[at % spread.length] ?? 0))).toFixed(4));
      out.push({
        arm,
        index: i + 1,
        value: v,
        mfu: armMfu,
        exitCode: 0,
        durationMs: 8_000 + i * 10,
        metricsFile: `measure/${arm}-${String(i + 1).padStart(2, '0')}.json`,
        logFile: `measure/${arm}-${String(i + 1).padStart(2, '0')}.log`,
      });
    }
  }
  return out;
}

export type Device = 'cpu' | 'tpu';

export function measurement(spec: ComparisonSpec, device: Device): MeasurementEvidence {
  const n = spec.n ?? 5;
  const mfu = device === 'tpu' ? { a: 0.312, b: 0.3833 } : { a: null, b: null };
  return {
    metric: METRIC,
    runs: runs(spec.a, spec.b, n, mfu),
    firstArm: 'A',
    comparison: comparison(spec),
    mfu,
    noise: { cv: 0.021, champion_runs: n },
    looks: [{ n, action: 'stop', reason: 'CI clear of both bars' }],
    device:
      device === 'tpu'
        ? { backend: 'tpu', kind: 'TPU v5p', count: 4, interpret: false }
        : { backend: 'cpu', kind: 'cpu', count: 1, interpret: true },
    versions: { jaxlib: '0.4.38', jax: '0.4.38', python: '3.11.9' },
    preset: 'tiny',
    impl: 'pallas',
  };
}

function diffRow(
  name: string,
  category: string,
  before: number,
  after: number,
  status?: DiffRow['status'],
): DiffRow {
  const delta = after - before;
  return {
    name,
    program: 'jit_step',
    category,
    before,
    after,
    delta,
    deltaPct: before === 0 ? null : (delta / before) * 100,
    status: status ?? (delta > 0 ? 'increased' : delta < 0 ? 'decreased' : 'unchanged'),
    countBefore: before === 0 ? 0 : 2,
    countAfter: after === 0 ? 0 : 2,
  };
}

const SIDE: TraceDiff['before'] = {
  path: '',
  platform: 'tpu',
  detector: 'device-steps',
  steps: 3,
  devices: 4,
  deviceTypes: ['TPU v5'],
  programs: ['jit_step'],
};

/** A trace diff with `extraOps` more small ops (to grow the table). */
export function traceDiff(extraOps = 0): TraceDiff {
  const custom = [
    { ...diffRow('gdn_chunk_fwd', 'custom-call', 5.21, 3.9), countBefore: 4, countAfter: 2 },
    { ...diffRow('gdn_chunk_bwd', 'custom-call', 2.5, 2.45), countBefore: 2, countAfter: 2 },
  ];
  const ops = [
    custom[0]!,
    diffRow('transpose_fusion', 'data formatting', 0.3, 0, 'removed'),
    diffRow('add_multiply_fusion', 'loop fusion', 1.0, 1.2),
    diffRow('copy_start', 'data formatting', 0, 0.15, 'added'),
    custom[1]!,
  ];
  for (let i = 0; i < extraOps; i++)
    ops.push(diffRow(`fusion_${i}_${'x'.repeat(40)}`, 'loop fusion', 0.01 + i * 1e-5, 0.011 + i * 1e-5));
  return {
    schema: TRACE_DIFF_SCHEMA,
    before: { ...SIDE, path: 'profile/champion-trace' },
    after: { ...SIDE, path: 'profile/candidate-trace' },
    stepTimeMs: { before: 12, after: 10, delta: -2, deltaPct: (-2 / 12) * 100 },
    opTimeMs: { before: 11, after: 9.2, delta: -1.8, deltaPct: (-1.8 / 11) * 100 },
    busyMs: { before: 11.5, after: 9.6, delta: -1.9, deltaPct: (-1.9 / 11.5) * 100 },
    deviceMs: { before: 132, after: 110.4, delta: -21.6, deltaPct: (-21.6 / 132) * 100 },
    ops,
    categories: [],
    customCalls: custom,
    unchangedBelowPct: 0.1,
    warnings: [],
  };
}

export function profile(extraOps = 0): ProfileEvidence {
  return {
    status: 'done',
    candidateTrace: 'profile/candidate-trace',
    championTrace: 'profile/champion-trace',
    championCached: false,
    diff: traceDiff(extraOps),
  };
}

export function passedGate(tests = 128, skipped = 2): GateEvidence {
  return {
    status: 'passed',
    exitCode: 0,
    durationMs: 45_000,
    junit: { tests, passed: tests - skipped, failed: 0, errors: 0, skipped, time: 41.2, failing: [] },
    junitFile: 'gates/cpu.junit.xml',
    logFile: 'gates/cpu.log',
  };
}

/** The common part: an agent that committed one change that passed the cheap gates. */
export function baseEvidence(): IterationEvidence {
  return {
    schema: EVIDENCE_SCHEMA,
    runId: RUN_ID,
    runStartedAt: '2026-11-21T23:40:00.000Z',
    iteration: 3,
    totalIterations: 4,
    target: 'gdn',
    startedAt: '2026-11-21T23:58:12.000Z',
    finishedAt: '2026-11-22T00:31:40.000Z',
    verdictReasons: [],
    base: { commit: BASE_SHA, iteration: 2, branch: 'main' },
    candidate: {
      branch: `hillclimb/gdn/${RUN_ID}/i003`,
      commit: CANDIDATE_SHA,
      commits: [CANDIDATE_SHA],
      subject: 'Tile the chunk loop over K by 128',
      changedPaths: ['kernels/gdn/chunk.py'],
      patchFile: 'candidate/candidate.patch',
    },
    agent: {
      kind: 'codex',
      status: 'finished',
      exitCode: 0,
      durationMs: 252_000,
      attempts: 1,
      result: {
        hypothesis: 'The K loop reloads the state tile; tiling by 128 should cut the 30% spent in copies.',
        summary: 'Tiled the chunk loop over K by 128 and kept the state in VMEM.',
        next_idea: 'Fuse the gate cumsum into the same kernel (maybe 2x fewer launches).',
      },
      logFile: 'agent/attempt-1/agent.log',
      promptFile: 'agent/prompt.md',
    },
    guard: {
      allowed: true,
      changedPaths: ['kernels/gdn/chunk.py'],
      protectedTouched: [],
      outsideEditable: [],
      findings: [],
    },
    gates: {
      cpu: passedGate(),
      accelerator: {
        status: 'skipped',
        reason: 'no accelerator in this backend',
        exitCode: null,
        durationMs: 0,
      },
    },
    provenance: {
      hillclimbVersion: '0.1.0',
      harnessHash: 'c0ffee0123456789abcdef0123456789abcdef01',
      configHash: 'deadbeef0123456789abcdef0123456789abcdef',
      backend: { backend: 'local', description: 'this machine (JAX on CPU)', hasAccelerator: false },
      host: 'runner-1',
    },
    steps: {},
  };
}

export const IMPROVED: ComparisonSpec = {
  verdict: 'improved',
  a: 12.31,
  b: 10.02,
  ci: { lo: 1.2048, hi: 1.2516 },
};

export interface MeasuredOptions {
  device?: Device;
  withProfile?: boolean;
  extraOps?: number;
}

/** A measured iteration (improved, no-change, regressed, needs-human). */
export function measured(spec: ComparisonSpec = IMPROVED, opts: MeasuredOptions = {}): IterationEvidence {
  const device = opts.device ?? 'cpu';
  const ev = baseEvidence();
  ev.verdict = spec.verdict;
  ev.verdictReasons = comparison(spec).reasons;
  ev.stoppedAt = 'decide';
  ev.measurement = measurement(spec, device);
  if (device === 'tpu') {
    ev.gates.accelerator = { ...passedGate(128, 0), junitFile: 'gates/accelerator.junit.xml' };
    ev.provenance.backend = {
      backend: 'tpu-vm',
      description: 'v5p-8 in us-east5-a',
      hasAccelerator: true,
      acceleratorType: 'v5p-8',
    };
  }
  if (opts.withProfile ?? true) ev.profile = profile(opts.extraOps ?? 0);
  else ev.profile = { status: 'skipped', reason: 'profiling is off for this target' };
  return ev;
}

export const NO_CHANGE: ComparisonSpec = {
  verdict: 'no-change',
  a: 12.31,
  b: 12.25,
  ci: { lo: 0.99, hi: 1.02 },
};
export const REGRESSED: ComparisonSpec = {
  verdict: 'regressed',
  a: 12.31,
  b: 13.6,
  ci: { lo: 0.88, hi: 0.93 },
};
export const NEEDS_HUMAN: ComparisonSpec = {
  verdict: 'needs-human',
  a: 12.31,
  b: 0.8,
  ci: { lo: 14.1, hi: 16.2 },
};

export function invalidByGuard(): IterationEvidence {
  const ev = baseEvidence();
  ev.verdict = 'invalid';
  ev.verdictReasons = ['guard: protected path touched: kernels/harness/tolerances.py'];
  ev.stoppedAt = 'guard';
  ev.candidate!.changedPaths = ['kernels/gdn/chunk.py', 'kernels/harness/tolerances.py'];
  ev.guard = {
    allowed: false,
    changedPaths: ['kernels/gdn/chunk.py', 'kernels/harness/tolerances.py'],
    protectedTouched: ['kernels/harness/tolerances.py'],
    outsideEditable: [],
    findings: [],
  };
  ev.gates = {};
  return ev;
}

export const FAILING_TESTS = [
  'kernels/gdn/tests/test_chunk.py::test_matches_reference[B2-T64-H4-K32-V32-bf16]',
  'kernels/gdn/tests/test_chunk.py::test_matches_reference[B1-T63-H2-K60-V60-f32]',
  'kernels/gdn/tests/test_chunk.py::test_grad_matches_reference[B2-T64-H4-K32-V32-f32]',
];

export function invalidByCpuGate(): IterationEvidence {
  const ev = baseEvidence();
  ev.verdict = 'invalid';
  ev.verdictReasons = ['cpu-gate: 3 of 128 tests failed'];
  ev.stoppedAt = 'cpu-gate';
  ev.gates = {
    cpu: {
      status: 'failed',
      reason: '3 of 128 tests failed',
      exitCode: 1,
      durationMs: 47_000,
      junit: {
        tests: 128,
        passed: 123,
        failed: 3,
        errors: 0,
        skipped: 2,
        time: 43.9,
        failing: [...FAILING_TESTS],
      },
      junitFile: 'gates/cpu.junit.xml',
      logFile: 'gates/cpu.log',
    },
  };
  return ev;
}

export function errored(): IterationEvidence {
  const ev = baseEvidence();
  ev.verdict = 'error';
  ev.verdictReasons = ['measure: ray job submission failed: HTTP 503 from the dashboard'];
  ev.stoppedAt = 'measure';
  return ev;
}

export function noOp(): IterationEvidence {
  const ev = baseEvidence();
  ev.verdict = 'no-op';
  ev.verdictReasons = ['the agent made no commit'];
  ev.stoppedAt = 'propose';
  delete ev.candidate;
  delete ev.guard;
  ev.gates = {};
  return ev;
}

/** Every verdict, for tests that should hold whatever the verdict. */
export function everyVerdict(): Array<[string, IterationEvidence]> {
  return [
    ['improved (CPU)', measured(IMPROVED)],
    ['improved (TPU)', measured(IMPROVED, { device: 'tpu' })],
    ['no-change', measured(NO_CHANGE)],
    ['regressed', measured(REGRESSED)],
    ['needs-human', measured(NEEDS_HUMAN, { device: 'tpu' })],
    ['invalid (guard)', invalidByGuard()],
    ['invalid (CPU gate)', invalidByCpuGate()],
    ['error', errored()],
    ['no-op', noOp()],
  ];
}

const VERDICT_CYCLE: Verdict[] = [
  'improved',
  'no-change',
  'regressed',
  'invalid',
  'no-change',
  'error',
  'no-op',
];

/** `n` history rows of one run: the champion improves on each `improved` row. */
/** The rest of the training step besides its 3 GDN layers, ms: their share is 38% at 12.31 ms. */
export const STEP_REST_MS = 60;
const GDN_LAYERS = 3;
/** A training step's time when each of its GDN layers takes `kernelMs`. */
export function stepMs(kernelMs: number): number {
  return STEP_REST_MS + GDN_LAYERS * kernelMs;
}

/**
 * Both levels on a measured iteration: every run gets kernel and model-step numbers derived from its
 * value (the kernel's fwd+bwd time), and `levels` is what levels.ts summarizes from them. CPU runs
 * are against a measured matmul peak; TPU runs against the table's v5p peak.
 */
export function withLevels(ev: IterationEvidence): IterationEvidence {
  const m = ev.measurement!;
  const cpu = m.device?.backend === 'cpu';
  const peak = cpu ? 2.5e11 : 459e12;
  // FLOPs per kernel call and per step that give ~31% kernel MFU and ~6.1% model MFU on the TPU.
  const kernelFlops = (cpu ? 0.0947 : 0.312) * peak * 0.01231;
  const stepFlops = (cpu ? 0.0921 : 0.0609) * peak * (stepMs(12.31) / 1e3);
  const tokens = cpu ? 256 : 8192;
  for (const r of m.runs) {
    if (r.value === null) continue;
    const step = stepMs(r.value);
    r.levels = {
      kernelMs: r.value,
      kernelMfu: kernelFlops / (r.value / 1e3) / peak,
      stepMs: step,
      tokensPerS: tokens / (step / 1e3),
      modelMfu: stepFlops / (step / 1e3) / peak,
      peakFlopsPerS: peak,
    };
    r.mfu = r.levels.kernelMfu;
  }
  m.levels = summarizeLevels(
    m.runs,
    {
      peak: cpu
        ? { source: 'measured', name: 'measured 512^3 float32 matmul', dtype: 'fp32' }
        : { source: 'table', name: 'TPU v5p', dtype: 'bf16' },
      model: { preset: cpu ? 'tiny' : '130m', gdnLayers: GDN_LAYERS, layerMatchesKernel: true },
      verdict: { path: m.metric.path, comparison: m.comparison },
    },
    { confidence: 0.95, resamples: 2000, seed: 42 },
  );
  m.mfu = { a: m.levels.kernel.mfu.a, b: m.levels.kernel.mfu.b };
  return ev;
}

export function historyRows(
  n: number,
  opts: { runId?: string; startChampion?: number; levels?: boolean } = {},
): HistoryRow[] {
  let champion = opts.startChampion ?? 14;
  const rows: HistoryRow[] = [];
  for (let i = 1; i <= n; i++) {
    const verdict = n === 1 ? 'improved' : VERDICT_CYCLE[(i - 1) % VERDICT_CYCLE.length]!;
    const measuredRow = verdict === 'improved' || verdict === 'no-change' || verdict === 'regressed';
    const b =
      verdict === 'improved' ? champion * 0.95 : verdict === 'regressed' ? champion * 1.08 : champion * 1.001;
    rows.push({
      schema: HISTORY_SCHEMA,
      at: `2026-11-21T${String(10 + Math.floor(i / 60)).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}:00.000Z`,
      runId: opts.runId ?? RUN_ID,
      iteration: i,
      target: 'gdn',
      verdict,
      reason: `${verdict} reason`,
      baseCommit: BASE_SHA,
      candidateCommit: verdict === 'no-op' ? null : CANDIDATE_SHA,
      subject: verdict === 'no-op' ? null : `change ${i}`,
      branch: measuredRow ? `hillclimb/gdn/${opts.runId ?? RUN_ID}/i${String(i).padStart(3, '0')}` : null,
      metric: METRIC,
      a: measuredRow ? champion : null,
      b: measuredRow ? Number(b.toFixed(4)) : null,
      nA: measuredRow ? 5 : 0,
      nB: measuredRow ? 5 : 0,
      ratio: measuredRow ? champion / b : null,
      ciLow: measuredRow ? (champion / b) * 0.98 : null,
      ciHigh: measuredRow ? (champion / b) * 1.02 : null,
      mde: measuredRow ? 0.08 : null,
      mfuA: null,
      mfuB: null,
      championAfter: BASE_SHA,
      harnessHash: null,
      configHash: 'deadbeef',
      device: 'cpu',
      backend: 'local',
      versions: {},
      prUrl: null,
      evidenceUrl: null,
    });
    if (opts.levels && measuredRow) {
      const a = champion;
      const bb = Number(b.toFixed(4));
      const mfu = (k: number) => (0.0609 * stepMs(12.31)) / stepMs(k);
      rows.at(-1)!.levels = {
        kernelMs: { a, b: bb },
        kernelMfu: { a: (0.312 * 12.31) / a, b: (0.312 * 12.31) / bb },
        stepMs: { a: stepMs(a), b: stepMs(bb) },
        modelMfu: { a: mfu(a), b: mfu(bb) },
        peak: 'table',
      };
    }
    if (verdict === 'improved') champion = Number(b.toFixed(4));
  }
  return rows;
}
