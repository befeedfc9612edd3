/**
 * The structured result an agent writes: `{hypothesis, summary, next_idea}`, prose for the PR and the
 * log. Validated for shape and size only; the harness never reads a number from it. A missing or bad
 * result is a `resultProblem` on the outcome, never an exception: the iteration still counts.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import type { AgentResult } from './agent.js';

export const RESULT_FIELDS = ['hypothesis', 'summary', 'next_idea'] as const;
/** Matches what the iteration prompt asks for ("each under 1,500 characters"). */
export const MAX_RESULT_FIELD_CHARS = 1500;
/** A result file larger than this is not prose; refuse before parsing. */
export const MAX_RESULT_FILE_BYTES = 64 * 1024;

export type ResultCheck =
  | { result: AgentResult; problem?: undefined }
  | { result?: undefined; problem: string };

/**
 * The result's JSON Schema, in the strict subset structured-output APIs accept (every property
 * required, no additional properties). Length limits are checked by validateAgentResult.
 */
export const RESULT_JSON_SCHEMA = {
  type: 'object',
  properties: {
    hypothesis: { type: 'string', description: 'The one hypothesis this change tests, and its mechanism.' },
    summary: { type: 'string', description: 'What was changed, in a few sentences.' },
    next_idea: { type: 'string', description: 'The most promising idea for the next iteration.' },
  },
  required: [...RESULT_FIELDS],
  additionalProperties: false,
} as const;

/** Check a parsed value. Extra keys are ignored; each field must be a non-empty string within the cap. */
export function validateAgentResult(value: unknown): ResultCheck {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { problem: `expected a JSON object with ${RESULT_FIELDS.join(', ')}` };
  }
  const record = value as Record<string, unknown>;
  const out: Partial<AgentResult> = {};
  const problems: string[] = [];
  for (const key of RESULT_FIELDS) {
    const v = record[key];
    if (v === undefined) problems.push(`${key} is missing`);
    else if (typeof v !== 'string')
      problems.push(`${key} must be a string (got ${Array.isArray(v) ? 'array' : typeof v})`);
    else if (v.trim() === '') problems.push(`${key} is empty`);
    else if (v.length > MAX_RESULT_FIELD_CHARS)
      problems.push(`${key} is ${v.length} characters (max ${MAX_RESULT_FIELD_CHARS})`);
    else if (v.includes('\0')) problems.push(`${key} contains a NUL character`);
    else out[key] = v.trim();
  }
  if (problems.length > 0) return { problem: problems.join('; ') };
  return { result: out as AgentResult };
}

/** Parse JSON text and validate it. */
export function parseAgentResult(text: string): ResultCheck {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { problem: `not valid JSON (${(e as Error).message})` };
  }
  return validateAgentResult(value);
}

/** Read and validate the result file the agent was asked to write. */
export function readAgentResult(file: string): ResultCheck {
  if (!existsSync(file)) return { problem: `no result file at ${file}` };
  const size = statSync(file).size;
  if (size > MAX_RESULT_FILE_BYTES) {
    return { problem: `result file is ${size} bytes (max ${MAX_RESULT_FILE_BYTES})` };
  }
  const check = parseAgentResult(readFileSync(file, 'utf8'));
  return check.problem === undefined ? check : { problem: `result file ${file}: ${check.problem}` };
}

/**
 * A result embedded in an agent's final message: the whole message, or a ```json fenced block in it.
 * Used when the agent printed its result instead of (or as well as) writing the file.
 */
export function resultFromMessage(text: string): AgentResult | undefined {
  const candidates = [text.trim()];
  for (const m of text.matchAll(/```(?:json)?\s*\n([\s\S]*?)\n```/g)) candidates.push(m[1]!.trim());
  for (const c of candidates) {
    if (!c.startsWith('{')) continue;
    const check = parseAgentResult(c);
    if (check.result) return check.result;
  }
  return undefined;
}
