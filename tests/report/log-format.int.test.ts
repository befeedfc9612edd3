// `npm run format` runs biome over every markdown file, the hill-climb log included: a rendered log must
// come out unchanged, or formatting would turn harness lines into hand edits.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { appendLogEntry, renderLogEntry } from '../../src/report/log-entry.js';
import { REPO_ROOT } from '../helpers/paths.js';
import { everyVerdict } from './builders.js';

describe('the rendered log under the project formatter', () => {
  it('is left unchanged by biome', () => {
    let text: string | undefined;
    everyVerdict().forEach(([, ev], i) => {
      ev.iteration = i + 1;
      text = appendLogEntry(text, renderLogEntry(ev));
    });
    const biome = join(REPO_ROOT, 'node_modules', '@biomejs', 'biome', 'bin', 'biome');
    const formatted = execFileSync(
      process.execPath,
      [biome, 'format', '--stdin-file-path=docs/hillclimb-log.md'],
      {
        cwd: REPO_ROOT,
        input: text,
        encoding: 'utf8',
      },
    );
    expect(formatted).toBe(text);
  });
});
