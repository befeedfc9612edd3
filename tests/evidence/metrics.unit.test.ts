import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  comparabilityProblems,
  METRICS_SCHEMA_FILE,
  type MetricsFile,
  metricValue,
  parseMetrics,
  readMetricsFile,
} from '../../src/evidence/metrics.js';
import { InputError } from '../../src/util/errors.js';
import { FIXTURES, REPO_ROOT, tempDir } from '../helpers/paths.js';

const METRICS = join(FIXTURES, 'metrics');
const TPU = join(METRICS, 'tpu-v5p.json');
const CPU = join(METRICS, 'cpu-interpret.json');
const invalid = (name: string): string => join(METRICS, 'invalid', name);

async function readError(file: string): Promise<InputError> {
  const err = await readMetricsFile(file).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InputError);
  return err as InputError;
}

function catchInputError(fn: () => unknown): InputError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(InputError);
    return err as InputError;
  }
  throw new Error('expected an InputError');
}

/** Every field of the schema, optional ones included, typed as MetricsFile so tsc checks the types. */
const COMPLETE: MetricsFile = {
  schema: 'hillclimb.metrics/v1',
  target: 'gdn',
  impl: 'pallas',
  preset: 'tiny',
  created_at: '2026-11-21T09:15:02Z',
  device: {
    backend: 'cpu',
    kind: 'cpu',
    count: 1,
    peak_flops_per_s: 2.5e11,
    interpret: true,
    peak: {
      source: 'measured',
      name: 'measured 512^3 float32 matmul',
      dtype: 'fp32',
      flops_per_s: 2.5e11,
      warning: "device kind 'cpu' is not in schemas/device-peaks.json",
      measured: { flops_per_s: 2.5e11, n: 512, dtype: 'float32', repeats: 10, samples_ms: [1.07, 1.1] },
    },
  },
  shapes: { B: 1, T: 64, H: 2, K: 32, V: 32, chunk_size: 32 },
  dtype: 'float32',
  timing: {
    warmup: 1,
    repeats: 3,
    min_time_ms: 250,
    calls: { fwd: 30 },
    clock: 'process_time+block_until_ready (one pinned core)',
    wall_clock: 'perf_counter+block_until_ready',
    compile_ms: { fwd: 10 },
  },
  measurements: {
    fwd: {
      samples_ms: [1, 2, 3],
      median_ms: 2,
      p10_ms: 1.2,
      p90_ms: 2.8,
      wall_samples_ms: [1.1, 2.5, 3],
      wall_median_ms: 2.5,
      flops: 100,
      executed_flops: null,
      tflops_per_s: 0.1,
      mfu: null,
      tokens_per_s: 10,
    },
  },
  versions: { python: '3.11', jax: '0.10.2', jaxlib: '0.10.2' },
  git: { commit: null, dirty: null },
  trace_dir: null,
  verification: {
    seed: 123456789,
    seed_source: 'os.urandom',
    input_sets: ['mild', 'slow', 'layer'],
    structured_sets: ['one gates', 'repeated gates'],
    verified: true,
    timed_outputs_compared: 6,
    errors: { 'fwd.o': { max_abs: 2e-7, rel_rms: 4e-7 } },
  },
  model: {
    preset: 'tiny',
    config: { vocab: 256, d_model: 64, layer_kinds: ['gdn', 'attention'] },
    params: 212652,
    gdn_layers: 3,
    gdn_layer_shape: { B: 1, T: 64, H: 2, K: 32, V: 32 },
    tokens_per_step: 64,
    flops_per_token: {
      lm_head: 1,
      mlp: 1,
      attention_proj: 1,
      attention_scores: 1,
      attention_softmax: 1,
      gdn_proj: 1,
      gdn_conv: 1,
      gdn_core: 1,
      total: 8,
    },
    optimizer: 'AdamW lr=0.001',
    verification: { steps: 3, verified: true, losses: [5.5, 5.4, 5.4], oracle_losses: [5.5, 5.4, 5.4] },
  },
  programs: { platform: 'cpu', sha256: { 'fwd@tiny': 'a'.repeat(64) } },
  session: { round: 1, rounds: 5, arm: 'A', first: 'B' },
  notes: [],
};

