import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** This checkout; a bench bundled elsewhere (bench/bundle.mjs) names it, since its own folder is a temp one. */
export const REPO_ROOT = process.env.HILLCLIMB_BENCH_REPO_ROOT ?? join(import.meta.dirname, '..', '..');
export const FIXTURES = join(REPO_ROOT, 'tests', 'fixtures');
/** Real profiler traces from public projects (see SOURCES.md there). */
export const REAL_TRACES = join(REPO_ROOT, 'tests', 'fixtures', 'real-traces');
export const CLI = join(REPO_ROOT, 'bin', 'hillclimb.js');

/** A fresh temp folder, removed by the returned cleanup. */
export function tempDir(prefix = 'hc-test-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
