// Lower modules never import higher ones (DESIGN.md "Data flows one way"). Each top-level folder of
// src/ has a rank; a file may import only from folders of a lower rank or its own folder.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/paths.js';

const RANK: Record<string, number> = {
  util: 0,
  exec: 1,
  git: 2,
  env: 2,
  config: 3,
  workspace: 4,
  evidence: 4,
  store: 4,
  forge: 5,
  compute: 5,
  agent: 5,
  report: 6,
  loop: 7,
  doctor: 7,
  init: 7,
  cli: 8,
  actions: 8,
};

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

const SRC = join(REPO_ROOT, 'src');
/** A git process started outside src/git: a literal `git` command, or a git binary defaulted to `git`. */
const RUNS_GIT = /\b(?:run|spawn|execa|execFile)\(\s*['"`]git['"`]|\?\?\s*['"`]git['"`]/;

describe('module layering', () => {
  it('every src folder has a rank', () => {
    const folders = readdirSync(SRC).filter((n) => statSync(join(SRC, n)).isDirectory());
    expect(folders.filter((f) => RANK[f] === undefined)).toEqual([]);
  });

  it('no module imports a higher one, and only src/exec spawns processes', () => {
    const violations: string[] = [];
    for (const file of files(SRC)) {
      const from = relative(SRC, file).split('/')[0]!;
      const text = readFileSync(file, 'utf8');
      const spawner = /from '(node:child_process|execa)'/.exec(text)?.[1];
      if (spawner && from !== 'exec') {
        violations.push(`${relative(REPO_ROOT, file)} imports ${spawner} (use src/exec)`);
      }
      for (const m of text.matchAll(/^(?:import|export)[^'"]*from '(\.{1,2}\/[^']+)'/gm)) {
        const path = resolve(file, '..', m[1]!);
        // The JSON Schemas are data every rank may read (config/schema.ts bundles hillclimb.yml's).
        if (/^schemas\/[^/]+\.json$/.test(relative(REPO_ROOT, path))) continue;
        const target = relative(SRC, path).split('/')[0]!;
        if (target !== from && (RANK[target] ?? 99) >= (RANK[from] ?? -1)) {
          violations.push(`${relative(REPO_ROOT, file)} (${from}) imports ${m[1]} (${target})`);
        }
      }
    }
    expect(violations).toEqual([]);
  });

  it('only src/git starts git: no other file runs a literal git command or defaults a git binary', () => {
    // runGit (src/git/command.ts) gives every git call the same non-interactive environment and its
    // timeout; a second runner drifts (three did before src/git). doctor's `git --version` probe goes
    // through its generic tool check, which names no git command at a call site.
    const violations = files(SRC)
      .filter((file) => !['git', 'exec'].includes(relative(SRC, file).split('/')[0]!))
      .filter((file) => RUNS_GIT.test(readFileSync(file, 'utf8')))
      .map((file) => relative(REPO_ROOT, file));
    expect(violations).toEqual([]);
  });

  it('the git check catches a file that runs git itself', () => {
    expect(RUNS_GIT.test("await run('git', ['push'], opts)")).toBe(true);
    expect(RUNS_GIT.test("run(opts.gitBinary ?? 'git', args)")).toBe(true);
    expect(RUNS_GIT.test("await runGit(['push'], opts)")).toBe(false);
  });
});
