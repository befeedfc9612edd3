/**
 * xprof as the reference oracle: every real XSpace fixture is converted by Google's xprof (a pinned dev
 * requirement; tests/trace/xprof_reference.py runs its hlo_stats, kernel_stats,
 * overview_page and trace_viewer tools) and hillclimb's summary of the same file must agree with it on
 * step count, per-step time, per-op totals, the top ops, total device time, and FLOPs and bytes per op
 * execution, within the tolerances below. The test prints the comparison as a table.
 *
 * What xprof offers as the reference, per platform:
 * - steps: its overview's step rows where it finds steps (annotated traces); otherwise executions of
 *   the dominant program as its tools record them: TPU `XLA Modules` events per device (trace_viewer),
 *   GPU the most common `#Occurrences` of the program's ops (hlo_stats) per GPU its kernels ran on;
 *   XLA:CPU the program's `run_id`s;
 * - per-op totals: hlo_stats (TPU, GPU); on XLA:CPU, where hlo_stats is empty, the op events of its
 *   trace viewer with nested time subtracted;
 * - total device time: hlo_stats (TPU), kernel_stats plus the memcpy lines of its trace viewer (GPU:
 *   every kernel, also untagged ones, and copies), the XLA:CPU op events (CPU).
 * FLOPs differ by design in one place: xprof's GPU cost analysis weights elementwise ops by a per-opcode
 * cycle table, where hillclimb (XLA's HloCostAnalysis) counts one FLOP per element; dots, convolutions
 * and GEMM fusions must agree exactly. xprof has no FLOPs for rocBLAS/hipBLASLt GEMM custom calls.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { XplaneSource } from '../../src/trace/readers/xplane.js';
import { summarizeTrace } from '../../src/trace/summarize.js';
import type { TraceSummary } from '../../src/trace/types.js';
import { FIXTURES, REAL_TRACES, REPO_ROOT, tempDir } from '../helpers/paths.js';

const PYTHON = join(REPO_ROOT, '.venv', 'bin', 'python');
const SCRIPT = join(REPO_ROOT, 'tests', 'trace', 'xprof_reference.py');

/** Stated tolerances. */
const TOL = {
  /** Relative, for op and device times (xprof prints µs with float noise; ours are integer ps). */
  time: 5e-4,
  /** Relative, for per-step times; XLA:CPU overview step times are rounded by xprof to 0.1 ms. */
  stepTime: 1e-3,
  cpuStepMs: 0.05,
  /** Relative, for FLOPs and bytes per execution. */
  cost: 1e-4,
};

const FIXTURE_FILES: Record<string, string> = {
  'TPU v6e ×4 (xprof)': join(REAL_TRACES, 'xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb'),
  'MI300X GEMM': join(REAL_TRACES, 'TraceLens/tests/traces/mi300/jax08_gemm/tw003.xplane.pb'),
  'MI300X attention': join(REAL_TRACES, 'TraceLens/tests/traces/mi300/jax08_attention/tw003.xplane.pb'),
  'MI300X elementwise': join(REAL_TRACES, 'TraceLens/tests/traces/mi300/jax08_elementwise/tw003.xplane.pb'),
  'MI300X ×8 conv': join(REAL_TRACES, 'TraceLens/tests/traces/mi300/jax_conv_minimal_08/tw003.xplane.pb'),
  'MI300X conv (legacy)': join(
    REAL_TRACES,
    'TraceLens/tests/traces/mi300/jax_conv_minimal_legacy/chi-mi300x-013.ord.vultr.cpe.ice.amd.com.xplane.pb',
  ),
  'gfx950 TE fused attn': join(
    REAL_TRACES,
    'TraceLens/tests/test_data_jax_te_fused_attn_categorization/934987a2fc2f.xplane.pb',
  ),
  'JAX CPU, steps': join(FIXTURES, 'jax-cpu/steps/plugins/profile/run/cpu.xplane.pb'),
  'JAX CPU, no steps': join(FIXTURES, 'jax-cpu/no-steps/plugins/profile/run/cpu.xplane.pb'),
  'JAX CPU, multi-program': join(FIXTURES, 'jax-cpu/multi-program/plugins/profile/run/cpu.xplane.pb'),
  'JAX CPU, pmap over 4 devices': join(FIXTURES, 'jax-cpu-pmap/pmap4/plugins/profile/run/cpu.xplane.pb'),
};

