/**
 * The metrics contract: one JSON document per arm and timed round, written by the verifier (a harness
 * process that never imports candidate code; `src/evidence/session.ts` splits its session document)
 * and validated against schemas/metrics.schema.json (draft-07). The engine takes every number it
 * reports from these files. Errors name the file and the JSON path of the problem (exit code 2).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { packageRoot } from '../project/index.js';
import { errorMessage, InputError, readTextFile } from '../util/index.js';

/** Read from the package at run time (not imported), so the esbuild bundle finds it too. */
export const METRICS_SCHEMA_FILE = 'schemas/metrics.schema.json';
export const METRICS_SCHEMA_VERSION = 'hillclimb.metrics/v1';

// Types mirror schemas/metrics.schema.json field for field (snake_case as in the file).

export interface MetricsDevice {
  /** jax.default_backend(): cpu, tpu, gpu. */
  backend: string;
  /** jax device_kind, e.g. 'TPU v5p', 'cpu'. */
  kind: string;
  count: number;
  /**
   * The peak every `mfu` in the file is against, at the preset's dtype: the table's, or measured
   * (`peak` says which). Null only in files of older benches (CPU then had no MFU).
   */
  peak_flops_per_s: number | null;
  /** True when Pallas ran in interpret mode: timings say nothing about accelerator speed. */
  interpret: boolean;
  /** Where peak_flops_per_s comes from; absent from files of older benches (the table's bf16 peak). */
  peak?: MetricsPeak;
}

/** The peak MFU is against: schemas/device-peaks.json, or the best of a few matmuls timed in the bench. */
export interface MetricsPeak {
  source: 'table' | 'measured';
  /** The table entry's name (`TPU v5p`), or what was measured (`measured 512^3 float32 matmul`). */
  name: string;
  dtype: 'bf16' | 'fp32';
  flops_per_s: number;
  /** Why the table could not be used; null for a table peak. */
  warning: string | null;
  measured: {
    flops_per_s: number;
    n: number;
    dtype: string;
    repeats: number;
    samples_ms: number[];
  } | null;
}

/**
 * Problem shape: the target's named dimensions. The gdn harness writes B, T, H, K, V and chunk_size;
 * a target of another kind names its own (hillclimb-bench writes whatever its user passes).
 */
export interface MetricsShapes {
  B?: number;
  T?: number;
  H?: number;
  K?: number;
  V?: number;
  chunk_size?: number;
  [key: string]: number | string | boolean | undefined;
}

export interface MetricsTiming {
  /** Untimed calls after compilation. */
  warmup: number;
  repeats: number;
  /** bench.min_time_ms of the session, where it gave cheap programs more calls than `repeats`. */
  min_time_ms?: number;
  /** Timed calls per round of each measurement, where `min_time_ms` set them. */
  calls?: Record<string, number>;
  /**
   * How `samples_ms` was timed: 'perf_counter+block_until_ready' (wall clock), or
   * 'process_time+block_until_ready (one pinned core)' (CPU time, which other work's preemptions cannot stretch).
   */
  clock: string;
  /** How `wall_samples_ms` was timed, when `samples_ms` is on another clock. */
  wall_clock?: string;
  /** Compile time per measurement, excluded from samples. */
  compile_ms?: Record<string, number>;
}

/** One timed thing (fwd, fwd_bwd): samples and the statistics the harness derived from them. */
export interface Measurement {
  /** Each timed repeat on `timing.clock`, in order; all > 0. */
  samples_ms: number[];
  median_ms: number;
  /** The same repeats on the wall clock, when `samples_ms` is on another clock. */
  wall_samples_ms?: number[];
  wall_median_ms?: number;
  p10_ms: number;
  p90_ms: number;
  /** Model FLOPs per call with the fixed reference convention. */
  flops: number;
  /** FLOPs the implementation actually executes, if known. */
  executed_flops?: number | null;
  tflops_per_s: number;
  /** Fraction (0..1) of device peak; null when the device has no peak entry. */
  mfu: number | null;
  tokens_per_s: number;
}

export interface MetricsVersions {
  python: string;
  jax: string;
  jaxlib: string;
  [pkg: string]: string;
}

