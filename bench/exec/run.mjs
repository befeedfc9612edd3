// Runs bench/exec/exec-bench.ts: bundles it with esbuild into a temp file (Node 20 cannot run
// TypeScript directly), then imports it. Arguments after `--` are passed through.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const out = mkdtempSync(join(tmpdir(), 'hc-bench-exec-'));
const outfile = join(out, 'exec-bench.mjs');
try {
  await build({
    entryPoints: [join(here, 'exec-bench.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
    // execa's CommonJS dependencies need a real `require` inside an ESM bundle.
    banner: {
      js: "import { createRequire as __hcCreateRequire } from 'node:module'; const require = __hcCreateRequire(import.meta.url);",
    },
  });
  await import(pathToFileURL(outfile).href);
} finally {
  rmSync(out, { recursive: true, force: true });
}
