/**
 * The JSON Schema of hillclimb.yml and the defaults read from it. The schema is the one source of every
 * default: the config loader fills them in (ajv `useDefaults`), and code that needs a default without a
 * config in hand (the statistics' policy, the sequential rule) reads it here, so no number is restated.
 * tests/config/defaults.unit.test.ts fails when a default is written down anywhere else and differs.
 */
import schemaJson from '../../schemas/hillclimb.schema.json' with { type: 'json' };
import type { MeasureConfig } from './types.js';

export const SCHEMA_FILE = 'schemas/hillclimb.schema.json';

interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  $ref?: string;
  default?: unknown;
}

const ROOT = schemaJson as SchemaNode & { definitions?: Record<string, SchemaNode> };

/** A key's own node, or the definition it points to (`#/definitions/<name>`). */
function deref(node: SchemaNode | undefined): SchemaNode | undefined {
  const ref = node?.$ref?.match(/^#\/definitions\/(.+)$/)?.[1];
  return ref === undefined ? node : ROOT.definitions?.[ref];
}

/** The parsed schema (bundled with the engine, so the CLI and the actions validate against the same one). */
export const CONFIG_SCHEMA: object = schemaJson;

/** The default of one key, by its dotted path in hillclimb.yml (e.g. `measure.practical_delta`). */
export function schemaDefault(keyPath: string): unknown {
  let node: SchemaNode | undefined = ROOT;
  for (const key of keyPath.split('.')) node = deref(node)?.properties?.[key];
  if (node === undefined || !('default' in node)) {
    throw new Error(`${SCHEMA_FILE} has no default for ${keyPath}`);
  }
  return node.default;
}

function numberDefault(keyPath: string): number {
  const value = schemaDefault(keyPath);
  if (typeof value !== 'number') throw new Error(`${SCHEMA_FILE}: the default of ${keyPath} is not a number`);
  return value;
}

/** `measure.*` defaults. `regression_delta` has none of its own: absent, it is `practical_delta`. */
export const MEASURE_DEFAULTS: Readonly<Required<Omit<MeasureConfig, 'regression_delta'>>> = Object.freeze({
  runs_per_arm: numberDefault('measure.runs_per_arm'),
  max_runs_per_arm: numberDefault('measure.max_runs_per_arm'),
  confidence: numberDefault('measure.confidence'),
  resamples: numberDefault('measure.resamples'),
  practical_delta: numberDefault('measure.practical_delta'),
  implausible_speedup: numberDefault('measure.implausible_speedup'),
  seed: numberDefault('measure.seed'),
});
