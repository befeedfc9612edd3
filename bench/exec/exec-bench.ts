/**
 * What src/exec costs per process: `run()` against a bare `child_process.spawn` that collects the
 * same output, measured in the same process, interleaved in rounds so machine load hits both alike.
 * Two workloads: 200 spawns of `true` (start-up cost) and 200 of `cat` printing a 1 MiB text file
 * (output capture: decoding, line splitting, redaction, the bounded tail).
 *
 *   npm run bench:exec [-- --spawns 200 --rounds 4]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { run } from '../../src/exec/exec.js';

const { values } = parseArgs({
  options: { spawns: { type: 'string', default: '200' }, rounds: { type: 'string', default: '4' } },
});
const spawns = Number(values.spawns);
const rounds = Number(values.rounds);

/** The floor: spawn, read both pipes to strings, wait for close. No timeouts, logs or redaction. */
function raw(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', () =>
      resolve(Buffer.concat(out).toString('utf8') + Buffer.concat(err).toString('utf8')),
    );
  });
}

async function timeMany(n: number, once: () => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await once();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

const dir = mkdtempSync(join(tmpdir(), 'hc-bench-exec-data-'));
try {
  const file = join(dir, 'mib.txt');
  const line = `${'x'.repeat(63)}\n`;
  writeFileSync(file, line.repeat((1024 * 1024) / line.length));
  const workloads: Array<[string, string, string[]]> = [
    ['true', 'true', []],
    ['1 MiB output', 'cat', [file]],
  ];
  const perRound = Math.max(1, Math.round(spawns / rounds));
  console.log(`exec bench: ${perRound * rounds} spawns per workload and side, ${rounds} interleaved rounds`);
  for (const [name, command, args] of workloads) {
    await timeMany(10, () => raw(command, args));
    await timeMany(10, () => run(command, args));
    let rawMs = 0;
    let runMs = 0;
    for (let r = 0; r < rounds; r++) {
      rawMs += await timeMany(perRound, () => raw(command, args));
      runMs += await timeMany(perRound, () => run(command, args));
    }
    const n = perRound * rounds;
    console.log(
      `${name.padEnd(14)} raw spawn ${(rawMs / n).toFixed(2)} ms/process, run() ${(runMs / n).toFixed(2)} ms/process, ratio ${(runMs / rawMs).toFixed(3)}`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
