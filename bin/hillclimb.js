#!/usr/bin/env node
// The hillclimb CLI. The engine is bundled to dist/cli.js by `npm run build` (run by `npm install`).
import { existsSync } from 'node:fs';

const bundle = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(bundle)) {
  process.stderr.write(
    'error: dist/cli.js is missing\nhint: run npm install (or npm run build) in the hillclimb folder\n',
  );
  process.exit(2);
}
await import(bundle.href);