export interface MetricsGit {
  /** HEAD of the measured tree; null outside git. */
  commit: string | null;
  dirty: boolean | null;
}

/** What the bench verified before its timings counted (absent from metrics of older benches). */
export interface MetricsVerification {
  /** Seed of every input set and cotangent (below 2^53); --seed reproduces the run's inputs. */
  seed: number;
  /** os.urandom: drawn fresh after the kernel was compiled; argument: given with --seed. */
  seed_source: 'os.urandom' | 'argument';
  /** Gate mode of each input set, in the order timed calls alternate over them. */
  input_sets: string[];
  /** Structured input sets (the kernel's correctness contract) also verified, never timed. */
  structured_sets?: string[];
  /** Every returned array of every measured program checked against the oracle (false: --no-check). */
  verified: boolean;
  /** Outputs of timed calls found bit-identical, after timing, to the verified call. */
  timed_outputs_compared: number;
  /** Worst error over the input sets per measurement.quantity, e.g. fwd_bwd.dg. */
  errors: Record<string, { max_abs: number; rel_rms: number }>;
}

/** Forward model FLOPs per token by component (docs/metrics.md). */
export interface ModelFlopsPerToken {
  lm_head: number;
  mlp: number;
  attention_proj: number;
  attention_scores: number;
  attention_softmax: number;
  gdn_proj: number;
  gdn_conv: number;
  gdn_core: number;
  total: number;
}

/** The model whose training step `measurements.train_step` timed (bench --model). */
export interface MetricsModel {
  preset: string;
  config: Record<string, number | string | boolean | unknown[]>;
  params: number;
  /** GDN layers: each calls the kernel once forward and once backward per step. */
  gdn_layers: number;
  /** The shape every GDN layer calls the kernel with. */
  gdn_layer_shape: { B: number; T: number; H: number; K: number; V: number };
  tokens_per_step: number;
  flops_per_token: ModelFlopsPerToken;
  optimizer: string;
  verification: {
    steps: number;
    verified: boolean;
    losses: number[];
    oracle_losses: number[] | null;
  };
}

export interface MetricsFile {
  schema: typeof METRICS_SCHEMA_VERSION;
  target: string;
  impl: string;
  preset: string;
  /** RFC 3339 date-time. */
  created_at: string;
  device: MetricsDevice;
  shapes: MetricsShapes;
  dtype: string;
  timing: MetricsTiming;
  /** Keyed by what was timed, e.g. fwd, fwd_bwd; at least one. */
  measurements: Record<string, Measurement>;
  versions: MetricsVersions;
  git: MetricsGit;
  trace_dir?: string | null;
  verification?: MetricsVerification;
  /** Present when the bench also timed a model's training step (bench --model). */
  model?: MetricsModel;
  /** The exported programs these timings are of, hashed by the verifier that timed them. */
  programs?: { platform: string; sha256: Record<string, string> };
  /** Where the document sits in the verifier's session (round, arm, first arm of the round). */
  session?: { round: number; rounds: number; arm: string; first: string };
  notes?: string[];
}

/** RFC 3339 date-time, as JSON Schema's `date-time` format (ajv-formats is not a dependency). */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

let validator: ValidateFunction | undefined;

function metricsValidator(): ValidateFunction {
  if (validator) return validator;
  const schema = JSON.parse(readFileSync(join(packageRoot(), METRICS_SCHEMA_FILE), 'utf8')) as object;
  // verbose: errors carry the offending value, quoted in the message.
  const ajv = new Ajv({ allErrors: true, strict: false, verbose: true });
  ajv.addFormat('date-time', { validate: (s: string) => DATE_TIME.test(s) && !Number.isNaN(Date.parse(s)) });
  validator = ajv.compile(schema);
  return validator;
}

/** A JSON pointer (/measurements/fwd/samples_ms/2) as a path: measurements.fwd.samples_ms[2]. */
function jsonPath(pointer: string, extra?: string): string {
  const parts =
    pointer === ''
      ? []
      : pointer
          .slice(1)
          .split('/')
          .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (extra !== undefined) parts.push(extra);
  let path = '';
  for (const p of parts) path += /^\d+$/.test(p) ? `[${p}]` : path === '' ? p : `.${p}`;
  return path === '' ? '(top level)' : path;
}

