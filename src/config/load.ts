/**
 * hillclimb.yml → HillclimbConfig. One function builds one typed object, never at import time.
 * The JSON Schema (schemas/hillclimb.schema.json) is the single source of truth for shape and defaults;
 * errors name the file, the key path and the line, and suggest the nearest key for a typo.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { isMap, isScalar, LineCounter, type Node, parseDocument } from 'yaml';
import { ConfigError } from '../util/index.js';
import { crossFieldProblems } from './rules.js';
import { CONFIG_SCHEMA, SCHEMA_FILE } from './schema.js';
import type { HillclimbConfig, TargetConfig } from './types.js';

/** How many problems one error message lists before saying "and N more". */
const MAX_LISTED_PROBLEMS = 8;

export interface ConfigProblem {
  /** Dotted key path, e.g. targets.gdn.bench.metric.direction ('' for the whole file). */
  keyPath: string;
  message: string;
}

/** Overrides from the command line, as dotted key paths (e.g. {'loop.iterations': 2}); validated like the file. */
export type ConfigOverrides = Record<string, unknown>;

let validator: ValidateFunction | undefined;

function schemaValidator(): ValidateFunction {
  if (validator) return validator;
  // verbose: errors carry their parent schema, used for "did you mean" suggestions.
  const ajv = new Ajv({ allErrors: true, useDefaults: true, verbose: true, strict: false });
  validator = ajv.compile(CONFIG_SCHEMA);
  return validator;
}

/** Read, parse, validate and type a config file. Throws ConfigError naming the file, key path and line. */
export function loadConfig(file: string, overrides: ConfigOverrides = {}): HillclimbConfig {
  const path = resolve(file);
  if (!existsSync(path)) {
    throw new ConfigError(path, '', 'file not found', {
      hint: 'create hillclimb.yml at the repository root (see docs/user-guide.md) or pass --config',
    });
  }
  return parseConfig(readFileSync(path, 'utf8'), path, overrides);
}

/** Parse config text as if it came from `file` (used by loadConfig and by tests). */
export function parseConfig(text: string, file: string, overrides: ConfigOverrides = {}): HillclimbConfig {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const line = e.linePos?.[0]?.line;
    throw new ConfigError(file, '', `invalid YAML: ${e.message.split('\n')[0]}`, { line });
  }
  const raw: unknown = doc.toJS() ?? {};
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(file, '', 'the top level must be a mapping (key: value)');
  }
  const data = structuredClone(raw) as Record<string, unknown>;
  for (const [keyPath, value] of Object.entries(overrides)) setPath(data, keyPath, value);

  const validate = schemaValidator();
  if (!validate(data)) {
    const problems = (validate.errors ?? []).map(describeAjvError);
    throwProblems(file, dedupe(problems), (p) => lineOf(doc.contents, p, lines));
  }
  const config = toTyped(data, file);
  const problems = crossFieldProblems(config);
  if (problems.length > 0) throwProblems(file, problems, (p) => lineOf(doc.contents, p, lines));
  return config;
}

function toTyped(data: Record<string, unknown>, file: string): HillclimbConfig {
  const typed = data as unknown as Omit<HillclimbConfig, 'file' | 'root'>;
  const targets: Record<string, TargetConfig> = {};
  for (const [name, t] of Object.entries(typed.targets)) targets[name] = { ...t, name };
  return { ...typed, targets, file, root: dirname(file) };
}

/** The target a loop works on: the named one, else loop.target, else the only one. */
export function selectTarget(config: HillclimbConfig, name?: string): TargetConfig {
  const wanted = name ?? config.loop.target;
  const names = Object.keys(config.targets).sort();
  if (wanted === undefined) {
    if (names.length === 1) return config.targets[names[0]!]!;
    throw new ConfigError(config.file, 'loop.target', `several targets (${names.join(', ')}); name one`, {
      hint: 'set loop.target in hillclimb.yml or pass --target',
    });
  }
  const target = config.targets[wanted];
  if (!target) {
    throw new ConfigError(config.file, 'targets', `no target "${wanted}"; known: ${names.join(', ')}`);
  }
  return target;
}

