// Runs a TypeScript bench (Node 20 cannot run TypeScript directly): esbuild bundles the entry into one
// ESM file, with a real `require` for the CommonJS dependencies (execa's) an ESM bundle pulls in.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

/** Bundle `entry` (a .ts file) into `outfile`. */
export async function bundleBench(entry, outfile) {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
    banner: {
      js: "import { createRequire as __hcCreateRequire } from 'node:module'; const require = __hcCreateRequire(import.meta.url);",
    },
  });
}

/**
 * Bundle `entry` into a temporary file and import it in this process (its arguments are ours). The file
 * goes under the checkout's node_modules/.cache, so code that finds hillclimb's package.json above the
 * running file (the loop's version stamp) finds this checkout's.
 */
export async function runBench(entry) {
  const cache = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  const out = mkdtempSync(join(cache, 'hc-bench-'));
  const outfile = join(out, basename(entry).replace(/\.ts$/, '.mjs'));
  try {
    await bundleBench(entry, outfile);
    await import(pathToFileURL(outfile).href);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}
