// The trust boundary between CI jobs: a later phase, on another machine, re-derives the candidate from
// git objects and drops results it is about to produce, so a bundle rewritten in the agent's job (or in
// the job that runs candidate code) cannot smuggle a protected edit, a verdict or a measurement through.

import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IterationEvidence } from '../../../src/evidence/record.js';
import { runPhase } from '../../../src/loop/drivers/phases.js';
import { memoryLogger } from '../../../src/util/log.js';
import { tempDir } from '../../helpers/paths.js';
import { gitIn, makeToyRepo, STANDARD_PATCHES, systemPython } from '../toy-repo.js';

const python = systemPython();
const RUN = 'trust-run';

function phase(
  repo: string,
  name: Parameters<typeof runPhase>[0],
  extra: Partial<Parameters<typeof runPhase>[1]> = {},
) {
  return runPhase(name, {
    configFile: join(repo, 'hillclimb.yml'),
    runId: RUN,
    iteration: 1,
    logger: memoryLogger(),
    ...extra,
  });
}

/** A fresh clone with only the bundle copied in: what a later CI job sees. */
function nextJob(from: string, to: string): string {
  execFileSync('git', ['clone', '--quiet', from, to]);
  const bundle = join('.hillclimb', 'runs', RUN, 'i001');
  cpSync(join(from, bundle), join(to, bundle), { recursive: true });
  return join(to, bundle, 'evidence.json');
}

function tamper(file: string, change: (ev: IterationEvidence) => void): void {
  const ev = JSON.parse(readFileSync(file, 'utf8')) as IterationEvidence;
  change(ev);
  writeFileSync(file, JSON.stringify(ev));
}

