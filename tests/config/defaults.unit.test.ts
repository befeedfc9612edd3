// One source of every default: schemas/hillclimb.schema.json. These tests read the schema from disk
// (not through the engine's import of it) and fail when the engine, the statistics, the docs or an
// action states a default that differs, or when a knob's default is written down again as a literal.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { MEASURE_DEFAULTS, schemaDefault } from '../../src/config/schema.js';
import { bootstrapRatioOfMedians, MIN_RESAMPLES } from '../../src/stats/bootstrap.js';
import { DEFAULT_POLICY, resolvePolicy } from '../../src/stats/compare-arms.js';
import { DEFAULT_CONFIDENCE, DEFAULT_PRACTICAL_DELTA } from '../../src/stats/noise.js';
import { DEFAULT_SEQUENTIAL_POLICY } from '../../src/stats/sequential.js';
import { REPO_ROOT } from '../helpers/paths.js';

interface Node {
  properties?: Record<string, Node>;
  default?: unknown;
  minimum?: number;
}
const schema = JSON.parse(readFileSync(join(REPO_ROOT, 'schemas/hillclimb.schema.json'), 'utf8')) as {
  definitions: Record<string, Node>;
};
const measure = schema.definitions.measure!.properties!;
const onDisk = (key: string): unknown => measure[key]!.default;

