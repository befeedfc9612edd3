// zizmor, the GitHub Actions security auditor (PyPI, installed into the venv by `hillclimb setup --dev`),
// over every workflow, offline. It must report nothing; the findings the workflows silence inline or
// in .github/zizmor.yml are each explained in docs/security.md.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/paths.js';

const ZIZMOR = join(REPO_ROOT, '.venv', 'bin', 'zizmor');
const WORKFLOWS = join(REPO_ROOT, '.github', 'workflows');

function audit(): Array<{ ident: string }> {
  const out = execFileSync(ZIZMOR, ['--offline', '--format', 'json', WORKFLOWS], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return JSON.parse(out) as Array<{ ident: string }>;
}

describe('zizmor', () => {
  it('finds nothing in the workflows', () => {
    expect(audit().map((f) => f.ident)).toEqual([]);
  });

  it('every silenced finding is explained in docs/security.md', () => {
    const silenced = new Set<string>();
    for (const file of readdirSync(WORKFLOWS).filter((f) => f.endsWith('.yml'))) {
      for (const m of readFileSync(join(WORKFLOWS, file), 'utf8').matchAll(/zizmor: ignore\[([a-z-]+)\]/g)) {
        silenced.add(m[1]!);
      }
    }
    for (const m of readFileSync(join(REPO_ROOT, '.github', 'zizmor.yml'), 'utf8').matchAll(
      /^ {2}([a-z-]+):$/gm,
    )) {
      silenced.add(m[1]!);
    }
    expect([...silenced].sort()).toEqual(['adhoc-packages', 'dangerous-triggers', 'self-repository']);
    const doc = readFileSync(join(REPO_ROOT, 'docs', 'security.md'), 'utf8');
    for (const rule of silenced) expect(doc, rule).toContain(`\`${rule}\``);
  });
});
