// Builds nektos/act once before the workflow tests (scripts/build-act.mjs; minutes the first time in a
// checkout, nothing afterwards), so the test files, which run in parallel, find it built. Without Go the
// tests skip, each saying why; a failed build fails the run here.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ACTION_FIXTURES } from '../../helpers/act.js';

export default function setup(): void {
  if (!existsSync(ACTION_FIXTURES)) {
    process.stderr.write(
      `workflow tests: no ${ACTION_FIXTURES}, so the pinned artifact actions are the stand-ins of tests/workflows/act/stand-ins (its README says what only the real actions show)\n`,
    );
  }
  if (process.env.HILLCLIMB_ACT_BINARY) return;
  const started = Date.now();
  const r = spawnSync(
    process.execPath,
    [join(import.meta.dirname, '..', '..', '..', 'scripts', 'build-act.mjs')],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  if (r.status === 3) return;
  if (r.status !== 0) throw new Error(`scripts/build-act.mjs failed (exit ${r.status ?? r.signal})`);
  const seconds = (Date.now() - started) / 1000;
  if (seconds > 5) process.stderr.write(`workflow tests: act ready after ${seconds.toFixed(0)} s\n`);
}