interface HloOp {
  program: string;
  op: string;
  category: string;
  occurrences: number;
  selfUs: number;
  flopsPerOccurrence: number;
  bytesPerOccurrence: number;
}

interface Reference {
  hloOps: HloOp[];
  kernels: { kernel: string; op: string; occurrences: number; totalUs: number }[];
  steps: { count: number; meanMs: number };
  modules: Record<string, { perDevice: Record<string, number>; meanMs: number; slowestMeanMs: number }>;
  launches: Record<string, { count: number; threads: number }>;
  cpuOps: { module: string; op: string; occurrences: number; selfUs: number }[];
  cpuRuns: Record<string, number>;
  gpuModuleDevices: Record<string, number>;
  gpuMemcpyUs: number;
}

/** Why xprof cannot run here, or undefined when it can. */
function xprofUnavailable(): string | undefined {
  if (!existsSync(PYTHON)) return `${PYTHON} not found (run hillclimb setup --dev)`;
  try {
    execFileSync(PYTHON, ['-c', 'import xprof.convert.raw_to_tool_data'], {
      stdio: 'ignore',
      timeout: 60_000,
    });
    return undefined;
  } catch {
    return 'xprof is not importable from the project venv (run hillclimb setup --dev)';
  }
}

const unavailable = xprofUnavailable();
if (unavailable) console.warn(`xprof oracle tests skipped: ${unavailable}`);

const rel = (a: number, b: number) => (a === b ? 0 : Math.abs(a - b) / Math.max(Math.abs(a), Math.abs(b)));
const base = (name: string) => name.replace(/(\.\d+)+$/, '');
const idOf = (program: string) => /\((\d+)\)$/.exec(program)?.[1] ?? program;

interface Row {
  fixture: string;
  platform: string;
  steps: string;
  stepTime: string;
  deviceTime: string;
  ops: string;
  top: string;
  flops: string;
  bytes: string;
  executions: string;
}

