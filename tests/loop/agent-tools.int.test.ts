/**
 * The agent's tools (src/loop/steps/agent-tools.ts) on the toy target, called as the agent's MCP endpoint
 * calls them: each runs the harness's export and verifier on a snapshot of the agent's working tree. The
 * cases show what an agent learns (a wrong kernel fails `check`, a faster one passes and `screen`s faster),
 * and what it cannot do: pass a path, exceed the budget, flood the queue, or turn an answer into evidence.
 */
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/index.js';
import type { IterationEvidence } from '../../src/evidence/index.js';
import type { LoopContext } from '../../src/loop/context.js';
import { withContext } from '../../src/loop/drivers/commits.js';
import { Bundle, BundleFiles } from '../../src/loop/state/bundle.js';
import { type AgentToolsSession, agentTools } from '../../src/loop/steps/agent-tools.js';
import { newEvidence } from '../../src/loop/steps/iteration.js';
import { knownProfileSummary } from '../../src/loop/steps/profile.js';
import { proposeStep } from '../../src/loop/steps/propose.js';
import { toolsSection } from '../../src/report/index.js';
import { memoryLogger } from '../../src/util/log.js';
import { makeToyRepo, systemPython } from './toy-repo.js';

let root: string;
let repo: string;
beforeAll(() => {
  process.env.HILLCLIMB_PYTHON = systemPython();
  root = mkdtempSync(join(tmpdir(), 'hc-tools-'));
  repo = join(root, 'repo');
  makeToyRepo(repo);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A tools session over a fresh iteration of the toy repo, with the agent's clone at the champion. */
async function withTools(
  overrides: Record<string, unknown>,
  fn: (o: {
    tools: AgentToolsSession;
    ev: IterationEvidence;
    agentRepo: string;
    ctx: LoopContext;
    sibling: () => { tools: AgentToolsSession; ev: IterationEvidence };
    bundle: Bundle;
  }) => Promise<void>,
): Promise<void> {
  await withContext(
    { configFile: join(repo, 'hillclimb.yml'), overrides, logger: memoryLogger() },
    `tools-${Math.random().toString(16).slice(2, 8)}`,
    ['cpu-gate', 'measure', 'profile'],
    async (ctx) => {
      const base = await ctx.git.revParse('HEAD');
      const ev = newEvidence(ctx, { iteration: 1, base: { commit: base } });
      const bundle = new Bundle(mkdtempSync(join(root, 'bundle-')));
      const agentRepo = join(mkdtempSync(join(root, 'agent-')), 'repo');
      await ctx.git.cloneForAgent(agentRepo, base);
      const tools = agentTools({ ctx, bundle, ev, save: () => bundle.save(ev) }, agentRepo);
      // Another candidate's agent of the same search, calling tools of its own on the same run.
      const sibling = () => {
        const other = newEvidence(ctx, { iteration: 1, base: { commit: base } });
        other.slot = { index: 2, of: 2 };
        // Its own context object, as a search gives each candidate's steps (drivers/search.ts).
        const tools = agentTools({ ctx: { ...ctx }, bundle, ev: other, save: () => undefined }, agentRepo);
        return { tools, ev: other };
      };
      await fn({ tools, ev, agentRepo, ctx, sibling, bundle });
    },
  );
}

function edit(agentRepo: string, from: string, to: string): void {
  const file = join(agentRepo, 'toy', 'kernel.py');
  writeFileSync(file, readFileSync(file, 'utf8').replace(from, to));
}

describe('the agent tools when the agent fails', () => {
  it('a call still running when the agent throws is finished and journalled before propose fails', async () => {
    // Attack: start a slow call and make the agent end by an exception (not an outcome): were the session
    // not closed then, the call would go on past the step and write the evidence at a time of its own.
    await withContext(
      {
        configFile: join(repo, 'hillclimb.yml'),
        overrides: {},
        logger: memoryLogger(),
      },
      `tools-${Math.random().toString(16).slice(2, 8)}`,
      ['propose', 'cpu-gate'],
      async (ctx) => {
        const base = await ctx.git.revParse('HEAD');
        const ev = newEvidence(ctx, { iteration: 1, base: { commit: base } });
        const bundle = new Bundle(mkdtempSync(join(root, 'bundle-')));
        mkdirSync(dirname(bundle.path(BundleFiles.prompt)), { recursive: true });
        writeFileSync(bundle.path(BundleFiles.prompt), 'improve the toy kernel\n');
        const failing: Agent = {
          name: 'failing',
          async run(request) {
            void request.tools!.call('check', {});
            throw new Error('the agent crashed');
          },
        };
        const env = { ctx: { ...ctx, agent: failing }, bundle, ev, save: () => bundle.save(ev) };
        await expect(proposeStep.run(env)).rejects.toThrow('the agent crashed');
        expect(ev.tools!.calls.map((c) => c.tool)).toEqual(['check']);
      },
    );
  }, 60_000);
});

describe('the agent tools', () => {
  it('tell a wrong kernel from a faster one, and journal every call without making it evidence', async () => {
    await withTools({}, async ({ tools, ev, agentRepo, ctx, bundle }) => {
      // The gate's draw, were it drawn already: no tool call may ask for its shapes, nor change it.
      ev.draw = 4242;
      expect(tools.list().map((t) => t.name)).toEqual(['check', 'screen', 'profile', 'ledger']);

      const unchanged = await tools.call('check', {});
      expect(unchanged.isError).toBe(true);
      expect(unchanged.text).toMatch(/working tree is the champion's/);

      edit(agentRepo, 'return [2 * x for x in xs]', 'return [3 * x for x in xs]');
      const wrong = await tools.call('check', {});
      expect(wrong.isError).toBe(true);
      expect(wrong.text).toMatch(
        /^check: failed verification on the CPU: 1 of 1 program\(s\); first: fwd_bwd@toy/,
      );

      edit(agentRepo, 'return [3 * x for x in xs]', 'return [2 * x for x in xs]');
      edit(agentRepo, 'DELAY_S = 0.02', 'DELAY_S = 0.004');
      const right = await tools.call('check', {});
      expect(right).toEqual({ isError: false, text: expect.stringMatching(/^check: passed: 1 program/) });
      const session = JSON.parse(readFileSync(bundle.path('tools/003/session.json'), 'utf8'));
      expect(session.draw).toEqual(expect.any(Number));
      expect(session.draw).not.toBe(4242);

      const screened = await tools.call('screen', { rounds: 3 });
      expect(screened.isError).toBe(false);
      expect(screened.text).toMatch(/^screen \(advisory, never evidence\): /);
      // 20 ms of sleep against 4 ms a call: paired rounds see it on any machine.
      const estimate = Number(/: ([\d.]+)× the champion/.exec(screened.text)?.[1]);
      expect(estimate).toBeGreaterThan(1.5);

      const profiled = await tools.call('profile', {});
      expect(profiled.isError, profiled.text).toBe(false);
      expect(profiled.text).toMatch(/^profile of your tree against the champion's/);
      // The champion's profile it made while the agent ran is the call's own: neither cached nor
      // stored, so the profile step (and later iterations) profile the champion themselves.
      expect(await knownProfileSummary(ctx, ev.base.commit)).toBeUndefined();
      // The bundle keeps each call's logs and session, not its programs or traces (the agent decides
      // how many calls it makes and how big its programs are).
      const kept = readdirSync(bundle.path('tools'), { recursive: true }).map(String);
      expect(kept).toContain(join('005', 'session.json'));
      expect(kept.filter((f) => /(^|\/)(programs|trace)(\/|$)/.test(f))).toEqual([]);

      const ledger = await tools.call('ledger', {});
      expect(ledger).toEqual({
        isError: false,
        text: expect.stringMatching(/^ledger: no earlier iteration/),
      });

      // The journal: every call, the trees they ran on (unchanged, wrong, right), their answers.
      const calls = ev.tools!.calls;
      expect(calls.map((c) => [c.tool, c.isError])).toEqual([
        ['check', true],
        ['check', true],
        ['check', false],
        ['screen', false],
        ['profile', false],
        ['ledger', false],
      ]);
      expect(new Set(calls.slice(0, 3).map((c) => c.tree)).size).toBe(3);
      expect(calls[2]!.tree).toBe(calls[3]!.tree);
      expect(calls[3]!.answer).toBe(screened.text);
      // Nothing a tool found is the iteration's evidence.
      expect(ev.draw).toBe(4242);
      expect(ev.requests).toBeUndefined();
      expect(ev.gates).toEqual({});
      expect(ev.measurement).toBeUndefined();
      expect(ev.screen).toBeUndefined();
      expect(ev.profile).toBeUndefined();
      // The PR comment counts them, and lists them as advice.
      const section = toolsSection(ev)!;
      expect(section).toMatch(
        /^#### Agent tools\n\nThe agent checked 3 times, screened once, profiled once, read the ledger once \(3 distinct tree\(s\), \d+ of 1800 machine-s\) before committing\. Their answers were advice to the agent, never evidence/,
      );
      expect(section).toContain('| 2 | check | `');
      expect(section).toContain(
        '| ✗ check: failed verification on the CPU: 1 of 1 program(s); first: fwd_bwd@toy: ',
      );
      expect(profiled.text).not.toMatch(/before: \//);
    });
  }, 120_000);

  it('take no path or command, refuse links out of the tree, and hold to the budget under a flood', async () => {
    await withTools({ 'agent.tools.max_calls': 2 }, async ({ tools, ev, agentRepo }) => {
      const asPath = await tools.call('check', { path: '/etc/passwd' });
      expect(asPath).toEqual({ isError: true, text: 'check: takes no arguments, not path' });
      expect((await tools.call('screen', { rounds: 1e9 })).text).toBe(
        'screen: rounds must be an integer from 2 to 10',
      );
      expect((await tools.call('rm -rf /', {})).text).toMatch(
        /^no tool named "rm -rf \/": the tools are check/,
      );

      symlinkSync('/etc/passwd', join(agentRepo, 'toy', 'secrets.txt'));
      const linked = await tools.call('check', {});
      expect(linked.isError).toBe(true);
      expect(linked.text).toMatch(/never takes: toy\/secrets\.txt: a symbolic link/);
      rmSync(join(agentRepo, 'toy', 'secrets.txt'));

      // 10,000 calls at once: one runs (the second of the budget), a few wait, the rest are refused at
      // once, and the journal keeps a count and a few examples.
      const started = Date.now();
      const answers = await Promise.all(Array.from({ length: 10_000 }, () => tools.call('ledger', {})));
      expect(Date.now() - started).toBeLessThan(60_000);
      expect(answers.filter((a) => !a.isError)).toHaveLength(1);
      expect(answers.filter((a) => /budget of 2 call\(s\) this iteration is spent/.test(a.text)).length).toBe(
        9_999,
      );
      expect(ev.tools!.calls).toHaveLength(2);
      expect(ev.tools!.refused.count).toBe(3 + 9_999);
      expect(ev.tools!.refused.sample).toHaveLength(10);
      const after = await tools.call('ledger', {});
      expect(after.text).toMatch(/spent \(agent\.tools\.max_calls\)/);
    });
  }, 120_000);

  it('count a resumed attempt against the calls its earlier attempt made (the journal is in the evidence)', async () => {
    await withTools({ 'agent.tools.max_calls': 1 }, async ({ tools, ctx, bundle, agentRepo }) => {
      expect((await tools.call('ledger', {})).isError).toBe(false);
      await tools.close();
      // The run killed and resumed: the evidence read back from the bundle, a new agent, new tools.
      const resumed = bundle.load();
      const again = agentTools({ ctx, bundle, ev: resumed, save: () => bundle.save(resumed) }, agentRepo);
      expect((await again.call('ledger', {})).text).toMatch(/budget of 1 call\(s\) this iteration is spent/);
    });
  }, 60_000);

  it('start no call once the machine seconds are spent, however many were admitted before', async () => {
    // Attack: admit several calls while the budget is unspent (one runs, the rest wait), so that all of
    // them run although the first alone spends the budget. Each export sleeps 1.2 s at import, past
    // the 1 s budget: only calls admitted before any second was spent may start, whatever the load.
    await withTools({ 'agent.tools.max_seconds': 1 }, async ({ tools, ev, agentRepo }) => {
      edit(agentRepo, 'DELAY_S = 0.02', 'DELAY_S = 0.004\ntime.sleep(1.2)');
      const answers = await Promise.all(Array.from({ length: 4 }, () => tools.call('check', {})));
      let before = 0;
      for (const c of ev.tools!.calls) {
        expect(before, 'a call started after the machine seconds were spent').toBeLessThan(1000);
        before += c.costMs;
      }
      expect(ev.tools!.calls).toHaveLength(1);
      expect(answers.filter((a) => /machine second\(s\) this iteration are spent/.test(a.text))).toHaveLength(
        3,
      );
      expect(ev.tools!.refused.count).toBe(3);
    });
  }, 60_000);

  it('refuse a call past the machine-second budget, and let only a few calls wait', async () => {
    await withTools({ 'agent.tools.max_seconds': 0 }, async ({ tools }) => {
      const answer = await tools.call('check', {});
      expect(answer.text).toBe(
        "check: the tools' 0 machine second(s) this iteration are spent (agent.tools.max_seconds); ledger still answers",
      );
      expect((await tools.call('ledger', {})).isError).toBe(false);
    });
    await withTools({}, async ({ tools, ev, agentRepo }) => {
      // Closed when the agent ends: a call still running is finished and journalled first, later
      // calls are refused.
      edit(agentRepo, 'DELAY_S = 0.02', 'DELAY_S = 0.004');
      const running = tools.call('check', {});
      await tools.close();
      expect(ev.tools!.calls.map((c) => c.tool)).toEqual(['check']);
      expect((await running).isError).toBe(false);
      expect(await tools.call('ledger', {})).toEqual({
        isError: true,
        text: "ledger: the agent's run has ended",
      });
    });
    await withTools({}, async ({ tools }) => {
      const answers = await Promise.all(Array.from({ length: 50 }, () => tools.call('ledger', {})));
      const busy = answers.filter((a) => /calls are already waiting/.test(a.text));
      // Four are queued at once (none has started when the fifth arrives); the budget (24) is not what
      // refused the rest.
      expect(answers.filter((a) => !a.isError)).toHaveLength(4);
      expect(busy).toHaveLength(46);
    });
    // Attack: in a search, one candidate's agent keeps the run's queue full so that its siblings'
    // calls are refused. Each agent has waiting room of its own.
    await withTools({}, async ({ tools, sibling }) => {
      const flood = Array.from({ length: 50 }, () => tools.call('ledger', {}));
      const other = sibling().tools;
      const theirs = await Promise.all([other.call('ledger', {}), other.call('ledger', {})]);
      expect(theirs.map((a) => a.isError)).toEqual([false, false]);
      expect((await Promise.all(flood)).filter((a) => !a.isError)).toHaveLength(4);
    });
    // ...and the queue is the run's: a sibling's call starts only once the call ahead of it has ended.
    await withTools({}, async ({ tools, ev, sibling }) => {
      const other = sibling();
      await Promise.all([tools.call('check', {}), other.tools.call('ledger', {})]);
      const first = ev.tools!.calls[0]!;
      const second = other.ev.tools!.calls[0]!;
      expect(Date.parse(second.at)).toBeGreaterThanOrEqual(Date.parse(first.at) + first.costMs);
    });
  }, 60_000);
});
