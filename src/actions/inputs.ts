/**
 * Strict readers for action inputs, on top of @actions/core: a missing required input, a value outside
 * its allowed set, a number that is not one, or a boolean spelled any way but YAML 1.2's all fail
 * naming the input. Empty means "not given" (the runner passes declared inputs as empty strings).
 */
import * as core from '@actions/core';
import type { ConfigOverrides } from '../config/index.js';
import { ExitCode, HillclimbError } from '../util/index.js';

function bad(name: string, problem: string): HillclimbError {
  return new HillclimbError(`input ${name}: ${problem}`, { exitCode: ExitCode.badInput });
}

/** The trimmed value, or undefined when the input is empty or absent. */
export function optionalText(name: string): string | undefined {
  const value = core.getInput(name, { trimWhitespace: true });
  return value === '' ? undefined : value;
}

export function requiredText(name: string): string {
  const value = optionalText(name);
  if (value === undefined) throw bad(name, 'required and not supplied');
  return value;
}

/** true/false in YAML 1.2 spellings (core.getBooleanInput); `fallback` when empty. */
export function flag(name: string, fallback: boolean): boolean {
  if (optionalText(name) === undefined) return fallback;
  try {
    return core.getBooleanInput(name);
  } catch {
    throw bad(name, `expected true | True | TRUE | false | False | FALSE, got "${optionalText(name)}"`);
  }
}

export function positiveInteger(name: string, opts: { required: true }): number;
export function positiveInteger(name: string, opts?: { required?: false }): number | undefined;
export function positiveInteger(name: string, opts: { required?: boolean } = {}): number | undefined {
  const raw = opts.required ? requiredText(name) : optionalText(name);
  if (raw === undefined) return undefined;
  if (!/^[0-9]+$/.test(raw) || Number(raw) < 1) throw bad(name, `expected a positive integer, got "${raw}"`);
  return Number(raw);
}

export function choice<T extends string>(name: string, allowed: readonly T[], opts: { required: true }): T;
export function choice<T extends string>(
  name: string,
  allowed: readonly T[],
  opts?: { required?: false },
): T | undefined;
export function choice<T extends string>(
  name: string,
  allowed: readonly T[],
  opts: { required?: boolean } = {},
): T | undefined {
  const raw = opts.required ? requiredText(name) : optionalText(name);
  if (raw === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw bad(name, `must be one of ${allowed.join(', ')} (got "${raw}")`);
  }
  return raw as T;
}

/** A list given one per line, or separated by commas or spaces. */
export function list(name: string): string[] | undefined {
  const raw = optionalText(name);
  if (raw === undefined) return undefined;
  return raw.split(/[\s,]+/).filter(Boolean);
}

/** A JSON object given inline (e.g. an output of an earlier job). */
export function jsonObject(name: string): Record<string, unknown> | undefined {
  const raw = optionalText(name);
  if (raw === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (e) {
    throw bad(name, `not valid JSON: ${(e as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw bad(name, 'must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

/**
 * Config overrides by dotted key: `config-overrides` (a JSON object such as
 * {"compute.tpu_vm.zones": ["us-east5-a"]}), then the named shortcuts `backend`, `store` and `forge`.
 * The engine validates them like the file, naming the key on error.
 */
export function configOverrides(): ConfigOverrides {
  const overrides: ConfigOverrides = { ...(jsonObject('config-overrides') ?? {}) };
  for (const [input, key] of [
    ['backend', 'compute.backend'],
    ['store', 'store.kind'],
    ['forge', 'forge.kind'],
  ] as const) {
    const value = optionalText(input);
    if (value !== undefined) overrides[key] = value;
  }
  return overrides;
}
