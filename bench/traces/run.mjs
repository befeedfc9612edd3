// `npm run bench:traces [-- --quick] [-- --keep] [-- --out DIR]`: bundles the TypeScript benchmark with
// esbuild (Node 20 cannot run .ts) into bench-out/traces/ and runs it. See bench/traces/main.ts.
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleBench } from '../bundle.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const outDir = join(root, 'bench-out', 'traces');
mkdirSync(outDir, { recursive: true });
const outfile = join(outDir, 'bench.mjs');
await bundleBench(join(root, 'bench', 'traces', 'main.ts'), outfile);
const r = spawnSync(process.execPath, [outfile, ...process.argv.slice(2)], { stdio: 'inherit', cwd: root });
process.exit(r.status ?? 1);
