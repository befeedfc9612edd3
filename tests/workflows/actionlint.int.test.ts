// actionlint over every workflow, and over the bad fixture, to show the linter does catch what it should.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/paths.js';
import { actionlint } from './actionlint.js';

const WORKFLOWS = join(REPO_ROOT, '.github', 'workflows');

describe('actionlint', () => {
  for (const file of readdirSync(WORKFLOWS)
    .filter((f) => f.endsWith('.yml'))
    .sort()) {
    it(`${file} is clean`, async () => {
      expect(await actionlint(join(WORKFLOWS, file))).toEqual([]);
    });
  }

  it('flags the untrusted expressions in the bad fixture', async () => {
    const found = await actionlint(join(import.meta.dirname, 'fixtures', 'bad-loop.yml'));
    expect(found.some((f) => f.includes('"github.event.issue.title" is potentially untrusted'))).toBe(true);
  });
});
