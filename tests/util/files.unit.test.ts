import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { appendLineDurable, readJson, readJsonLines, writeJsonAtomic } from '../../src/util/files.js';
import { tempDir } from '../helpers/paths.js';

const t = tempDir();
afterAll(t.cleanup);

describe('files', () => {
  it('writes JSON atomically and reads it back', () => {
    const p = join(t.dir, 'a', 'b.json');
    writeJsonAtomic(p, { x: 1 });
    expect(readJson(p)).toEqual({ x: 1 });
  });

  it('names the file on bad JSON', () => {
    const p = join(t.dir, 'bad.json');
    writeFileSync(p, '{nope');
    expect(() => readJson(p)).toThrow(`${p}: invalid JSON`);
  });

  it('drops a torn last line of a JSON-lines file but rejects a bad line in the middle', () => {
    const p = join(t.dir, 'j.jsonl');
    appendLineDurable(p, JSON.stringify({ n: 1 }));
    appendLineDurable(p, JSON.stringify({ n: 2 }));
    appendFileSync(p, '{"n": 3, "tor');
    expect(readJsonLines(p)).toEqual({ rows: [{ n: 1 }, { n: 2 }], tornTail: true });
    writeFileSync(p, `${readFileSync(p, 'utf8')}\n{"n":4}\n`);
    expect(() => readJsonLines(p)).toThrow('line 3 is not valid JSON');
  });
});
