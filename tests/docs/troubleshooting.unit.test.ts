// docs/troubleshooting.md quotes what hillclimb prints. Each quoted `error:` / `hint:` / `warning:` line is
// split at its <placeholders>; every literal piece must occur in the sources (src/, or the contract
// servers for GitHub's and the Hub's own texts) whole, or as two strings joined — a message is often
// composed (`${hint} (the agent log is ${file})`). Cut greedily into the longest runs found there, a
// piece may have at most two runs: a paraphrase falls apart into many.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/paths.js';

const doc = readFileSync(join(REPO_ROOT, 'docs', 'troubleshooting.md'), 'utf8');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return tsFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/**
 * The sources' text with string concatenations joined ('a ' + 'b' → 'a b') and escaped quotes
 * unescaped. Interpolations (`${…}`) stay as they are: no piece of the page contains one, so a piece
 * cannot match across them.
 */
function haystack(): string {
  return [...tsFiles(join(REPO_ROOT, 'src')), ...tsFiles(join(REPO_ROOT, 'tests', 'helpers'))]
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n')
    .replace(/(['"`])\s*\+\s*\n?\s*(['"`])/g, '')
    .replace(/\\(['"`$])/g, '$1');
}

/** Cut `piece` into the longest prefixes found in `text`, one after another. */
function longestRuns(piece: string, text: string): string[] {
  const runs: string[] = [];
  let rest = piece;
  while (rest.length > 0) {
    // Being found is monotonic in the prefix length: binary search for the longest.
    let lo = 1;
    let hi = rest.length;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (text.includes(rest.slice(0, mid))) lo = mid;
      else hi = mid - 1;
    }
    runs.push(rest.slice(0, lo));
    rest = rest.slice(lo);
  }
  return runs;
}

/** The quoted lines: inside ```text fences, those starting with error:, hint: or warning:. */
function quotedLines(): string[] {
  const blocks = [...doc.matchAll(/```text\n([\s\S]*?)```/g)].map((m) => m[1]!);
  return blocks.flatMap((b) => b.split('\n')).filter((l) => /^(?:error|hint|warning): /.test(l));
}

describe('docs/troubleshooting.md', () => {
  const text = haystack();
  const lines = quotedLines();

  it('quotes messages', () => {
    expect(lines.length).toBeGreaterThan(20);
  });

  it.each(lines)('%s', (line) => {
    const body = line.replace(/^(?:error|hint|warning): /, '');
    // Punctuation at a seam (`: ` before a placeholder) belongs to the composition, not the phrase.
    const pieces = body
      .split(/<[^>]*>/)
      .map((p) => p.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N})"]+$/gu, ''))
      .filter((p) => p.length >= 10);
    for (const piece of pieces) {
      const runs = longestRuns(piece, text);
      expect(runs.length, `${JSON.stringify(piece)} → ${JSON.stringify(runs)}`).toBeLessThanOrEqual(2);
    }
  });

  it('is linked from the README and the setup guide', () => {
    expect(readFileSync(join(REPO_ROOT, 'README.md'), 'utf8')).toContain('(docs/troubleshooting.md)');
    expect(readFileSync(join(REPO_ROOT, 'docs', 'setup.md'), 'utf8')).toContain('(troubleshooting.md)');
  });
});