describe('readMetricsFile', () => {
  it('reads and types a TPU run', async () => {
    const m = await readMetricsFile(TPU);
    expect(m.device).toEqual({
      backend: 'tpu',
      kind: 'TPU v5p',
      count: 4,
      peak_flops_per_s: 459e12,
      interpret: false,
    });
    expect(m.measurements.fwd_bwd!.samples_ms).toHaveLength(7);
    expect(m.shapes.gated).toBe(true);
    expect(m.git.commit).toMatch(/^[0-9a-f]{40}$/);
  });

  it('reads a CPU run in interpret mode with null MFU', async () => {
    const m = await readMetricsFile(CPU);
    expect(m.device.interpret).toBe(true);
    expect(m.measurements.fwd_bwd!.mfu).toBeNull();
  });

  it('finds the schema in the package, where the bundled CLI also looks', () => {
    expect(METRICS_SCHEMA_FILE).toBe('schemas/metrics.schema.json');
    expect(() => parseMetrics(JSON.stringify(COMPLETE), 'complete.json')).not.toThrow();
  });

  it('has TypeScript types with exactly the schema fields', () => {
    type Schema = {
      properties?: Record<string, Schema>;
      additionalProperties?: unknown;
      definitions?: Record<string, Schema>;
      $ref?: string;
    };
    const schema = JSON.parse(readFileSync(join(REPO_ROOT, METRICS_SCHEMA_FILE), 'utf8')) as Schema;
    const resolve = (s: Schema): Schema => (s.$ref ? schema.definitions![s.$ref.split('/').at(-1)!]! : s);
    // Walk the schema's objects with fixed fields and compare with the complete example's keys.
    const mismatches: string[] = [];
    const walk = (s: Schema, value: unknown, path: string): void => {
      const props = resolve(s).properties;
      if (!props || typeof value !== 'object' || value === null) return;
      const declared = Object.keys(props).sort();
      const present = Object.keys(value)
        .filter((k) => k in props || resolve(s).additionalProperties === false)
        .sort();
      if (JSON.stringify(declared) !== JSON.stringify(present))
        mismatches.push(`${path}: schema ${declared} vs types ${present}`);
      for (const k of declared) walk(props[k]!, (value as Record<string, unknown>)[k], `${path}.${k}`);
    };
    walk(schema, COMPLETE, '(top)');
    walk(schema.definitions!.measurement!, COMPLETE.measurements.fwd, 'measurement');
    expect(mismatches).toEqual([]);
  });
});

describe('invalid metrics files', () => {
  it.each([
    ['missing-measurements.json', 'measurements: missing'],
    ['missing-median.json', 'measurements.fwd_bwd.median_ms: missing'],
    ['zero-sample.json', 'measurements.fwd_bwd.samples_ms[2]: must be > 0 (got 0)'],
    ['unknown-key.json', 'speedup: unknown key'],
    ['wrong-version.json', 'schema: must be "hillclimb.metrics/v1" (got "hillclimb.metrics/v2")'],
    ['bad-date.json', 'created_at: must be an RFC 3339 date-time (got "yesterday")'],
    ['string-count.json', 'device.count: must be integer (got "8")'],
    ['array.json', '(top level): must be object'],
    ['empty.json', 'empty file, expected metrics JSON'],
    ['truncated.json', 'invalid JSON: unexpected end of input (the file is truncated)'],
    ['not-json.json', "invalid JSON: Unexpected token '<'"],
  ])('%s', async (name, problem) => {
    const err = await readError(invalid(name));
    expect(err.message).toBe(`${invalid(name)}: ${problem}`);
    expect(err.message).not.toContain('\n');
    expect(err.exitCode).toBe(2);
    expect(err.file).toBe(invalid(name));
  });

  it('quotes the parser without the input it echoes', async () => {
    // Node 20 gives no position for an unexpected token; newer versions do.
    expect((await readError(invalid('garbled.json'))).message).toMatch(
      /garbled\.json: invalid JSON( at line 3, column 13)?: Unexpected token '}'$/,
    );
  });

  it('points a wrong schema version at the harness', async () => {
    expect((await readError(invalid('wrong-version.json'))).hint).toMatch(/reads hillclimb\.metrics\/v1/);
  });

  it('counts further problems without listing them', () => {
    const data = { ...COMPLETE, dtype: 3, impl: '' };
    expect(catchInputError(() => parseMetrics(JSON.stringify(data), 'm.json')).message).toMatch(
      /^m\.json: \w+: .+ \(and 1 more problem\)$/,
    );
  });

  it('reports a missing file in one line', async () => {
    const { dir, cleanup } = tempDir();
    try {
      const file = join(dir, 'metrics.json');
      expect((await readError(file)).message).toBe(`${file}: cannot read metrics JSON: no such file`);
      writeFileSync(file, '{"a": [1, 2');
      expect((await readError(file)).message).toBe(
        `${file}: invalid JSON: unexpected end of input (the file is truncated)`,
      );
    } finally {
      cleanup();
    }
  });
});

