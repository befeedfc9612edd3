// A search split into the workflow's jobs (issue 25; src/loop/drivers/search-phases.ts): propose and
// cpu-gate once per candidate, each given its slot by the workflow; select over every bundle; publish.
// The slot and the search's outcome are the workflow's and the select job's words, never a bundle's:
//   - a job given no slot for a search's proposal, or a slot past loop.candidates, is refused;
//   - a bundle that claims another slot is named by the slot the workflow gave;
//   - a loser's bundle changed after the select job to say it won gets no PR and no promotion: its
//     search record and results are not believed without the select job's attestation;
//   - a candidate whose CPU gate pass no attestation vouches for is not screened: it could not be
//     promoted, and a screen it won would spend the search's one full comparison.
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { folderRelayStore } from '../../src/compute/relay-store.js';
import type { IterationEvidence } from '../../src/evidence/record.js';
import { listLocalPulls } from '../../src/forge/local-reader.js';
import { type PhaseResult, runPhase } from '../../src/loop/drivers/phases.js';
import { runSearchPhase, type SearchPhaseResult } from '../../src/loop/drivers/search-phases.js';
import { attestBundle } from '../../src/loop/state/attestation.js';
import { Bundle } from '../../src/loop/state/bundle.js';
import { readHistory } from '../../src/loop/state/history.js';
import { memoryLogger } from '../../src/util/log.js';
import { tempDir } from '../helpers/paths.js';
import { makeToyRepo, STANDARD_PATCHES, systemPython } from '../loop/toy-repo.js';

const RUN = 'search-jobs';
const [faster, wrong, sameSpeed] = STANDARD_PATCHES as [
  (typeof STANDARD_PATCHES)[0],
  (typeof STANDARD_PATCHES)[0],
  (typeof STANDARD_PATCHES)[0],
];

/** One job's options for a search of `k` candidates in `repo`, iteration 1 of run RUN. */
function searchJob(repo: string, k: number) {
  return {
    configFile: join(repo, 'hillclimb.yml'),
    overrides: { 'loop.candidates': k },
    runId: RUN,
    iteration: 1,
    logger: memoryLogger(),
  };
}

/** The toy target's suite runs on this machine's python3 (no project venv in these tests). */
function usePython3(): void {
  process.env.HILLCLIMB_PYTHON = systemPython();
}