function describe(e: ErrorObject): string {
  const got = e.data === undefined || typeof e.data === 'object' ? '' : ` (got ${JSON.stringify(e.data)})`;
  switch (e.keyword) {
    case 'required':
      return `${jsonPath(e.instancePath, String(e.params.missingProperty))}: missing`;
    case 'additionalProperties':
      return `${jsonPath(e.instancePath, String(e.params.additionalProperty))}: unknown key`;
    case 'const':
      return `${jsonPath(e.instancePath)}: must be ${JSON.stringify(e.params.allowedValue)}${got}`;
    case 'format':
      return `${jsonPath(e.instancePath)}: must be an RFC 3339 ${String(e.params.format)}${got}`;
    default:
      return `${jsonPath(e.instancePath)}: ${e.message ?? 'is invalid'}${got}`;
  }
}

/**
 * One line about a JSON.parse failure: V8's message without its quoted snippet of the input (which
 * may span lines), with "at position N" turned into a line and column.
 */
function jsonSyntaxProblem(text: string, message: string): string {
  const truncated = 'unexpected end of input (the file is truncated)';
  const problem = message.replace(/, (\.\.\.)?".*"(\.\.\.)? is not valid JSON$/s, '').replace(/\s+/g, ' ');
  if (/^Unexpected end of JSON input/.test(problem)) return `invalid JSON: ${truncated}`;
  const at = /^(.*) in JSON at position (\d+)(?: \(line \d+ column \d+\))?$/.exec(problem);
  if (at) {
    const position = Number(at[2]);
    if (position >= text.trimEnd().length) return `invalid JSON: ${truncated}`;
    const before = text.slice(0, position);
    const line = before.split('\n').length;
    const column = before.length - before.lastIndexOf('\n');
    return `invalid JSON at line ${line}, column ${column}: ${at[1]}`;
  }
  return `invalid JSON: ${problem}`;
}

/**
 * Parse and validate metrics JSON text. `file` names the source in errors.
 * @throws InputError naming the file and the JSON path of the first problem.
 */
export function parseMetrics(text: string, file: string): MetricsFile {
  if (text.trim() === '') throw new InputError(file, 'empty file, expected metrics JSON');
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new InputError(file, jsonSyntaxProblem(text, errorMessage(err)), {
      hint: 'a truncated file usually means the bench process was killed while writing it',
    });
  }
  const validate = metricsValidator();
  if (!validate(data)) {
    const errors = validate.errors ?? [];
    const more =
      errors.length > 1 ? ` (and ${errors.length - 1} more problem${errors.length > 2 ? 's' : ''})` : '';
    const schemaWrong = errors.some((e) => e.instancePath === '/schema');
    throw new InputError(
      file,
      `${errors.length > 0 ? describe(errors[0]!) : 'does not match the schema'}${more}`,
      {
        hint: schemaWrong
          ? `this engine reads ${METRICS_SCHEMA_VERSION}; regenerate the file with this checkout's harness`
          : `the contract is ${METRICS_SCHEMA_FILE}`,
      },
    );
  }
  return data as MetricsFile;
}

/**
 * Read, parse and validate a metrics JSON file.
 * @throws InputError naming the file when it cannot be read, parsed or validated.
 */
