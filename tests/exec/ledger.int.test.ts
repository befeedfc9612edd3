/**
 * The process ledger (issue 35): what a killed loop left running is ended by the next loop on the
 * repository, and nothing else is. The killed harness is stood in for by a copy of its ledger taken
 * while its commands run (what the file holds at a SIGKILL), swept while they are still running.
 */
import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { run } from '../../src/exec/exec.js';
import { openProcessLedger, sweepProcessLedger } from '../../src/exec/ledger.js';
import { tempDir } from '../helpers/paths.js';

const t = tempDir('hc-ledger-');
afterAll(t.cleanup);

/** Pids alive (not zombies) whose command line names `marker`. */
function alive(marker: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (!readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(marker)) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (stat[stat.lastIndexOf(')') + 2] !== 'Z') out.push(Number(name));
    } catch {
      // gone
    }
  }
  return out;
}

/** The promise's outcome, rejection included, with a handler attached at once. */
function settled(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (value) => ({ resolved: value }),
    (error: unknown) => error,
  );
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting until ${what}`);
}

describe('the process ledger', () => {
  it('ends every process of the groups a killed loop left, and removes itself', async () => {
    const file = join(t.dir, 'processes.json');
    const left = join(t.dir, 'left.json');
    const marker = `hc-ledger-${process.pid}-${Date.now()}`;
    const close = openProcessLedger(file);
    // A command with a child in the background, as an unsandboxed agent or a test run might leave.
    // Its end is caught now: the sweep below kills it while this test awaits something else, and a
    // rejection with no handler yet is an unhandled error however the test ends.
    const running = settled(
      run('sh', ['-c', `sleep 300 & sleep 300; : ${marker}`], { allowedExitCodes: 'any' }),
    );
    await until(() => alive(marker).length === 1, 'the command runs');
    const doc = JSON.parse(readFileSync(file, 'utf8'));
    expect(doc.processes).toEqual([expect.objectContaining({ command: expect.stringContaining(marker) })]);
    copyFileSync(file, left); // the file as a SIGKILL would leave it
    close();
    expect(existsSync(file)).toBe(false);

    const groupMembers = () => {
      const pid = doc.processes[0].pid as number;
      return readdirSync('/proc').filter((n) => {
        try {
          const s = readFileSync(`/proc/${n}/stat`, 'utf8');
          const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
          return f[0] !== 'Z' && Number(f[2]) === pid;
        } catch {
          return false;
        }
      });
    };
    await until(() => groupMembers().length === 3, 'sh and its two sleeps run');
    const swept = sweepProcessLedger(left);
    expect(swept.ended).toEqual([{ pid: doc.processes[0].pid, command: expect.stringContaining(marker) }]);
    await until(() => groupMembers().length === 0, 'the group is gone');
    expect(String(await running)).toMatch(/killed by SIGKILL/);
    expect(existsSync(left)).toBe(false);
  });

  it('never signals a pid the kernel has given to another process, nor one from another boot', async () => {
    const marker = `hc-ledger-other-${process.pid}-${Date.now()}`;
    // One process that never forks (a shell's child holds its command line until it execs, and a busy
    // machine can catch that window).
    const other = settled(
      run(process.execPath, ['-e', 'setTimeout(() => {}, 300_000)', marker], {
        allowedExitCodes: 'any',
        timeoutMs: 60_000,
      }),
    );
    await until(() => alive(marker).length === 1, 'the other process runs');
    const [pid] = alive(marker);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const start = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const ledger = (processes: unknown[], boot = bootId) =>
      JSON.stringify({ schema: 'hillclimb.processes/v1', bootId: boot, processes });
    const file = join(t.dir, 'stale.json');
    // The same pid with another start time: an earlier process's pid, reused.
    writeFileSync(file, ledger([{ pid, start: start - 1, command: 'earlier' }]));
    expect(sweepProcessLedger(file).ended).toEqual([]);
    // The right pid and start, but written in another boot.
    writeFileSync(file, ledger([{ pid, start, command: 'earlier' }], 'another-boot'));
    expect(sweepProcessLedger(file).ended).toEqual([]);
    // Garbage.
    writeFileSync(file, '{"schema": 1');
    expect(sweepProcessLedger(file).ended).toEqual([]);
    expect(alive(marker)).toEqual([pid]);
    // And the same entry as it was: ended (the control for the cases above).
    writeFileSync(file, ledger([{ pid, start, command: 'this one' }]));
    expect(sweepProcessLedger(file).ended).toEqual([{ pid, command: 'this one' }]);
    expect(String(await other)).toMatch(/killed by SIGKILL/);
  });
});
