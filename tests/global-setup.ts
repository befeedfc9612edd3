// Builds dist/cli.js once, so tests that spawn the real CLI run what users run.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export default function setup(): void {
  execFileSync(process.execPath, [join(import.meta.dirname, '..', 'scripts', 'build.mjs')], {
    stdio: 'inherit',
  });
}
