import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  MAX_RESULT_FIELD_CHARS,
  MAX_RESULT_FILE_BYTES,
  parseAgentResult,
  RESULT_JSON_SCHEMA,
  readAgentResult,
  resultFromMessage,
  validateAgentResult,
} from '../../src/agent/result.js';
import { tempDir } from '../helpers/paths.js';

const OK = { hypothesis: 'h', summary: 's', next_idea: 'n' };
const t = tempDir();
afterAll(() => t.cleanup());

describe('validateAgentResult', () => {
  it('accepts the three fields, trims them and ignores extra keys', () => {
    expect(validateAgentResult({ ...OK, hypothesis: '  h  ', speedup: '10x' })).toEqual({ result: OK });
  });

  it.each([
    [null, 'expected a JSON object'],
    [[OK], 'expected a JSON object'],
    ['text', 'expected a JSON object'],
    [{ summary: 's', next_idea: 'n' }, 'hypothesis is missing'],
    [{ ...OK, summary: 3 }, 'summary must be a string (got number)'],
    [{ ...OK, summary: ['a'] }, 'summary must be a string (got array)'],
    [{ ...OK, next_idea: '   ' }, 'next_idea is empty'],
    [
      { ...OK, hypothesis: 'x'.repeat(MAX_RESULT_FIELD_CHARS + 1) },
      `hypothesis is 1501 characters (max 1500)`,
    ],
    [{ ...OK, summary: 'a\0b' }, 'summary contains a NUL character'],
  ])('rejects %j: %s', (value, problem) => {
    expect(validateAgentResult(value).problem).toContain(problem);
  });

  it('lists every problem at once', () => {
    expect(validateAgentResult({ hypothesis: 1 }).problem).toBe(
      'hypothesis must be a string (got number); summary is missing; next_idea is missing',
    );
  });

  it('accepts a field of exactly the maximum length', () => {
    expect(validateAgentResult({ ...OK, summary: 'x'.repeat(MAX_RESULT_FIELD_CHARS) }).result).toBeDefined();
  });
});

describe('reading results', () => {
  it('reports a missing file, bad JSON and an oversized file as problems, never throwing', () => {
    expect(readAgentResult(join(t.dir, 'none.json')).problem).toMatch(/no result file/);
    const bad = join(t.dir, 'bad.json');
    writeFileSync(bad, '{"hypothesis": ');
    expect(readAgentResult(bad).problem).toMatch(/bad\.json: not valid JSON/);
    const big = join(t.dir, 'big.json');
    writeFileSync(big, JSON.stringify({ ...OK, pad: 'x'.repeat(MAX_RESULT_FILE_BYTES) }));
    expect(readAgentResult(big).problem).toMatch(/bytes \(max 65536\)/);
    const good = join(t.dir, 'good.json');
    writeFileSync(good, JSON.stringify(OK));
    expect(readAgentResult(good)).toEqual({ result: OK });
    expect(parseAgentResult('[]').problem).toMatch(/JSON object/);
  });

  it('finds a result in a final message: the whole message or a fenced json block', () => {
    expect(resultFromMessage(JSON.stringify(OK))).toEqual(OK);
    expect(resultFromMessage(`Done.\n\n\`\`\`json\n${JSON.stringify(OK)}\n\`\`\`\n`)).toEqual(OK);
    expect(resultFromMessage('I made it faster.')).toBeUndefined();
    expect(resultFromMessage('{"hypothesis": "only"}')).toBeUndefined();
  });

  it('publishes a strict schema (all required, no extra properties) for structured output', () => {
    expect(RESULT_JSON_SCHEMA.required).toEqual(['hypothesis', 'summary', 'next_idea']);
    expect(RESULT_JSON_SCHEMA.additionalProperties).toBe(false);
  });
});
