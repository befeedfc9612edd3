/**
 * The agent's tools relay (src/loop/relay) on the toy target: a propose job's tools send their verifier
 * sessions through a store to a serving job on "the measuring machine" (here both are this machine's
 * local backend, two contexts of one run, as the workflow's propose and tools-relay jobs are two jobs of
 * one run) and get the answers back. The store is the folder kind; the artifact kind is the same
 * interface over the run's artifacts.
 *
 * The serving job is the credentialed one, so the attacks are on it: a request may hold any bytes the
 * propose job (the agent's job) writes. It runs only the verifier's command rebuilt from options it
 * parsed, on programs copied as plain files, within a budget of its own count.
 */
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Backend,
  folderRelayStore,
  type JobSpec,
  type RelayStore,
  VERIFIER_CACHE_KEY,
} from '../../src/compute/index.js';
import type { LoopContext } from '../../src/loop/context.js';
import { withContext } from '../../src/loop/drivers/commits.js';
import { runToolsRelay } from '../../src/loop/drivers/tools-relay.js';
import {
  markRelayDone,
  relayBackend,
  type ServeReport,
  serveToolsRelay,
} from '../../src/loop/relay/index.js';
import { Bundle } from '../../src/loop/state/bundle.js';
import { agentTools } from '../../src/loop/steps/agent-tools.js';
import { newEvidence } from '../../src/loop/steps/iteration.js';
import { verifyCommand } from '../../src/loop/steps/programs.js';
import { memoryLogger } from '../../src/util/log.js';
import { useFakeGcloud } from '../compute/fake-gcloud.js';
import { makeToyRepo, systemPython } from './toy-repo.js';