describe('phases across jobs', () => {
  const t = tempDir('hc-trust-');
  beforeAll(() => {
    process.env.HILLCLIMB_PYTHON = python;
  });
  afterAll(t.cleanup);

  it('a job with cloud credentials (remote-only) refuses the local backend before anything runs', async () => {
    const job = join(t.dir, 'cloud');
    const base = makeToyRepo(job, [STANDARD_PATCHES[0]!]);
    const err = await phase(job, 'accelerator-gate', { base, remoteOnly: true }).catch((e: unknown) => e);
    expect((err as Error).message).toBe(
      'this job holds cloud credentials, and compute.backend is local: candidate code would run here, beside them',
    );
    expect(existsSync(join(job, '.hillclimb', 'runs'))).toBe(false);
    // The same job on the backend the workflow routed it by goes on (here: a dry run on tpu-vm).
    const tpu = await phase(job, 'propose', {
      remoteOnly: true,
      dryRun: true,
      overrides: {
        'compute.backend': 'tpu-vm',
        'compute.tpu_vm': { project: 'p', zones: ['z'], accelerator_type: 'v5p-8', runtime_version: 'v2' },
      },
    });
    expect(tpu.evidence.candidate).toBeDefined();
  });

  it('a protected edit hidden behind a forged guard and verdict is caught again in the next job', async () => {
    const agentJob = join(t.dir, 'a1');
    const base = makeToyRepo(agentJob, [STANDARD_PATCHES[3]!]); // loosens the protected tolerance
    const proposed = await phase(agentJob, 'propose');
    expect(proposed.evidence.verdict).toBe('invalid');

    const file = nextJob(agentJob, join(t.dir, 'a2'));
    tamper(file, (ev) => {
      ev.verdict = 'improved';
      ev.verdictReasons = ['trust me'];
      ev.guard = {
        allowed: true,
        changedPaths: ['toy/kernel.py'],
        protectedTouched: [],
        outsideEditable: [],
        findings: [],
      };
      ev.candidate!.changedPaths = ['toy/kernel.py'];
      for (const s of ['guard', 'cpu-gate', 'measure', 'decide'] as const) {
        ev.steps[s] = { status: 'done', startedAt: ev.startedAt, finishedAt: ev.startedAt };
      }
    });
    const gate = await phase(join(t.dir, 'a2'), 'cpu-gate', { base });
    expect(gate.evidence.verdict).toBe('invalid');
    expect(gate.evidence.verdictReasons[0]).toContain('harness/check.py');
    expect(gate.evidence.guard?.protectedTouched).toEqual(['harness/check.py']);
    expect(gate.evidence.gates.cpu).toBeUndefined(); // the gate never ran on it
  });

  it("a bundle's own dry-run flag is not believed: the flag follows the job", async () => {
    const agentJob = join(t.dir, 'dry1');
    const base = makeToyRepo(agentJob, [STANDARD_PATCHES[0]!]);
    await phase(agentJob, 'propose');
    const file = nextJob(agentJob, join(t.dir, 'dry2'));
    // A forged "dry run" would make a real job's missing verdict look intended.
    tamper(file, (ev) => {
      ev.dryRun = true;
    });
    const gate = await phase(join(t.dir, 'dry2'), 'cpu-gate', { base });
    expect(gate.evidence.dryRun).toBeUndefined();
    expect(gate.evidence.gates.cpu?.status).toBe('passed');
  });

  it('a planted candidate slot and search record are dropped: they cannot rename the branch or hide the PR', async () => {
    const agentJob = join(t.dir, 'slot1');
    const base = makeToyRepo(agentJob, [STANDARD_PATCHES[0]!]);
    await phase(agentJob, 'propose');
    const file = nextJob(agentJob, join(t.dir, 'slot2'));
    tamper(file, (ev) => {
      ev.slot = { index: '../../../elsewhere' as unknown as number, of: 3 };
      ev.search = { role: 'loser', winner: 2, threshold: 1.02, screenRounds: 2, candidates: [] };
    });
    const gate = await phase(join(t.dir, 'slot2'), 'cpu-gate', { base });
    expect(gate.evidence.slot).toBeUndefined();
    expect(gate.evidence.search).toBeUndefined();
    expect(gate.evidence.candidate!.branch).toMatch(/\/i001$/);
  });

  it('a planted measurement is thrown away: the measuring job measures for itself', async () => {
    const agentJob = join(t.dir, 'b1');
    const base = makeToyRepo(agentJob, [STANDARD_PATCHES[2]!]); // no speed change
    await phase(agentJob, 'propose');
    await phase(agentJob, 'cpu-gate');

    const file = nextJob(agentJob, join(t.dir, 'b2'));
    tamper(file, (ev) => {
      ev.measurement = {
        metric: { path: 'measurements.fwd_bwd.median_ms', direction: 'lower', label: 'run time', unit: 'ms' },
        runs: [1, 2, 3, 4, 5].flatMap((i) => [
          {
            arm: 'A' as const,
            index: i,
            value: 100,
            mfu: null,
            exitCode: 0,
            durationMs: 1,
            metricsFile: 'x',
            logFile: 'x',
          },
          {
            arm: 'B' as const,
            index: i,
            value: 10,
            mfu: null,
            exitCode: 0,
            durationMs: 1,
            metricsFile: 'x',
            logFile: 'x',
          },
        ]),
        firstArm: 'A',
        mfu: { a: null, b: null },
        noise: { cv: null, champion_runs: 0 },
        looks: [],
      };
    });
    const measured = await phase(join(t.dir, 'b2'), 'measure', { base });
    const runs = measured.evidence.measurement!.runs;
    expect(runs.every((r) => r.value !== 100 && r.value !== 10)).toBe(true);
    expect(measured.evidence.verdict).not.toBe('improved');
  }, 120_000);

  it('a bundle whose champion is not the one the workflow expects is refused', async () => {
    const agentJob = join(t.dir, 'c1');
    makeToyRepo(agentJob, [STANDARD_PATCHES[0]!]);
    await phase(agentJob, 'propose');
    nextJob(agentJob, join(t.dir, 'c2'));
    const other = gitIn(join(t.dir, 'c2'), 'rev-parse', 'HEAD~1').trim();
    await expect(phase(join(t.dir, 'c2'), 'cpu-gate', { base: other })).rejects.toThrow(
      /is not the expected/,
    );
  });

  it('within one job, a later phase trusts what an earlier phase on this machine wrote', async () => {
    const repo = join(t.dir, 'd1');
    makeToyRepo(repo, [STANDARD_PATCHES[0]!]);
    await phase(repo, 'propose');
    const gate = await phase(repo, 'cpu-gate');
    expect(gate.evidence.gates.cpu?.status).toBe('passed');
    const measured = await phase(repo, 'measure');
    // The CPU gate's result survived into the measure phase (same machine, unchanged bundle).
    expect(measured.evidence.gates.cpu?.status).toBe('passed');
    expect(measured.evidence.verdict).toBe('improved');
  }, 120_000);
});