export async function readMetricsFile(file: string): Promise<MetricsFile> {
  return parseMetrics(await readTextFile(file, 'metrics JSON'), file);
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/**
 * The number at a dotted `path` such as `measurements.fwd_bwd.median_ms` or
 * `measurements.fwd_bwd.mfu` (the config's bench.metric.path). `file` names the source in errors.
 * @throws InputError naming the file and the key when the value is absent, null or not a number.
 */
/**
 * The wall-clock twin of a `….median_ms` metric (`….wall_median_ms`), which metrics timed on another
 * clock keep beside it; undefined for a metric that is not a median time.
 */
export function wallMetricPath(path: string): string | undefined {
  return path.endsWith('.median_ms') ? `${path.slice(0, -'median_ms'.length)}wall_median_ms` : undefined;
}

/**
 * How long a run's timed calls took on the wall clock: every sample of every measurement in its metrics
 * (`wall_samples_ms` where the samples are on another clock). Warm-up calls and compilation are not in
 * it. It is the run's own time: its verifier session's time covers both arms and the process start-up.
 */
export function timedWallMs(metrics: MetricsFile): number {
  let total = 0;
  for (const m of Object.values(metrics.measurements)) {
    for (const sample of m.wall_samples_ms ?? m.samples_ms) total += sample;
  }
  return total;
}

export function metricValue(metrics: MetricsFile, path: string, file: string): number {
  const keys = path.split('.');
  if (keys.some((k) => k === '')) throw new InputError(file, `metric path "${path}" is malformed`);
  let node: unknown = metrics;
  for (const [i, key] of keys.entries()) {
    const here = keys.slice(0, i).join('.') || '(top level)';
    if (typeof node !== 'object' || node === null || Array.isArray(node)) {
      throw new InputError(file, `no metric "${path}": ${here} is ${kindOf(node)}`);
    }
    const record = node as Record<string, unknown>;
    if (!Object.hasOwn(record, key)) {
      const known = Object.keys(record).sort().join(', ');
      throw new InputError(file, `no metric "${path}": ${here} has no key "${key}" (keys: ${known})`);
    }
    node = record[key];
  }
  if (node === null) {
    throw new InputError(file, `metric "${path}" is null`, {
      hint:
        keys.at(-1) === 'mfu'
          ? 'MFU is null when the device has no peak entry (e.g. on CPU); measure a time instead'
          : undefined,
    });
  }
  if (typeof node !== 'number' || !Number.isFinite(node)) {
    throw new InputError(file, `metric "${path}" is ${kindOf(node)}, not a number`);
  }
  return node;
}

/**
 * Reasons two runs cannot be compared: they measured different problems or environments
 * (target, preset, shapes, dtype, device, timing protocol, JAX versions). Empty when comparable.
 * The loop calls this for every run against the first before any statistics.
 */
/** The problem's shape without the implementation's own choices (the chunk size). */
function problemShape(shapes: MetricsShapes): Record<string, unknown> {
  const { chunk_size: _chunk, ...problem } = shapes;
  return problem;
}

export function comparabilityProblems(a: MetricsFile, b: MetricsFile): string[] {
  const fields: [string, unknown, unknown][] = [
    ['schema', a.schema, b.schema],
    ['target', a.target, b.target],
    ['preset', a.preset, b.preset],
    ['dtype', a.dtype, b.dtype],
    // The chunk size is the implementation's choice (a legitimate tuning knob the agent may change); the
    // problem is the rest of the shape. FLOPs use a fixed reference chunk size, so MFU stays comparable.
    ['shapes', problemShape(a.shapes), problemShape(b.shapes)],
    ['device.backend', a.device.backend, b.device.backend],
    ['device.kind', a.device.kind, b.device.kind],
    ['device.count', a.device.count, b.device.count],
    ['device.interpret', a.device.interpret, b.device.interpret],
    ['timing.warmup', a.timing.warmup, b.timing.warmup],
    ['timing.repeats', a.timing.repeats, b.timing.repeats],
    ['timing.min_time_ms', a.timing.min_time_ms ?? null, b.timing.min_time_ms ?? null],
    ['timing.clock', a.timing.clock, b.timing.clock],
    // The model level: the same model, or none on both sides.
    ['model.preset', a.model?.preset ?? null, b.model?.preset ?? null],
    ['model.config', a.model?.config ?? null, b.model?.config ?? null],
    // MFU of both arms is against the same kind of peak (a measured peak is re-measured per run).
    ['device.peak.source', a.device.peak?.source ?? null, b.device.peak?.source ?? null],
    ['versions.jax', a.versions.jax, b.versions.jax],
    ['versions.jaxlib', a.versions.jaxlib, b.versions.jaxlib],
  ];
  const canonical = (v: unknown): string =>
    typeof v === 'object' && v !== null
      ? JSON.stringify(Object.fromEntries(Object.entries(v).sort(([x], [y]) => x.localeCompare(y))))
      : JSON.stringify(v);
  return fields
    .filter(([, x, y]) => canonical(x) !== canonical(y))
    .map(([name, x, y]) => `${name} differs: ${canonical(x)} vs ${canonical(y)}`);
}