describe("a search in the workflow's jobs believes slots and outcomes only from the trusted side", () => {
  const t = tempDir('hc-search-jobs-');
  const repo = join(t.dir, 'repo');
  let base: string;
  const common = () => searchJob(repo, 3);
  /** The job outputs a set of results hands on, as the workflow's toJSON(needs.<job>.outputs) does. */
  const outputs = (results: readonly PhaseResult[]) =>
    JSON.stringify(
      Object.fromEntries(
        results.map((r) => [`attestation-c${r.evidence.slot!.index}`, JSON.stringify(r.attestation)]),
      ),
    );
  let gates: PhaseResult[];
  let selected: SearchPhaseResult;
  let published: SearchPhaseResult;
  // The store of a tools relay the propose jobs were told of (nobody serves it: the replay agent calls
  // no tool); each says there when it is done, so that a serving job stops.
  const relay = folderRelayStore(join(repo, '..', 'relay'));

  beforeAll(async () => {
    usePython3();
    base = makeToyRepo(repo, [
      { ...wrong, name: '0001-wrong-math' },
      { ...sameSpeed, name: '0001.2-same-speed' },
      { ...faster, name: '0001.3-shorter-delay' },
    ]);
    gates = [];
    for (const slot of [1, 2, 3]) {
      await runPhase('propose', { ...common(), slot, toolsRelay: relay });
      // The agent's job could write anything into its bundle: candidate 3's claims to be candidate 1.
      if (slot === 3) {
        const file = join(repo, '.hillclimb', 'runs', RUN, 'i001-c3', 'evidence.json');
        const ev = JSON.parse(readFileSync(file, 'utf8')) as IterationEvidence;
        ev.slot = { index: 1, of: 3 };
        writeFileSync(file, JSON.stringify(ev));
      }
      gates.push(await runPhase('cpu-gate', { ...common(), slot, base }));
    }
    selected = await runSearchPhase('select', { ...common(), base, attestations: outputs(gates) });
    // After the select job: candidate 2's bundle is changed to say it won, with the winner's numbers.
    const loser = join(repo, '.hillclimb', 'runs', RUN, 'i001-c2', 'evidence.json');
    const winner = selected.candidates[2]!.evidence;
    const forged = JSON.parse(readFileSync(loser, 'utf8')) as IterationEvidence;
    forged.verdict = 'improved';
    forged.verdictReasons = winner.verdictReasons;
    forged.measurement = winner.measurement;
    forged.search = { ...winner.search!, role: 'winner', winner: 2 };
    writeFileSync(loser, JSON.stringify(forged));
    published = await runSearchPhase('publish', {
      ...common(),
      base,
      attestations: outputs(selected.candidates),
    });
  }, 600_000);
  afterAll(t.cleanup);

  it("refuses a search's proposal without a slot, and a slot past loop.candidates", async () => {
    await expect(runPhase('propose', { ...common(), iteration: 2 })).rejects.toThrow(
      /loop\.candidates is 3: an agent's proposal needs the candidate it is \(slot 1 to 3\)/,
    );
    await expect(runPhase('propose', { ...common(), iteration: 2, slot: 4 })).rejects.toThrow(
      /slot 4 is not a candidate of this iteration: loop\.candidates is 3/,
    );
  });

  it('says in the tools relay that each propose job is done, by the slot the workflow gave', async () => {
    expect(await relay.list('hillclimb-tools-')).toEqual(
      [1, 2, 3].map((c) => `hillclimb-tools-${RUN}-c${c}-done`),
    );
  });

  it('names every candidate by the slot the workflow gave, whatever its bundle claims', () => {
    expect(gates.map((g) => g.evidence.slot)).toEqual([
      { index: 1, of: 3 },
      { index: 2, of: 3 },
      { index: 3, of: 3 },
    ]);
    expect(gates[2]!.evidence.candidate!.branch).toMatch(/\/i001-c3$/);
    expect(gates.map((g) => g.evidence.verdict ?? 'pending')).toEqual(['invalid', 'pending', 'pending']);
  });

  it('selects over the attested bundles: the null one screened out, the real gain measured in full', () => {
    expect(selected.candidates.map((c) => c.evidence.verdict)).toEqual([
      'invalid',
      'screened-out',
      'improved',
    ]);
    expect(selected.lead.evidence.slot!.index).toBe(3);
    expect(selected.candidates.every((c) => c.attestation?.verified)).toBe(true);
  });

  it("a loser's bundle changed after the select job to say it won opens no PR and promotes nothing", () => {
    const [, forged, winner] = published.candidates;
    expect(forged!.evidence.verdict).toBe('error');
    expect(forged!.evidence.verdictReasons[0]).toMatch(/^no attested result reached the publishing job/);
    expect(forged!.evidence.search!.role).toBe('loser');
    expect(forged!.evidence.publish?.prNumber).toBeUndefined();
    expect(winner!.evidence.verdict).toBe('improved');
    const pulls = listLocalPulls(join(repo, '.hillclimb'));
    expect(pulls).toHaveLength(1);
    expect(pulls[0]!.branch).toMatch(/\/i001-c3$/);
    expect(readHistory(join(repo, '.hillclimb'), 'toy').map((r) => [r.slot, r.verdict])).toEqual([
      [1, 'invalid'],
      [2, 'error'],
      [3, 'improved'],
    ]);
  });
});