describe.skipIf(unavailable !== undefined)('agreement with xprof on every real XSpace fixture', () => {
  let reference: { xprof: string; profiles: Record<string, Reference> };
  const summaries = new Map<string, TraceSummary>();
  const table: Row[] = [];

  beforeAll(async () => {
    const t = tempDir();
    try {
      const out = join(t.dir, 'xprof.json');
      execFileSync(PYTHON, [SCRIPT, out, ...Object.values(FIXTURE_FILES)], {
        stdio: ['ignore', 'ignore', 'pipe'],
        timeout: 300_000,
      });
      reference = JSON.parse(readFileSync(out, 'utf8')) as typeof reference;
    } finally {
      t.cleanup();
    }
    for (const [name, path] of Object.entries(FIXTURE_FILES))
      summaries.set(name, await summarizeTrace(new XplaneSource(path)));
  }, 300_000);

  afterAll(() => {
    if (table.length === 0) return;
    const header: Row = {
      fixture: 'fixture',
      platform: 'platform',
      steps: 'steps/device ours = xprof',
      stepTime: 'per step (ms) ours | xprof',
      deviceTime: 'device time (ms) ours | xprof',
      ops: 'per-op totals',
      top: 'top ops',
      flops: 'FLOPs/exec',
      bytes: 'bytes/exec',
      executions: 'multi-launch ops: executions',
    };
    const keys = Object.keys(header) as (keyof Row)[];
    const lines = [header, ...table].map((r) => `| ${keys.map((k) => r[k]).join(' | ')} |`);
    // Two of the columns hold "ours | xprof", so the separator counts the cells of the header line.
    const cells = lines[0]!.split(' | ').length;
    lines.splice(1, 0, `|${Array.from({ length: cells }, () => '---').join('|')}|`);
    console.log(
      `hillclimb vs xprof ${reference?.xprof ?? '?'} (tolerances: times ${TOL.time * 100}%, per-step ${TOL.stepTime * 100}% or ${TOL.cpuStepMs} ms on CPU, FLOPs/bytes ${TOL.cost * 100}%)\n${lines.join('\n')}`,
    );
  });

  for (const name of Object.keys(FIXTURE_FILES)) {
    it(name, () => {
      const s = summaries.get(name)!;
      const ref = reference.profiles[FIXTURE_FILES[name]!]!;
      const row: Row = {
        fixture: name,
        platform: s.platform,
        steps: '',
        stepTime: '',
        deviceTime: '',
        ops: '',
        top: '',
        flops: '',
        bytes: '',
        executions: '',
      };
      table.push(row);

      // Per-op totals, by (program, op without .N), every op xprof lists.
      const theirs = new Map<string, { occurrences: number; us: number }>();
      const add = (program: string, op: string, occurrences: number, us: number) => {
        const key = `${program}\u0000${base(op)}`;
        const e = theirs.get(key) ?? { occurrences: 0, us: 0 };
        e.occurrences += occurrences;
        e.us += us;
        theirs.set(key, e);
      };
      if (s.platform === 'cpu') for (const o of ref.cpuOps) add(o.module, o.op, o.occurrences, o.selfUs);
      else for (const o of ref.hloOps) add(o.program, o.op, o.occurrences, o.selfUs);
      const ours = new Map(s.ops.map((o) => [`${idOf(o.program)}\u0000${o.name}`, o]));
      let worst = 0;
      for (const [key, t] of theirs) {
        const o = ours.get(key);
        expect(o, `${name}: ${key.replace('\u0000', ' ')} is missing`).toBeDefined();
        expect(o!.totalCount, `${name}: ${key} occurrences`).toBe(t.occurrences);
        const err = rel(o!.totalMs * 1e3, t.us);
        worst = Math.max(worst, err);
        expect(err, `${name}: ${key} time ${o!.totalMs * 1e3} µs vs ${t.us} µs`).toBeLessThanOrEqual(
          TOL.time,
        );
      }
      row.ops = `${theirs.size} of ${theirs.size} agree (max Δ ${(worst * 100).toFixed(4)}%)`;

      // Total device time.
      const deviceUs =
        s.platform === 'gpu'
          ? ref.kernels.reduce((t, k) => t + k.totalUs, 0) + ref.gpuMemcpyUs
          : [...theirs.values()].reduce((t, e) => t + e.us, 0);
      expect(rel(s.total.deviceMs * 1e3, deviceUs), `${name}: device time`).toBeLessThanOrEqual(TOL.time);
      row.deviceTime = `${s.total.deviceMs.toFixed(3)} | ${(deviceUs / 1e3).toFixed(3)}`;

      // Top ops of the whole device time.
      const k = Math.min(5, theirs.size);
      const theirTop = [...theirs]
        .sort((a, b) => b[1].us - a[1].us)
        .slice(0, k)
        .map(([key]) => key);
      const ourTop = s.ops
        .filter((o) => theirs.has(`${idOf(o.program)}\u0000${o.name}`))
        .slice(0, k)
        .map((o) => `${idOf(o.program)}\u0000${o.name}`);
      expect(ourTop, `${name}: top ${k} ops`).toEqual(theirTop);
      row.top = `top ${k} same`;

      // Steps and per-step time.
      const program = s.steps.program ?? s.programs.find((p) => p.inStepsMs > 0)?.name ?? '';
      let steps: number;
      let stepMs: number;
      let ourStepMs: number;
      if (ref.steps.count > 0) {
        steps = ref.steps.count;
        stepMs = ref.steps.meanMs;
        ourStepMs = s.steps.timeMs!.mean;
        expect(Math.abs(ourStepMs - stepMs), `${name}: step time`).toBeLessThanOrEqual(TOL.cpuStepMs);
      } else if (s.platform === 'tpu') {
        // Each step takes as long as its slowest device; the mean device is reported beside it.
        const m = ref.modules[program]!;
        const per = Object.values(m.perDevice);
        steps = per.reduce((a, b) => a + b, 0) / per.length;
        stepMs = m.slowestMeanMs;
        ourStepMs = s.steps.timeMs!.mean;
        expect(rel(ourStepMs, stepMs), `${name}: step time`).toBeLessThanOrEqual(TOL.stepTime);
        if (per.length > 1)
          expect(rel(s.steps.deviceSpread!.meanMs, m.meanMs), `${name}: device mean`).toBeLessThanOrEqual(
            TOL.stepTime,
          );
      } else {
        // Executions as xprof's tools record them, and the op time per execution.
        const ops =
          s.platform === 'cpu'
            ? ref.cpuOps.filter((o) => o.module === program)
            : ref.hloOps.filter((o) => o.program === idOf(program));
        const devices =
          s.platform === 'cpu' ? 1 : (ref.gpuModuleDevices[program.replace(/\(\d+\)$/, '')] ?? 1);
        const executions =
          s.platform === 'cpu' ? (ref.cpuRuns[program] ?? 0) : modal(ops.map((o) => o.occurrences));
        steps = executions / devices;
        stepMs = ops.reduce((t, o) => t + o.selfUs, 0) / executions / 1e3;
        ourStepMs = s.steps.opMs;
        expect(rel(ourStepMs, stepMs), `${name}: op time per step`).toBeLessThanOrEqual(TOL.stepTime);
      }
      expect(s.steps.count, `${name}: steps per device`).toBe(steps);
      row.steps = `${s.steps.count} = ${steps} (${s.steps.detector})`;
      row.stepTime = `${ourStepMs.toFixed(4)} | ${stepMs.toFixed(4)}`;

      // FLOPs and bytes, for ops xprof has them for: per execution for a single instruction (a cuDNN
      // convolution launches two kernels per execution, and xprof counts its FLOPs once per kernel
      // launch), summed over the instructions of a row that launch one kernel each.
      let flopsSame = 0;
      let flopsAll = 0;
      let elementwise = 0;
      let bytesSame = 0;
      let bytesAll = 0;
      const costs = new Map<string, { rows: HloOp[] }>();
      for (const o of ref.hloOps) {
        const key = `${o.program}\u0000${base(o.op)}`;
        const e = costs.get(key) ?? { rows: [] };
        e.rows.push(o);
        costs.set(key, e);
      }
      for (const [key, { rows }] of costs) {
        const mine = ours.get(key);
        if (mine === undefined) continue;
        const single = rows.length === 1;
        if (!single && mine.executions !== mine.totalCount) continue;
        const theirs = (per: (o: HloOp) => number) =>
          single ? per(rows[0]!) : rows.reduce((t, o) => t + per(o) * o.occurrences, 0);
        const ourValue = (perExec: number | null) =>
          perExec === null ? null : single ? perExec : perExec * mine.executions;
        const bytes = theirs((o) => o.bytesPerOccurrence);
        const myBytes = ourValue(mine.bytesPerExecution);
        if (bytes > 0 && myBytes !== null) {
          bytesAll++;
          const err = rel(myBytes, bytes);
          if (err <= TOL.cost) bytesSame++;
          // TPU bytes come from the trace's own stats, as xprof's do; the check is on GPU and CPU HLO.
          if (s.platform !== 'tpu') expect(err, `${name}: ${key} bytes`).toBeLessThanOrEqual(TOL.cost);
        }
        const flops = theirs((o) => o.flopsPerOccurrence);
        const myFlops = ourValue(mine.flopsPerExecution);
        if (flops > 0 && myFlops !== null && rows.every((o) => o.flopsPerOccurrence > 0)) {
          flopsAll++;
          const err = rel(myFlops, flops);
          const matmul = rows.some((o) => /dot|gemm|cudnn-conv|convolution/.test(o.op));
          if (err <= TOL.cost) flopsSame++;
          else if (!matmul && s.platform === 'gpu') elementwise++;
          if (matmul || s.platform === 'tpu')
            expect(err, `${name}: ${key} FLOPs ${myFlops} vs ${flops}`).toBeLessThanOrEqual(TOL.cost);
        }
      }
      row.flops =
        flopsAll === 0
          ? 'xprof has none'
          : `${flopsSame} of ${flopsAll} agree${elementwise > 0 ? `; ${elementwise} elementwise differ by design` : ''}`;
      row.bytes = bytesAll === 0 ? 'xprof has none' : `${bytesSame} of ${bytesAll} agree`;

      // GPU ops whose instructions launch kernels more often than their program ran (xprof's
      // #Occurrences counts launches: 25 for a TransformerEngine backward call run 5 times): one
      // execution per instruction and program execution, so bytes and FLOPs per execution are rates
      // of the op's real work.
      if (s.platform === 'gpu') {
        let multi = 0;
        for (const [key, { rows }] of costs) {
          const mine = ours.get(key);
          const runs = modal(
            ref.hloOps.filter((o) => o.program === rows[0]!.program).map((o) => o.occurrences),
          );
          if (mine === undefined || !rows.some((o) => o.occurrences > runs)) continue;
          multi++;
          expect(mine.executions, `${name}: ${key} executions`).toBe(rows.length * runs);
        }
        row.executions = multi === 0 ? 'none' : `${multi} of ${multi} agree`;
      } else row.executions = '—';
    });
  }
});

/** The most common value (ties to the larger). */
function modal(values: number[]): number {
  const freq = new Map<number, number>();
  for (const v of values) freq.set(v, (freq.get(v) ?? 0) + 1);
  return [...freq].sort((a, b) => b[1] - a[1] || b[0] - a[0])[0]?.[0] ?? 0;
}
