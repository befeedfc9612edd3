// Runs bench/search/search-bench.ts (bundled by bench/bundle.mjs). Arguments after `--` are passed through.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runBench } from '../bundle.mjs';

await runBench(join(dirname(fileURLToPath(import.meta.url)), 'search-bench.ts'));