let root: string;
let repo: string;
beforeAll(() => {
  process.env.HILLCLIMB_PYTHON = systemPython();
  root = mkdtempSync(join(tmpdir(), 'hc-relay-'));
  repo = join(root, 'repo');
  makeToyRepo(repo);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const FAST = { pollMs: 20 };

/**
 * Two contexts of one run over the toy repository: the serving job's (the measuring backend) serving
 * `clients` through a fresh folder store while `fn` runs as the propose job.
 */
async function withRelay(
  overrides: Record<string, unknown>,
  fn: (o: {
    store: RelayStore;
    propose: LoopContext;
    serving: LoopContext;
    base: string;
    runId: string;
  }) => Promise<void>,
  clients: readonly string[] = ['main'],
): Promise<ServeReport> {
  const runId = `relay-${Math.random().toString(16).slice(2, 8)}`;
  const store = folderRelayStore(mkdtempSync(join(root, 'store-')));
  const opts = { configFile: join(repo, 'hillclimb.yml'), overrides, logger: memoryLogger() };
  return withContext(opts, runId, ['measure'], async (serving) =>
    withContext(opts, runId, ['cpu-gate'], async (ctx) => {
      const base = await ctx.git.revParse('HEAD');
      const served = serveToolsRelay({
        ctx: serving,
        store,
        harness: base,
        iteration: 1,
        clients,
        deadline: Date.now() + 120_000,
        ...FAST,
      });
      const propose: LoopContext = {
        ...ctx,
        toolsBackend: relayBackend({
          local: ctx.cpuBackend,
          store,
          runId,
          client: 'main',
          serving: serving.backend.info(),
          ...FAST,
        }),
      };
      try {
        await fn({ store, propose, serving, base, runId });
      } finally {
        for (const c of clients) await markRelayDone(store, runId, c);
      }
      return served;
    }),
  );
}

/** A backend standing in for the propose job's own: `run` is what it does with a job not relayed. */
function localStandIn(
  run: Backend['run'] = async () => ({ exitCode: 0, durationMs: 0, logFile: '' }),
): Backend {
  return {
    name: 'never',
    open: async () => undefined,
    close: async () => undefined,
    info: () => ({ backend: 'local', hasAccelerator: false, platform: 'cpu' as const, description: 'x' }),
    run,
  };
}

/** A verifier session's job over a tree holding one arm's (empty) programs, as runVerifier builds it. */
function verifierSessionJob(command: string[], timeoutMs: number): JobSpec {
  const workdir = mkdtempSync(join(root, 'tree-'));
  mkdirSync(join(workdir, '.hillclimb-programs', 'B'), { recursive: true });
  writeFileSync(join(workdir, '.hillclimb-programs', 'B', 'manifest.json'), '{}');
  return {
    id: 'j',
    command,
    workdir,
    timeoutMs,
    outputs: { metrics: join(workdir, 'session.json') },
    logFile: join(workdir, 'verify.log'),
    cacheKey: VERIFIER_CACHE_KEY,
    include: ['.hillclimb-programs'],
  };
}

function edit(agentRepo: string, from: string, to: string): void {
  const file = join(agentRepo, 'toy', 'kernel.py');
  writeFileSync(file, readFileSync(file, 'utf8').replace(from, to));
}

/**
 * Publish a request as a hostile propose job would: any command, any files, written straight into the
 * store (not through its put, which copies plain files only).
 */
function publishRequest(
  store: RelayStore,
  name: string,
  command: unknown,
  files: Record<string, string> = {},
  extra?: (dir: string) => void,
): void {
  const dir = join(root, 'raw', name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'request.json'), JSON.stringify({ version: 1, command }));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  extra?.(dir);
  renameSync(dir, join(store.where, name));
}

async function answerOf(store: RelayStore, name: string): Promise<Record<string, unknown>> {
  const dest = mkdtempSync(join(root, 'ans-'));
  await store.get(name, dest, {});
  return JSON.parse(readFileSync(join(dest, 'answer.json'), 'utf8'));
}

describe('the tools relay', () => {
  it("serves a propose job's screen and profile on the serving job's machine, as advice", async () => {
    const report = await withRelay({}, async ({ propose, base }) => {
      const ev = newEvidence(propose, { iteration: 1, base: { commit: base } });
      const bundle = new Bundle(mkdtempSync(join(root, 'bundle-')));
      const agentRepo = join(mkdtempSync(join(root, 'agent-')), 'repo');
      await propose.git.cloneForAgent(agentRepo, base);
      const tools = agentTools({ ctx: propose, bundle, ev, save: () => bundle.save(ev) }, agentRepo);
      edit(agentRepo, 'DELAY_S = 0.02', 'DELAY_S = 0.004');
      // check: the CPU gate in the propose job itself (the serving machine is a CPU too: nothing more).
      expect((await tools.call('check', {})).text).toMatch(/^check: passed/);
      const screened = await tools.call('screen', { rounds: 3 });
      expect(screened.isError, screened.text).toBe(false);
      expect(Number(/: ([\d.]+)× the champion/.exec(screened.text)?.[1])).toBeGreaterThan(1.5);
      const profiled = await tools.call('profile', {});
      expect(profiled.isError, profiled.text).toBe(false);
      expect(profiled.text).toMatch(/^profile of your tree against the champion's/);
      // Still advice: nothing of it is the iteration's evidence.
      expect(ev.measurement).toBeUndefined();
      expect(ev.profile).toBeUndefined();
      expect(propose.toolsBackend.info().description).toMatch(/through the tools relay$/);
      await tools.close();
    });
    // The screen's session, the champion's profile and the tree's: three sessions served, none refused.
    expect(report).toMatchObject({ served: 3, refused: 0, ended: 'done' });
    expect(report.seconds).toBeGreaterThan(0);
  }, 180_000);

  it('runs only the verifier command it rebuilds, on plain-file programs, and refuses the rest', async () => {
    const answers: Record<string, unknown>[] = [];
    await withRelay({}, async ({ store, serving, runId }) => {
      const good = verifyCommand(serving, {
        mode: 'gate',
        platform: 'cpu',
        draw: 7,
        arms: ['B'],
        repeats: 1,
        warmup: 0,
      });
      const programs = { 'programs/B/manifest.json': '{}' };
      const name = (n: number) => `hillclimb-tools-${runId}-main-${String(n).padStart(4, '0')}`;
      const attacks: Array<[unknown, Record<string, string>, ((d: string) => void)?]> = [
        // A word added: a Python one-liner instead of the verifier's module.
        [['{python}', '-c', 'import os; os.system("id")'], programs],
        // The verifier's command with an extra flag at the end (after `--`, the target's own arguments).
        [[...good, '--evil'], programs],
        // Its module swapped for another.
        [good.map((w) => (w === serving.target.programs.module ? 'os' : w)), programs],
        // An arm whose programs are somewhere else than the request's folder.
        [good.map((w) => (w.startsWith('B=') ? 'B=../../../etc' : w)), programs],
        // Another platform than the serving machine's.
        [good.map((w) => (w === 'cpu' ? 'tpu' : w)), programs],
        // Rounds far beyond any tool's.
        [good.map((w, i) => (good[i - 1] === '--rounds' ? '100000' : w)), programs],
        // A time per program that makes one session take hours, and a time where the command has none.
        [good.flatMap((w) => (w === '--compile-cache' ? ['--min-time-ms', '100000', w] : [w])), programs],
        [good.flatMap((w) => (w === '--compile-cache' ? ['--min-time-ms', '250', w] : [w])), programs],
        // Not a list of words.
        ['rm -rf /', programs],
        // The right command, but a program that is a link to a secret of the serving job.
        [
          good,
          {},
          (d) => {
            mkdirSync(join(d, 'programs', 'B'), { recursive: true });
            symlinkSync('/proc/self/environ', join(d, 'programs', 'B', 'manifest.json'));
          },
        ],
        // The right command, no programs for its arm.
        [good, {}],
      ];
      // A request from a client the serving job was not told of is never served.
      publishRequest(store, `hillclimb-tools-${runId}-c7-0001-request`, good, programs);
      const deadline = Date.now() + 60_000;
      // One at a time, as a propose job's calls come (its newest request is the one answered).
      for (const [i, [command, files, extra]] of attacks.entries()) {
        publishRequest(store, `${name(i + 1)}-request`, command, files, extra);
        while (!(await store.list(`${name(i + 1)}-answer`)).length && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 20));
        }
        answers.push(await answerOf(store, `${name(i + 1)}-answer`));
      }
      expect(await store.list(`hillclimb-tools-${runId}-c7-`)).toEqual([
        `hillclimb-tools-${runId}-c7-0001-request`,
      ]);
    });
    const why = answers.map((a) => a.refused);
    expect(why).toEqual([
      expect.stringMatching(/--mode is not gate, measure or profile/),
      "the command is not the verifier's, word for word, for this target",
      "the command is not the verifier's, word for word, for this target",
      expect.stringMatching(/--arm "B=..\/..\/..\/etc" is not NAME=/),
      "--platform is not cpu, this machine's",
      '--rounds 100000 is over 10',
      '--min-time-ms 100000 is over 60000',
      "the command is not the verifier's, word for word, for this target",
      'request.json has no command (a list of words)',
      expect.stringMatching(/holds what the relay never takes: .*manifest\.json: a symbolic link/),
      'no programs for arm B',
    ]);
    for (const a of answers) expect(a).toMatchObject({ exitCode: null, durationMs: 0 });
  }, 120_000);

  it("holds the iteration's budget by its own count, and a propose job's tools hear why", async () => {
    const report = await withRelay({ 'agent.tools.max_calls': 1 }, async ({ propose, base }) => {
      const ev = newEvidence(propose, { iteration: 1, base: { commit: base } });
      const bundle = new Bundle(mkdtempSync(join(root, 'bundle-')));
      const agentRepo = join(mkdtempSync(join(root, 'agent-')), 'repo');
      await propose.git.cloneForAgent(agentRepo, base);
      edit(agentRepo, 'DELAY_S = 0.02', 'DELAY_S = 0.004');
      // Attack: a propose job that forgets its own journal (each call from a fresh tools session, as a
      // compromised harness would) asks for more sessions than the iteration's budget.
      const answers: string[] = [];
      for (let i = 0; i < 3; i++) {
        const fresh = newEvidence(propose, { iteration: 1, base: { commit: base } });
        const tools = agentTools({ ctx: propose, bundle, ev: fresh, save: () => undefined }, agentRepo);
        answers.push((await tools.call('screen', { rounds: 2 })).text);
        await tools.close();
      }
      expect(answers[0]).toMatch(/^screen \(advisory/);
      expect(answers[1]).toMatch(/^screen \(advisory/);
      // Two sessions a call: the third is refused by the serving job, and the agent hears why.
      expect(answers[2]).toMatch(
        /the tools relay: refused: this propose job's 2 tool sessions are spent \(agent\.tools\.max_calls 1, two sessions a call\)/,
      );
      expect(ev.tools).toBeUndefined();
    });
    expect(report).toMatchObject({ served: 2, refused: 1, ended: 'done' });
  }, 180_000);
});

describe('the tools relay without a serving job', () => {
  it('gives up at the session timeout plus its grace, as a harness failure the tool reports', async () => {
    const store = folderRelayStore(mkdtempSync(join(root, 'store-')));
    const local = localStandIn(async () => {
      throw new Error('not local');
    });
    const relay = relayBackend({
      local,
      store,
      runId: 'r1',
      client: 'c2',
      serving: { backend: 'tpu-vm', hasAccelerator: true, platform: 'tpu', description: 'tpu-vm v5p-8' },
      pollMs: 10,
      graceMs: 200,
    });
    const job = verifierSessionJob(['{python}', '-m', 'x'], 100);
    const result = await relay.run(job);
    expect(result).toMatchObject({
      exitCode: null,
      infraError: expect.stringMatching(/^the tools relay: no job serves the tools relay of this run/),
    });
    // A second session goes on from the first's number; a retried job (a new client object) after both.
    await relay.run(job);
    const again = relayBackend({
      local,
      store,
      runId: 'r1',
      client: 'c2',
      serving: relay.info(),
      pollMs: 10,
      graceMs: 50,
    });
    await again.run(job);
    expect(await store.list('hillclimb-tools-r1-c2-')).toEqual([
      'hillclimb-tools-r1-c2-0001-request',
      'hillclimb-tools-r1-c2-0002-request',
      'hillclimb-tools-r1-c2-0003-request',
    ]);
    // A job that is not the verifier's never leaves this job.
    await expect(relay.run({ ...job, cacheKey: 'other' })).rejects.toThrow('not local');
  }, 30_000);
});

describe("the tools relay's serving job, when clients misbehave or stop", () => {
  /** The serving job over `store` for `clients`, as a promise, with its context open until it ends. */
  async function serving(
    overrides: Record<string, unknown>,
    clients: readonly string[],
    deadlineMs: number,
    fn: (o: { store: RelayStore; runId: string; gate: string[] }) => Promise<void>,
    before?: (o: { store: RelayStore; runId: string; gate: string[] }) => Promise<void>,
    serveFrom?: () => RelayStore,
  ): Promise<ServeReport> {
    const runId = `relay-${Math.random().toString(16).slice(2, 8)}`;
    const store = folderRelayStore(mkdtempSync(join(root, 'store-')));
    const opts = { configFile: join(repo, 'hillclimb.yml'), overrides, logger: memoryLogger() };
    return withContext(opts, runId, ['measure'], async (ctx) => {
      const gate = verifyCommand(ctx, {
        mode: 'gate',
        platform: 'cpu',
        draw: 7,
        arms: ['B'],
        repeats: 1,
        warmup: 0,
      });
      await before?.({ store, runId, gate });
      const served = serveToolsRelay({
        ctx,
        store: serveFrom?.() ?? store,
        harness: await ctx.git.revParse('HEAD'),
        iteration: 1,
        clients,
        deadline: Date.now() + deadlineMs,
        ...FAST,
      });
      await fn({ store, runId, gate });
      return await served;
    });
  }
  const programs = { 'programs/B/manifest.json': '{}' };
  const name = (runId: string, client: string, n: number) =>
    `hillclimb-tools-${runId}-${client}-${String(n).padStart(4, '0')}`;
  async function answered(store: RelayStore, n: string): Promise<Record<string, unknown>> {
    const deadline = Date.now() + 60_000;
    while (!(await store.list(`${n}-answer`)).length && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    return answerOf(store, `${n}-answer`);
  }

  it("gives each candidate its own share, answers a job's newest request only, and none of a job that is done", async () => {
    let c1: Record<string, unknown>[] = [];
    const report = await serving(
      { 'agent.tools.max_calls': 3 },
      ['c1', 'c2', 'c3'],
      120_000,
      async ({ store, runId, gate }) => {
        c1.push(await answered(store, name(runId, 'c1', 2)));
        // c1 spends its share (max_calls 3 over 3 candidates: one call, two sessions) and asks once more.
        publishRequest(store, `${name(runId, 'c1', 3)}-request`, gate, programs);
        c1.push(await answered(store, name(runId, 'c1', 3)));
        publishRequest(store, `${name(runId, 'c1', 4)}-request`, gate, programs);
        c1.push(await answered(store, name(runId, 'c1', 4)));
        // c3 has its own share still.
        publishRequest(store, `${name(runId, 'c3', 1)}-request`, gate, programs);
        const c3 = await answered(store, name(runId, 'c3', 1));
        expect(c3.refused).toBeUndefined();
        await markRelayDone(store, runId, 'c1');
        await markRelayDone(store, runId, 'c3');
        const names = await store.list(`hillclimb-tools-${runId}-`);
        expect(names).not.toContain(`${name(runId, 'c1', 1)}-answer`);
        expect(names).not.toContain(`${name(runId, 'c2', 1)}-answer`);
        expect(names).toContain(`hillclimb-tools-${runId}-serving`);
      },
      async ({ store, runId, gate }) => {
        // Before the serving job first looks: c1 gave up on its first request and sent a second; c2
        // sent one and is done (nobody waits for it).
        publishRequest(store, `${name(runId, 'c1', 1)}-request`, gate, programs);
        publishRequest(store, `${name(runId, 'c1', 2)}-request`, gate, programs);
        publishRequest(store, `${name(runId, 'c2', 1)}-request`, gate, programs);
        await markRelayDone(store, runId, 'c2');
      },
    );
    c1 = c1.map((a) => ({ refused: a.refused }));
    expect(c1).toEqual([
      { refused: undefined },
      { refused: undefined },
      {
        refused:
          "this propose job's 2 tool sessions are spent (agent.tools.max_calls 3 split over 3 candidates, two sessions a call)",
      },
    ]);
    expect(report).toMatchObject({ served: 3, refused: 1, ended: 'done' });
  }, 120_000);

  it('waits out a few failed listings of the store, at both ends', async () => {
    let flaky: RelayStore | undefined;
    const report = await serving(
      {},
      ['main'],
      120_000,
      async ({ runId, gate }) => {
        const local = localStandIn();
        const relay = relayBackend({
          local,
          store: flaky!,
          runId,
          client: 'main',
          serving: local.info(),
          pollMs: 5,
        });
        const result = await relay.run(verifierSessionJob(gate, 60_000));
        // The verifier ran (and failed on an empty manifest): the session was served, not lost.
        expect(result.infraError).toBeUndefined();
        expect(result.handle).toMatch(/-main-0001-answer$/);
        // Saying done lists the store too: its first two listings fail here, whatever the polling's count.
        let misses = 2;
        const hiccup: RelayStore = {
          ...flaky!,
          list: async (prefix) => {
            if (misses-- > 0) throw new Error('503 Service Unavailable');
            return flaky!.list(prefix);
          },
        };
        await markRelayDone(hiccup, runId, 'main', 5);
      },
      async ({ store }) => {
        // Every third listing fails, as an artifact service that hiccups: never ten in a row.
        let calls = 0;
        flaky = {
          ...store,
          list: async (prefix) => {
            if (++calls % 3 === 0) throw new Error('503 Service Unavailable');
            return store.list(prefix);
          },
        };
      },
      () => flaky!,
    );
    expect(report).toMatchObject({ served: 1, ended: 'done' });
  }, 120_000);

  it('refuses a session that would outlive its deadline, says it stopped, and a waiting job gives up at once', async () => {
    let waited: Awaited<ReturnType<ReturnType<typeof relayBackend>['run']>> | undefined;
    const report = await serving({}, ['main'], 1_500, async ({ store, runId, gate }) => {
      publishRequest(store, `${name(runId, 'main', 1)}-request`, gate, programs);
      expect((await answered(store, name(runId, 'main', 1))).refused).toBe(
        'the tools relay stops serving before a session could end (serve-minutes)',
      );
      // A propose job that sends its next request once the serving job has stopped.
      while (!(await store.list(`hillclimb-tools-${runId}-closed`)).length) {
        await new Promise((r) => setTimeout(r, 20));
      }
      const local = localStandIn();
      const relay = relayBackend({ local, store, runId, client: 'main', serving: local.info(), pollMs: 20 });
      const started = Date.now();
      waited = await relay.run(verifierSessionJob(gate, 60_000));
      // Not its 11 minutes (the session's timeout and the grace): the serving job said it stopped.
      expect(Date.now() - started).toBeLessThan(30_000);
    });
    expect(report.ended).toBe('deadline');
    expect(waited).toMatchObject({
      infraError: 'the tools relay: the serving job has stopped (its deadline, a failure, or the run ended)',
    });
  }, 120_000);
});

describe("the tools relay's serving job on a TPU VM", () => {
  it('uses only the TPU tpu-allocate holds: with none held it fails, allocating none', async () => {
    const fake = useFakeGcloud();
    try {
      fake.scenario([{ cmd: 'queued-resources create', replies: [{}] }]);
      const store = folderRelayStore(mkdtempSync(join(root, 'store-')));
      await expect(
        runToolsRelay({
          configFile: join(repo, 'hillclimb.yml'),
          overrides: {
            'compute.backend': 'tpu-vm',
            'compute.tpu_vm': {
              project: 'hc-proj',
              zones: ['zone-a'],
              accelerator_type: 'v5p-8',
              runtime_version: 'v2-alpha-tpuv5',
            },
            'paths.state_dir': join(fake.scratch, 'state'),
          },
          runId: 'relay-tpu',
          iteration: 1,
          base: 'HEAD',
          store,
          minutes: 1,
          logger: memoryLogger(),
        }),
      ).rejects.toThrow(/no TPU held by `hillclimb tpu allocate` is up .* and this job allocates none/);
      expect(fake.callsOf('queued-resources create')).toEqual([]);
      // It said it stopped: a propose job's tool call gives up at once rather than after its grace.
      expect(await store.list('hillclimb-tools-relay-tpu-closed')).toEqual([
        'hillclimb-tools-relay-tpu-closed',
      ]);
    } finally {
      fake.restore();
    }
  });
});
