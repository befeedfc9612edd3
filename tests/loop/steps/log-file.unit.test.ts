// The prompt's recent log entries are cut at the one heading definition the writer and the lint use.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { recentLogEntries } from '../../../src/loop/steps/log-file.js';
import { appendLogEntry, headingNumbers, renderLogEntry } from '../../../src/report/log-entry.js';
import { REPO_ROOT } from '../../helpers/paths.js';
import { IMPROVED, measured, noOp } from '../../report/builders.js';

describe('recentLogEntries', () => {
  it('returns the last n entries the writer appended, oldest first', () => {
    let log = appendLogEntry(undefined, renderLogEntry(measured(IMPROVED)));
    log = appendLogEntry(log, renderLogEntry(noOp()));
    log = appendLogEntry(
      log,
      `${renderLogEntry(measured(IMPROVED))}\n### Iteration notes\n\nnot a heading\n`,
    );
    const entries = recentLogEntries(log, 2);
    expect(entries).toHaveLength(2);
    const numbers = headingNumbers(log).map((h) => String(h.number));
    expect(numbers).toHaveLength(3);
    expect(entries.map((e) => e.split('\n', 1)[0]!.match(/^### Iteration (\d+)/)?.[1])).toEqual(
      numbers.slice(1),
    );
    // A line that only looks like a heading (no number) stays inside its entry, as the lint reads it.
    expect(entries[1]).toContain('not a heading');
    expect(recentLogEntries(log, 0)).toEqual([]);
    expect(recentLogEntries(log, 9)).toHaveLength(3);
  });

  it('the heading is written down only in src/report/log-entry.ts', () => {
    const found: string[] = [];
    const scan = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const p = join(dir, name);
        if (statSync(p).isDirectory()) scan(p);
        else if (p.endsWith('.ts') && !p.endsWith(join('report', 'log-entry.ts'))) {
          readFileSync(p, 'utf8')
            .split('\n')
            .forEach((line, i) => {
              const code = line.trimStart();
              if (/### Iteration/.test(line) && !code.startsWith('*') && !code.startsWith('//')) {
                found.push(`${relative(REPO_ROOT, p)}:${i + 1}`);
              }
            });
        }
      }
    };
    scan(join(REPO_ROOT, 'src'));
    expect(found).toEqual([]);
  });
});