describe('the schema is the one source of the measure defaults', () => {
  it('the engine reads every measure.* default from the schema', () => {
    const keys = Object.keys(measure).filter((k) => 'default' in measure[k]!);
    expect(Object.keys(MEASURE_DEFAULTS).sort()).toEqual(keys.sort());
    for (const key of keys)
      expect([key, MEASURE_DEFAULTS[key as keyof typeof MEASURE_DEFAULTS]]).toEqual([key, onDisk(key)]);
    expect(schemaDefault('loop.iterations')).toBe(schema.definitions.loop!.properties!.iterations!.default);
    expect(() => schemaDefault('measure.regression_delta')).toThrow(
      /no default for measure\.regression_delta/,
    );
  });

  it('the statistics default to the same numbers as hillclimb.yml', () => {
    expect({
      confidence: DEFAULT_POLICY.confidence,
      resamples: DEFAULT_POLICY.resamples,
      practicalDelta: DEFAULT_POLICY.practicalDelta,
      implausibleSpeedup: DEFAULT_POLICY.implausibleSpeedup,
      minRuns: DEFAULT_POLICY.minRuns,
      nStart: DEFAULT_SEQUENTIAL_POLICY.nStart,
      nMax: DEFAULT_SEQUENTIAL_POLICY.nMax,
      noiseConfidence: DEFAULT_CONFIDENCE,
      noisePracticalDelta: DEFAULT_PRACTICAL_DELTA,
      bootstrapResamples: bootstrapRatioOfMedians([1, 2, 3], [1, 2, 3], { seed: 1 }).resamples,
      bootstrapConfidence: bootstrapRatioOfMedians([1, 2, 3], [1, 2, 3], { seed: 1 }).confidence,
    }).toEqual({
      confidence: onDisk('confidence'),
      resamples: onDisk('resamples'),
      practicalDelta: onDisk('practical_delta'),
      implausibleSpeedup: onDisk('implausible_speedup'),
      minRuns: onDisk('runs_per_arm'),
      nStart: onDisk('runs_per_arm'),
      nMax: onDisk('max_runs_per_arm'),
      noiseConfidence: onDisk('confidence'),
      noisePracticalDelta: onDisk('practical_delta'),
      bootstrapResamples: onDisk('resamples'),
      bootstrapConfidence: onDisk('confidence'),
    });
    // regression_delta has no default of its own: absent, it is practical_delta (documented in the schema).
    expect(measure.regression_delta).toBeDefined();
    expect(measure.regression_delta!.default).toBeUndefined();
    expect(DEFAULT_POLICY.regressionDelta).toBe(onDisk('practical_delta'));
    expect(resolvePolicy({ practicalDelta: 0.05 }).regressionDelta).toBe(0.05);
    // A config the schema accepts is one the statistics accept.
    expect(measure.resamples!.minimum).toBe(MIN_RESAMPLES);
  });

  it('no engine file restates a measure default as a literal', () => {
    const knob =
      /\b(practicalDelta|practical_delta|regressionDelta|regression_delta|implausibleSpeedup|implausible_speedup|minRuns|nStart|nMax|runs_per_arm|max_runs_per_arm|resamples|confidence|falseAcceptRate|power|seed)\b\s*(?::|=|\?\?|\|\|)\s*(?:[1-9]|0\.\d*[1-9])/;
    const found: string[] = [];
    const scan = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const p = join(dir, name);
        if (statSync(p).isDirectory()) scan(p);
        else if (p.endsWith('.ts')) {
          readFileSync(p, 'utf8')
            .split('\n')
            .forEach((line, i) => {
              if (
                knob.test(line) &&
                !line.trimStart().startsWith('*') &&
                !line.trimStart().startsWith('//')
              ) {
                found.push(`${relative(REPO_ROOT, p)}:${i + 1}: ${line.trim()}`);
              }
            });
        }
      }
    };
    scan(join(REPO_ROOT, 'src'));
    for (const a of readdirSync(join(REPO_ROOT, 'actions'))) scan(join(REPO_ROOT, 'actions', a, 'src'));
    expect(found).toEqual([]);
  });

  it('the docs state the schema defaults', () => {
    // docs/statistics.md's table of the policy's knobs.
    const stats = readFileSync(join(REPO_ROOT, 'docs/statistics.md'), 'utf8');
    const row = (knob: string): number => {
      const m = stats.match(new RegExp(`^\\| \`${knob}\` \\| ([0-9.]+)`, 'm'));
      if (!m) throw new Error(`docs/statistics.md has no row for ${knob}`);
      return Number(m[1]);
    };
    expect([
      row('confidence'),
      row('resamples'),
      row('practicalDelta'),
      row('implausibleSpeedup'),
      row('minRuns'),
    ]).toEqual([
      onDisk('confidence'),
      onDisk('resamples'),
      onDisk('practical_delta'),
      onDisk('implausible_speedup'),
      onDisk('runs_per_arm'),
    ]);
    // docs/user-guide.md's example config shows the measure defaults.
    const guide = readFileSync(join(REPO_ROOT, 'docs/user-guide.md'), 'utf8');
    const line = guide.match(/^measure: (\{.*\})/m);
    expect(line, 'docs/user-guide.md shows a measure: line').not.toBeNull();
    for (const [key, value] of Object.entries(parse(line![1]!) as Record<string, unknown>)) {
      expect([key, value]).toEqual([key, onDisk(key)]);
    }
  });

  it('no action restates a config default as an input default', () => {
    const flat = new Map<string, unknown>();
    for (const [section, node] of Object.entries(schema.definitions)) {
      for (const [key, p] of Object.entries(node.properties ?? {})) {
        if (typeof p.default === 'number') flat.set(`${section}.${key}`, p.default);
      }
    }
    const restated: string[] = [];
    for (const a of readdirSync(join(REPO_ROOT, 'actions'))) {
      const file = join(REPO_ROOT, 'actions', a, 'action.yml');
      const inputs = (parse(readFileSync(file, 'utf8')) as { inputs?: Record<string, { default?: unknown }> })
        .inputs;
      for (const [name, input] of Object.entries(inputs ?? {})) {
        const key = name.replaceAll('-', '_');
        for (const [path] of flat) {
          if (path.endsWith(`.${key}`) && input.default !== undefined)
            restated.push(`${a}: ${name} (${path})`);
        }
      }
    }
    expect(restated).toEqual([]);
  });
});
