// The action packages themselves: metadata every action needs (node24, bundled entries, descriptions),
// and committed bundles that are exactly what `npm run build` makes from the sources.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/paths.js';
import { ACTIONS, actionMetadata } from './harness.js';

const execFileP = promisify(execFile);

describe('action packages', () => {
  it('every folder under actions/ is one of the actions, with action.yml and src/main.ts', () => {
    const folders = readdirSync(join(REPO_ROOT, 'actions')).sort();
    expect(folders).toEqual([...ACTIONS].sort());
    for (const a of ACTIONS) {
      expect(existsSync(join(REPO_ROOT, 'actions', a, 'action.yml')), a).toBe(true);
      expect(existsSync(join(REPO_ROOT, 'actions', a, 'src', 'main.ts')), a).toBe(true);
    }
  });

  it.each(ACTIONS)('%s runs on node24 from its committed bundle, inputs and outputs described', (a) => {
    const meta = actionMetadata(a);
    expect(meta.name).toBe(`hillclimb ${a}`);
    expect(meta.description.length).toBeGreaterThan(80);
    expect(meta.runs.using).toBe('node24');
    expect(meta.runs.main).toBe('dist/index.js');
    expect(existsSync(join(REPO_ROOT, 'actions', a, meta.runs.main))).toBe(true);
    if (a === 'tpu') {
      expect(meta.runs).toMatchObject({ post: 'dist/post.js', 'post-if': 'always()' });
      expect(existsSync(join(REPO_ROOT, 'actions', a, 'dist', 'post.js'))).toBe(true);
    } else {
      expect(meta.runs.post).toBeUndefined();
    }
    for (const [name, spec] of [...Object.entries(meta.inputs), ...Object.entries(meta.outputs)]) {
      expect(name, `${a}: ${name}`).toMatch(/^[a-z][a-z0-9]*(-[a-z0-9]+)*$/);
      expect(spec.description.length, `${a}: ${name}`).toBeGreaterThan(5);
    }
  });

  it('the committed bundles are what the build makes from the sources', async () => {
    // The test run's global setup has just rebuilt every bundle from the working tree (scripts/build.mjs),
    // so a bundle that differs from the committed one is stale: rebuild (npm run build) and commit it.
    // In CI, ci.yml also runs `node scripts/build.mjs --check` before anything rebuilds.
    const r = await execFileP('git', ['status', '--porcelain', '--', 'actions/*/dist/*'], { cwd: REPO_ROOT });
    expect(r.stdout, 'stale action bundles: run npm run build and commit actions/*/dist').toBe('');
  });
});