function throwProblems(
  file: string,
  problems: ConfigProblem[],
  line: (p: ConfigProblem) => number | undefined,
): never {
  const first = problems[0]!;
  const rest = problems.slice(1, MAX_LISTED_PROBLEMS).map((p) => {
    const l = line(p);
    return `\n  also ${l === undefined ? '' : `line ${l}: `}${p.keyPath ? `${p.keyPath}: ` : ''}${p.message}`;
  });
  const more =
    problems.length > MAX_LISTED_PROBLEMS ? `\n  and ${problems.length - MAX_LISTED_PROBLEMS} more` : '';
  throw new ConfigError(file, first.keyPath, `${first.message}${rest.join('')}${more}`, {
    line: line(first),
    hint: `the schema with every key and default is ${SCHEMA_FILE}`,
  });
}

function dedupe(problems: ConfigProblem[]): ConfigProblem[] {
  const seen = new Set<string>();
  return problems.filter((p) => {
    const k = `${p.keyPath}\0${p.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/**
 * Keys an older hillclimb.yml may still hold, with what replaced them (keyed `*.<section>.<key>` under
 * a target).
 */
const RETIRED_KEYS: Record<string, string> = {
  '*.bench.command':
    "is no longer read: a bench that imports the candidate cannot be believed. Name the target's harness " +
    "module in targets.<target>.programs.module (hillclimb exports the candidate's programs with it, then " +
    'verifies and times them in a process that never imports the candidate); see docs/kernels.md#programs',
  '*.profile.command':
    'is no longer read: the profile traces the verified programs (targets.<target>.programs); set ' +
    'profile.repeats and profile.timeout_minutes, or leave profile out',
};

function pointerToPath(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function describeAjvError(e: ErrorObject): ConfigProblem {
  const path = pointerToPath(e.instancePath);
  const keyPath = path.join('.');
  const join = (k: string) => (keyPath ? `${keyPath}.${k}` : k);
  const got = e.data === undefined ? '' : ` (got ${JSON.stringify(e.data)})`;
  switch (e.keyword) {
    case 'additionalProperties': {
      const key = String((e.params as { additionalProperty: string }).additionalProperty);
      const retired =
        RETIRED_KEYS[`${path.length === 3 && path[0] === 'targets' ? `*.${path[2]}` : ''}.${key}`];
      if (retired) return { keyPath: join(key), message: retired };
      const known = Object.keys((e.parentSchema as { properties?: object } | undefined)?.properties ?? {});
      const near = nearest(key, known);
      return {
        keyPath: join(key),
        message: `unknown key "${key}"${near ? ` (did you mean "${near}"?)` : known.length ? `; known: ${known.join(', ')}` : ''}`,
      };
    }
    case 'required':
      return {
        keyPath: join(String((e.params as { missingProperty: string }).missingProperty)),
        message: 'missing required key',
      };
    case 'enum':
      return {
        keyPath,
        message: `must be one of ${((e.params as { allowedValues: unknown[] }).allowedValues ?? []).map(String).join(', ')}${got}`,
      };
    case 'const':
      return {
        keyPath,
        message: `must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}${got}`,
      };
    case 'type':
      return { keyPath, message: `must be ${(e.params as { type: string }).type}${got}` };
    case 'propertyNames':
      return { keyPath, message: `has a badly formed name: ${e.message ?? ''}` };
    default:
      return { keyPath, message: `${e.message ?? 'is invalid'}${got}` };
  }
}

/** The known key closest to a typo, if it is close enough to be a plausible slip. */
export function nearest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length]!;
}

/** The 1-based line of the deepest YAML node that exists along the problem's key path. */
function lineOf(root: unknown, problem: ConfigProblem, lines: LineCounter): number | undefined {
  const keys = problem.keyPath === '' ? [] : problem.keyPath.split('.');
  let node = root as Node | null | undefined;
  let offset: number | undefined = node?.range?.[0];
  for (const key of keys) {
    if (!isMap(node)) break;
    const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === key);
    if (!pair) break;
    offset = (pair.key as Node).range?.[0] ?? offset;
    node = pair.value as Node | null;
  }
  return offset === undefined ? undefined : lines.linePos(offset).line;
}

function setPath(data: Record<string, unknown>, keyPath: string, value: unknown): void {
  const keys = keyPath.split('.');
  let obj: Record<string, unknown> = data;
  for (const k of keys.slice(0, -1)) {
    const next = obj[k];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) obj[k] = {};
    obj = obj[k] as Record<string, unknown>;
  }
  obj[keys[keys.length - 1]!] = value;
}