describe('a search candidate without an attested CPU gate pass', () => {
  const t = tempDir('hc-search-unattested-');
  afterAll(t.cleanup);

  it('ends in error before the screen, and the screen goes on without it', async () => {
    usePython3();
    const repo = join(t.dir, 'repo');
    const base = makeToyRepo(repo, [
      { ...faster, name: '0001-shorter-delay' },
      { ...sameSpeed, name: '0001.2-same-speed' },
    ]);
    const common = searchJob(repo, 2);
    const gates: PhaseResult[] = [];
    for (const slot of [1, 2]) {
      await runPhase('propose', { ...common, slot });
      gates.push(await runPhase('cpu-gate', { ...common, slot, base }));
    }
    // Candidate 1's gate job "failed": its attestation never reached the select job (nor is there one
    // on this machine).
    rmSync(join(repo, '.hillclimb', 'trust', `${RUN}-i001-c1.json`));
    const attestations = JSON.stringify({ 'attestation-c2': JSON.stringify(gates[1]!.attestation) });
    const selected = await runSearchPhase('select', { ...common, base, attestations });
    const [first, second] = selected.candidates.map((c) => c.evidence);
    expect(first!.verdict).toBe('error');
    expect(first!.verdictReasons[0]).toMatch(
      /^its CPU gate's pass did not reach the select job under an attestation/,
    );
    expect(first!.screen).toBeUndefined();
    expect(first!.measurement).toBeUndefined();
    expect(second!.screen).toBeDefined();
    expect(second!.search!.winner).not.toBe(1);
  }, 300_000);
});

describe("publish believes a search's outcome only from the select job", () => {
  const t = tempDir('hc-search-publish-');
  const repo = join(t.dir, 'repo');
  const run = join(repo, '.hillclimb', 'runs', RUN);
  const gateCopies = join(t.dir, 'gate-bundles');
  let base: string;
  let selected: SearchPhaseResult;
  const common = () => searchJob(repo, 2);
  /** The bundles as the gate jobs left them, with no attestation of this machine's. */
  const gateBundlesOnly = () => {
    for (const slot of [1, 2]) {
      rmSync(join(run, `i001-c${slot}`), { recursive: true, force: true });
      cpSync(join(gateCopies, `i001-c${slot}`), join(run, `i001-c${slot}`), { recursive: true });
    }
    rmSync(join(repo, '.hillclimb', 'trust'), { recursive: true, force: true });
  };

  beforeAll(async () => {
    usePython3();
    base = makeToyRepo(repo, [
      { ...faster, name: '0001-shorter-delay' },
      { ...sameSpeed, name: '0001.2-same-speed' },
    ]);
    const gates: PhaseResult[] = [];
    for (const slot of [1, 2]) {
      await runPhase('propose', { ...common(), slot });
      gates.push(await runPhase('cpu-gate', { ...common(), slot, base }));
      cpSync(join(run, `i001-c${slot}`), join(gateCopies, `i001-c${slot}`), { recursive: true });
    }
    const attestations = JSON.stringify(
      Object.fromEntries(gates.map((g, s) => [`attestation-c${s + 1}`, JSON.stringify(g.attestation)])),
    );
    selected = await runSearchPhase('select', { ...common(), base, attestations });
  }, 300_000);
  afterAll(t.cleanup);

  it('fails, recording nothing, when the select job vouched for bundles that did not arrive', async () => {
    expect(selected.lead.evidence.search?.role).toBe('winner');
    gateBundlesOnly();
    const attestations = JSON.stringify(
      Object.fromEntries(
        selected.candidates.map((c, s) => [`attestation-c${s + 1}`, JSON.stringify(c.attestation)]),
      ),
    );
    await expect(runSearchPhase('publish', { ...common(), base, attestations })).rejects.toThrow(
      /the select job vouched for its bundles, and none of them reached the publish job/,
    );
    expect(readHistory(join(repo, '.hillclimb'), 'toy')).toEqual([]);
  });

  it("drops a search record that only a gate job's attestation vouches for", async () => {
    gateBundlesOnly();
    // As if a gate job had written a search record saying its candidate won, and attested it.
    const outputs: Record<string, string> = {};
    for (const slot of [1, 2]) {
      const bundle = new Bundle(join(run, `i001-c${slot}`));
      const ev = bundle.load();
      if (slot === 1) {
        ev.search = { ...selected.lead.evidence.search!, role: 'winner', winner: 1 };
        bundle.save(ev);
      }
      outputs[`attestation-c${slot}`] = JSON.stringify(attestBundle(bundle, ev, 'cpu-gate', true));
    }
    const published = await runSearchPhase('publish', {
      ...common(),
      base,
      attestations: JSON.stringify(outputs),
    });
    const first = published.candidates[0]!.evidence;
    expect(first.search).toMatchObject({ role: 'loser', winner: null });
    expect(first.publish?.prNumber).toBeUndefined();
    expect(listLocalPulls(join(repo, '.hillclimb'))).toHaveLength(0);
  });
});