describe('metricValue', () => {
  it('picks a number by its dotted path', async () => {
    const m = await readMetricsFile(TPU);
    expect(metricValue(m, 'measurements.fwd_bwd.median_ms', TPU)).toBe(20.8);
    expect(metricValue(m, 'measurements.fwd_bwd.mfu', TPU)).toBe(0.06478);
    expect(metricValue(m, 'shapes.T', TPU)).toBe(4096);
  });

  it('names the file and the key when the value is absent, null or not a number', async () => {
    const m = await readMetricsFile(CPU);
    const problem = (path: string): string => catchInputError(() => metricValue(m, path, CPU)).message;
    expect(problem('measurements.fwd.median_ms')).toBe(
      `${CPU}: no metric "measurements.fwd.median_ms": measurements has no key "fwd" (keys: fwd_bwd)`,
    );
    expect(problem('measurements.fwd_bwd.mfu')).toBe(`${CPU}: metric "measurements.fwd_bwd.mfu" is null`);
    expect(catchInputError(() => metricValue(m, 'measurements.fwd_bwd.mfu', CPU)).hint).toMatch(
      /no peak entry/,
    );
    expect(problem('measurements.fwd_bwd')).toBe(
      `${CPU}: metric "measurements.fwd_bwd" is an object, not a number`,
    );
    expect(problem('dtype.bits')).toBe(`${CPU}: no metric "dtype.bits": dtype is a string`);
    expect(problem('measurements..mfu')).toBe(`${CPU}: metric path "measurements..mfu" is malformed`);
  });
});

describe('comparabilityProblems', () => {
  it('accepts runs of the same problem on the same device and lists every difference otherwise', async () => {
    const tpu = await readMetricsFile(TPU);
    const again: MetricsFile = {
      ...tpu,
      git: { commit: 'another', dirty: true },
      created_at: '2026-11-20T15:00:00Z',
    };
    expect(comparabilityProblems(tpu, again)).toEqual([]);
    const cpu = await readMetricsFile(CPU);
    const problems = comparabilityProblems(tpu, cpu);
    expect(problems).toContain('preset differs: "130m-layer" vs "tiny"');
    expect(problems).toContain('device.interpret differs: false vs true');
    expect(problems.some((p) => p.startsWith('shapes differs:'))).toBe(true);
    // Key order does not matter.
    const reordered: MetricsFile = {
      ...tpu,
      shapes: { chunk_size: 64, V: 128, K: 128, H: 16, T: 4096, B: 8, gated: true },
    };
    expect(comparabilityProblems(tpu, reordered)).toEqual([]);
  });

  it('lets the candidate choose its own chunk size (an implementation knob), but not the problem shape', async () => {
    const tpu = await readMetricsFile(TPU);
    const rechunked: MetricsFile = {
      ...tpu,
      shapes: { ...tpu.shapes, chunk_size: tpu.shapes.chunk_size! * 2 },
    };
    expect(comparabilityProblems(tpu, rechunked)).toEqual([]);
    const longer: MetricsFile = { ...tpu, shapes: { ...tpu.shapes, T: tpu.shapes.T! * 2 } };
    expect(comparabilityProblems(tpu, longer)).toEqual([expect.stringMatching(/^shapes differs:/)]);
  });

  it('compares the model level too: the same model, or none on both sides, and the same kind of peak', () => {
    const base = COMPLETE;
    // A measured peak is re-measured in every run: its value may differ, its kind may not.
    const remeasured: MetricsFile = {
      ...base,
      device: {
        ...base.device,
        peak: { ...base.device.peak!, flops_per_s: 2.4e11 },
        peak_flops_per_s: 2.4e11,
      },
    };
    expect(comparabilityProblems(base, remeasured)).toEqual([]);
    const { model: _model, ...withoutModel } = base;
    expect(comparabilityProblems(base, withoutModel)).toEqual([
      expect.stringMatching(/^model\.preset differs: "tiny" vs null$/),
      expect.stringMatching(/^model\.config differs:/),
    ]);
    const bigger: MetricsFile = {
      ...base,
      model: { ...base.model!, config: { ...base.model!.config, d_model: 128 } },
    };
    expect(comparabilityProblems(base, bigger)).toEqual([expect.stringMatching(/^model\.config differs:/)]);
    const table: MetricsFile = {
      ...base,
      device: {
        ...base.device,
        peak: { ...base.device.peak!, source: 'table', warning: null, measured: null },
      },
    };
    expect(comparabilityProblems(base, table)).toEqual(['device.peak.source differs: "measured" vs "table"']);
  });
});
