// The novelty check across CI jobs: a person's change is measured whenever asked, but the bundle field
// that says "a person's change" (`candidate.from`) is a claim the next job must not take from a bundle
// no attestation vouches for — an agent's job could write it to have a repeat measured.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IterationEvidence } from '../../src/evidence/record.js';
import { runPhase } from '../../src/loop/drivers/phases.js';
import { prepareExternalChange } from '../../src/loop/drivers/pull-request.js';
import { memoryLogger } from '../../src/util/log.js';
import { changeFingerprint } from '../../src/workspace/index.js';
import { tempDir } from '../helpers/paths.js';
import { historyRows } from '../report/builders.js';
import { gitIn, makeToyRepo, STANDARD_PATCHES, systemPython } from './toy-repo.js';

const python = systemPython();
const RUN = 'novelty-run';
const SAME_SPEED = STANDARD_PATCHES[2]!;

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

/** The shared history, as the store hands it to every job: an earlier run measured this change. */
function plantHistory(repo: string, change: string, base: string): void {
  const row = {
    ...historyRows(1)[0]!,
    runId: 'earlier-run',
    iteration: 7,
    target: 'toy',
    verdict: 'regressed' as const,
    reason: 'upper CI bound 0.91 < 0.99',
    baseCommit: base,
    change,
  };
  mkdirSync(join(repo, '.hillclimb'), { recursive: true });
  writeFileSync(join(repo, '.hillclimb', 'history.jsonl'), `${JSON.stringify(row)}\n`);
}

describe('the novelty check believes "a person\'s change" only from the harness', () => {
  const t = tempDir('hc-novelty-trust-');
  beforeAll(() => {
    process.env.HILLCLIMB_PYTHON = python;
  });
  afterAll(t.cleanup);

  it('an unattested bundle that claims `candidate.from` is refused as a repeat in the next job', async () => {
    const agentJob = join(t.dir, 'agent');
    const base = makeToyRepo(agentJob, [SAME_SPEED]);
    const proposed = await phase(agentJob, 'propose');
    const change = proposed.evidence.guard!.change!;
    expect(change).toMatch(/^sha256:/);

    // The next job: a fresh clone, the bundle as an artifact, the shared history with that change.
    const next = join(t.dir, 'gate');
    execFileSync('git', ['clone', '--quiet', agentJob, next]);
    const bundle = join('.hillclimb', 'runs', RUN, 'i001');
    cpSync(join(agentJob, bundle), join(next, bundle), { recursive: true });
    plantHistory(next, change, base);
    const file = join(next, bundle, 'evidence.json');
    const ev = JSON.parse(readFileSync(file, 'utf8')) as IterationEvidence;
    ev.candidate!.from = base; // "a person asked for this one"
    writeFileSync(file, JSON.stringify(ev));

    const gate = await phase(next, 'cpu-gate', { base });
    expect(gate.evidence.verdict).toBe('invalid');
    expect(gate.evidence.verdictReasons[0]).toMatch(
      /^novelty check: a repeat of iteration 7 of run earlier-run \(regressed, ratio /,
    );
    expect(gate.evidence.gates.cpu).toBeUndefined(); // the gate never ran on it
  }, 180_000);

  it("a person's change made by the harness is measured though it repeats, in its job and the attested next phase", async () => {
    const job = join(t.dir, 'person');
    const base = makeToyRepo(job, [SAME_SPEED]); // the replay folder the propose phase's agent needs
    const kernel = join(job, 'toy', 'kernel.py');
    writeFileSync(kernel, SAME_SPEED.edit['toy/kernel.py']!(readFileSync(kernel, 'utf8')));
    gitIn(job, 'commit', '--quiet', '-am', 'a person unrolls the loop');
    const head = gitIn(job, 'rev-parse', 'HEAD').trim();
    const diff = gitIn(job, 'diff', '--unified=0', '--full-index', base, head, '--', 'toy/kernel.py');
    plantHistory(job, changeFingerprint(diff)!, base);

    const opts = { configFile: join(job, 'hillclimb.yml'), runId: RUN, iteration: 1, logger: memoryLogger() };
    const prepared = await prepareExternalChange(opts, {
      base,
      head,
      source: 'pull request #1',
      guard: true,
    });
    expect(prepared.evidence.verdict).toBeUndefined();
    expect(prepared.evidence.guard?.change).toBe(changeFingerprint(diff));
    // The gate phase takes the bundle over on this machine's attestation: the guard's re-check agrees.
    const gate = await runPhase('cpu-gate', { ...opts, base });
    expect(gate.evidence.verdict).toBeUndefined();
    expect(gate.evidence.gates.cpu?.status).toBe('passed');
  }, 180_000);

  it("loop.candidates > 1 refuses an agent's propose phase, never a person's change (/hillclimb measure)", async () => {
    const job = join(t.dir, 'search');
    const base = makeToyRepo(job, [SAME_SPEED]);
    const overrides = { 'loop.candidates': 2 };
    await expect(phase(job, 'propose', { overrides })).rejects.toThrow(
      /loop.candidates is 2: an agent's proposal needs the candidate it is \(slot 1 to 2\)/,
    );
    const kernel = join(job, 'toy', 'kernel.py');
    writeFileSync(kernel, SAME_SPEED.edit['toy/kernel.py']!(readFileSync(kernel, 'utf8')));
    gitIn(job, 'commit', '--quiet', '-am', 'a person unrolls the loop');
    const head = gitIn(job, 'rev-parse', 'HEAD').trim();
    const opts = {
      configFile: join(job, 'hillclimb.yml'),
      runId: 'pr-run',
      iteration: 1,
      logger: memoryLogger(),
    };
    const prepared = await prepareExternalChange(
      { ...opts, overrides },
      { base, head, source: 'pull request #2', guard: true },
    );
    expect(prepared.evidence.steps.guard?.status).toBe('done');
    expect(prepared.evidence.verdict).toBeUndefined();
  }, 120_000);
});
