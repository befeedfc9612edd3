// Runs bench/tools/tools-bench.ts (bundled by bench/bundle.mjs). Arguments after `--` are passed through.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runBench } from '../bundle.mjs';

// The toy target's files are found from the checkout (tests/helpers/paths.ts), not the bundle's folder.
process.env.HILLCLIMB_BENCH_REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
await runBench(join(dirname(fileURLToPath(import.meta.url)), 'tools-bench.ts'));
