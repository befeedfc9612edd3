// Lower modules never import higher ones (DESIGN.md "Data flows one way"). Each top-level folder of
// src/ has a rank; a file may import only from folders of a lower rank or its own folder.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/paths.js';

const RANK: Record<string, number> = {
  util: 0,
  exec: 1,
  project: 2,
  git: 2,
  config: 3,
  trace: 3,
  stats: 4,
  workspace: 4,
  store: 4,
  evidence: 5,
  search: 5,
  forge: 6,
  compute: 6,
  agent: 6,
  report: 7,
  loop: 8,
  doctor: 8,
  init: 8,
  cli: 9,
  actions: 9,
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

/**
 * Imports of a backend implementation (src/compute/backends/*) from outside src/compute: the loop and
 * everything above it see only the Backend interface, built through src/compute/factory.ts.
 */
function backendImplementationImports(file: string, text: string): string[] {
  if (relative(SRC, file).split('/')[0] === 'compute') return [];
  return [...text.matchAll(/^(?:import|export)[^'"]*from '(\.{1,2}\/[^']+)'/gm)]
    .map((m) => m[1]!)
    .filter((spec) => relative(SRC, resolve(file, '..', spec)).startsWith('compute/backends/'));
}

/** Imports that reach into another src module past its public entry (src/<module>/index.ts). */
function deepImports(file: string, text: string): string[] {
  const rel = relative(SRC, file);
  const from = rel.startsWith('..') ? undefined : rel.split('/')[0];
  return [...text.matchAll(/^(?:import|export)[^'"]*from '(\.{1,2}\/[^']+)'/gm)]
    .map((m) => m[1]!)
    .filter((spec) => {
      const target = relative(SRC, resolve(file, '..', spec));
      if (target.startsWith('..')) return false; // outside src: the JSON Schemas
      const [module, ...rest] = target.split('/');
      return module !== from && rest.join('/') !== 'index.js';
    });
}

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

  it('no file outside src/compute imports a backend implementation (drivers build backends through the factory)', () => {
    const violations = files(SRC).flatMap((file) =>
      backendImplementationImports(file, readFileSync(file, 'utf8')).map(
        (spec) => `${relative(REPO_ROOT, file)} imports ${spec} (use compute/factory.js)`,
      ),
    );
    expect(violations).toEqual([]);
  });

  it('the backend-implementation rule catches a loop driver importing the local backend', () => {
    const driver = join(SRC, 'loop', 'drivers', 'run.ts');
    const text = [
      "import type { Backend } from '../../compute/backend.js';",
      "import { buildBackend } from '../../compute/factory.js';",
      'import {',
      '  LocalBackend,',
      "} from '../../compute/backends/local.js';",
    ].join('\n');
    expect(backendImplementationImports(driver, text)).toEqual(['../../compute/backends/local.js']);
    // Inside src/compute the factory builds them: allowed.
    expect(
      backendImplementationImports(
        join(SRC, 'compute', 'factory.ts'),
        "import { LocalBackend } from './backends/local.js';",
      ),
    ).toEqual([]);
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
  it('another module is reached only through its public entry (index.ts)', () => {
    const actionSources = readdirSync(join(REPO_ROOT, 'actions'))
      .map((a) => join(REPO_ROOT, 'actions', a, 'src'))
      .filter((d) => existsSync(d));
    const violations = [...files(SRC), ...actionSources.flatMap(files)].flatMap((file) =>
      deepImports(file, readFileSync(file, 'utf8')).map(
        (spec) => `${relative(REPO_ROOT, file)} imports ${spec}`,
      ),
    );
    expect(violations).toEqual([]);
  });

  it('the entry rule catches a deep import and allows its own module and entries', () => {
    const driver = join(SRC, 'loop', 'drivers', 'run.ts');
    const text = [
      "import { Git } from '../../workspace/git.js';",
      "import { runGit } from '../../git/index.js';",
      "import { Bundle } from '../state/bundle.js';",
      "import schema from '../../../schemas/hillclimb.schema.json' with { type: 'json' };",
    ].join('\n');
    expect(deepImports(driver, text)).toEqual(['../../workspace/git.js']);
    const action = join(REPO_ROOT, 'actions', 'tpu', 'src', 'main.ts');
    expect(deepImports(action, "import { Git } from '../../../src/workspace/git.js';")).toEqual([
      '../../../src/workspace/git.js',
    ]);
    expect(deepImports(action, "import { Git } from '../../../src/workspace/index.js';")).toEqual([]);
  });

  it('a public entry only re-exports', () => {
    const notReExports: string[] = [];
    for (const module of readdirSync(SRC)) {
      const index = join(SRC, module, 'index.ts');
      if (!existsSync(index)) continue;
      const code = readFileSync(index, 'utf8')
        .replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '')
        .replace(/export (type )?\{[^}]*\} from '\.\/[^']+';/g, '')
        .trim();
      if (code !== '') notReExports.push(`src/${module}/index.ts: ${code.slice(0, 80)}`);
    }
    expect(notReExports).toEqual([]);
  });
});
