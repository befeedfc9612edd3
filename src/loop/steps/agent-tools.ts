/**
 * The tools an agent may call while it works (issue 38; docs/agents.md "Tools"): harness code run on a
 * snapshot of the agent's working tree, so it learns whether its kernel exports and verifies, how it
 * compares with the champion and where the time goes before it commits, instead of an iteration later.
 *
 * - `check`:   export the tree's programs for the CPU and verify them at this call's shapes (the gate's
 *              export and verifier, without the test suite).
 * - `screen`:  a short paired verifier session of the tree against the champion on the measuring backend.
 * - `profile`: the tree's hotspots and their diff against the champion's profile.
 * - `ledger`:  what earlier iterations tried, and how each ended.
 *
 * What keeps it honest:
 * - The agent hands over nothing but a tool's name and a few numbers: the harness snapshots its tree (the
 *   same plain-file copy propose takes, workspace/agent-tree.ts), commits it in a worktree of its own and
 *   runs the very export and verifier steps a gate runs, in the sandbox.
 * - Answers are advisory. Their sessions live in the bundle's `tools/` folder, which no step reads, and
 *   under a draw of the tools' own, so the gate's shapes stay unknown to the agent; the candidate it
 *   commits is exported, verified and timed afresh.
 * - A budget per iteration (calls and machine seconds, `agent.tools`; a search's candidates split it),
 *   counted from the journal in the evidence, so a resumed attempt cannot start over. Calls run one at a time
 *   behind any other tool work of the run; a few may wait, more are refused at once.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentTools, ToolAnswer, ToolDescription } from '../../agent/index.js';
import { metricValue, type ToolCallEvidence } from '../../evidence/index.js';
import { formatDiff, toolsSpent } from '../../report/index.js';
import { pairedLogRatio } from '../../stats/index.js';
import { diffSummaries } from '../../trace/index.js';
import { errorMessage } from '../../util/index.js';
import { HARNESS_IDENTITY, snapshotTree } from '../../workspace/index.js';
import type { LoopContext } from '../context.js';
import { iterationDirName } from '../state/bundle.js';
import { readHistory } from '../state/history.js';
import { worktreeAt } from '../state/worktrees.js';
import { championPrograms } from './champion-programs.js';
import { failingPrograms } from './gates.js';
import { toolsBudget } from './prepare.js';
import { championProfile, profileCommit } from './profile.js';
import {
  type DrawHolder,
  exportPrograms,
  oneAtATime,
  PLATFORMS,
  type Platform,
  requestPlan,
  runGateSession,
  runVerifier,
  timedCalls,
  VerifierFailed,
  type VerifierRun,
} from './programs.js';
import { ledgerTable } from './prompt-context.js';
import type { StepEnv } from './step.js';

/** The longest answer kept in the journal. */
export const ANSWER_CHARS = 2000;
/** The longest answer the agent gets (a profile diff is the longest the tools write). */
const ANSWER_MAX_CHARS = 16_000;
/** Calls one agent may have running and waiting; more are refused at once. */
const WAITING_CALLS = 4;
/** Refused calls kept as examples in the journal. */
const REFUSED_SAMPLE = 10;

const DESCRIPTIONS: readonly ToolDescription[] = [
  {
    name: 'check',
    description:
      "Export your working tree's kernel programs for the CPU and verify them against the reference, the way the CPU gate does (without the test suite), at shapes drawn for this call. Answers passed, or the first program that failed and its error. Costs one export and one verifier run (tens of seconds); counts against the iteration's tool budget. Advisory: your commit is checked again from scratch.",
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  },
  {
    name: 'screen',
    description:
      "A short paired timing of your working tree against the champion on the measuring machine: the estimated speedup, its 95% interval and the rounds' noise. Advisory only: it is never evidence, and the iteration's verdict is measured on fresh rounds. Costs an export and a verifier session; counts against the budget. Run `check` first.",
    inputSchema: {
      type: 'object',
      properties: { rounds: { type: 'integer', minimum: 2, maximum: 10, description: 'paired rounds' } },
      additionalProperties: false,
    },
  },
  {
    name: 'profile',
    description:
      "Profile your working tree's programs and diff the hotspots against the champion's profile (ops, ms per step, launches). Costs an export and a profiled verifier run; counts against the budget.",
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  },
  {
    name: 'ledger',
    description:
      "What earlier iterations of this target tried and how each ended (the harness's records; a repeat of the same change on the same champion is refused unmeasured). Free of machine time; counts as a call.",
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  },
];

type ToolName = 'check' | 'screen' | 'profile' | 'ledger';

/** What one call found, before it is journalled. */
interface Ran {
  text: string;
  isError: boolean;
  tree?: string;
}

/** The tools for one agent run: the interface the agent module serves, over this iteration's budget. */
/** The tools of one agent run; `close` once the agent has ended. */
export interface AgentToolsSession extends AgentTools {
  /** Refuse any later call, and wait for the calls already admitted to end and be journalled. */
  close(): Promise<void>;
}

export function agentTools(stepEnv: StepEnv, repo: string): AgentToolsSession {
  // The tools time on the tools' backend (context.ts): the measuring one where this process measures.
  const { ctx: loop } = stepEnv;
  const env: StepEnv =
    loop.toolsBackend === loop.backend
      ? stepEnv
      : { ...stepEnv, ctx: { ...loop, backend: loop.toolsBackend } };
  const { ctx, ev } = env;
  const cfg = ctx.config.agent.tools;
  ev.tools ??= {
    budget: toolsBudget(cfg, ev.slot),
    calls: [],
    refused: { count: 0, sample: [] },
  };
  const journal = ev.tools;
  // A draw of the tools' own: an answer never tells the agent which shapes the gate will ask for.
  const draw: DrawHolder = { iteration: ev.iteration };
  const queue = runQueue(loop);
  let admitted = 0; // calls admitted but not yet journalled (running or waiting)
  let closed = false;
  const inFlight = new Set<Promise<unknown>>();

  const refuse = (why: string): ToolAnswer => {
    journal.refused.count++;
    if (journal.refused.sample.length < REFUSED_SAMPLE) journal.refused.sample.push(why.slice(0, 160));
    return { text: why, isError: true };
  };

  return {
    list: () => DESCRIPTIONS,
    async close() {
      closed = true;
      await Promise.allSettled([...inFlight]);
    },
    async call(name, args, signal) {
      if (closed) return refuse(`${String(name).slice(0, 40)}: the agent's run has ended`);
      const tool = DESCRIPTIONS.find((d) => d.name === name)?.name as ToolName | undefined;
      if (tool === undefined) {
        return refuse(
          `no tool named ${JSON.stringify(String(name).slice(0, 40))}: the tools are ${DESCRIPTIONS.map((d) => d.name).join(', ')}`,
        );
      }
      const parsed = toolArguments(tool, args, cfg.screen_rounds);
      if (typeof parsed === 'string') return refuse(`${tool}: ${parsed}`);
      const spent = toolsSpent(journal);
      if (spent.calls + admitted >= journal.budget.calls) {
        return refuse(
          `${tool}: the tool budget of ${journal.budget.calls} call(s) this iteration is spent (agent.tools.max_calls)`,
        );
      }
      const secondsSpent = () =>
        tool !== 'ledger' && toolsSpent(journal).seconds >= journal.budget.seconds
          ? refuse(
              `${tool}: the tools' ${journal.budget.seconds} machine second(s) this iteration are spent (agent.tools.max_seconds); ledger still answers`,
            )
          : undefined;
      const spentAlready = secondsSpent();
      if (spentAlready) return spentAlready;
      // Counted per agent, not per queue: a search's agents share the queue, and one that kept it full
      // would have its siblings' calls refused.
      if (admitted >= WAITING_CALLS) {
        return refuse(`${tool}: ${admitted} calls are already waiting; call again when one has answered`);
      }
      admitted++;
      let running: Promise<ToolAnswer> | undefined;
      try {
        running = queue.run(async () => {
          if (signal?.aborted) return { text: `${tool}: the agent's run ended`, isError: true };
          // Asked again at its turn: the calls it waited behind may have spent the seconds.
          const spentWhileWaiting = secondsSpent();
          if (spentWhileWaiting) return spentWhileWaiting;
          const started = Date.now();
          let ran: Ran;
          try {
            ran = await runTool(env, repo, draw, tool, parsed);
          } catch (e) {
            // Harness trouble (an export that could not start, a verifier that crashed): the agent's
            // answer says so; the iteration goes on.
            ran = {
              text: `${tool}: the harness could not answer: ${errorMessage(e).slice(0, 500)}`,
              isError: true,
            };
          }
          dropBulk(callDir(env, journal.calls.length + 1));
          const entry: ToolCallEvidence = {
            tool,
            ...(ran.tree ? { tree: ran.tree } : {}),
            isError: ran.isError,
            answer: ran.text.slice(0, ANSWER_CHARS),
            costMs: Date.now() - started,
            at: new Date(started).toISOString(),
          };
          journal.calls.push(entry);
          env.save();
          return { text: ran.text.slice(0, ANSWER_MAX_CHARS), isError: ran.isError };
        });
        inFlight.add(running);
        return await running;
      } finally {
        admitted--;
        if (running) inFlight.delete(running);
      }
    },
  };
}

/** The arguments a tool takes, checked: a few small numbers, never a path or a command. */
function toolArguments(tool: ToolName, args: unknown, defaultRounds: number): { rounds: number } | string {
  const given = args === undefined || args === null ? {} : args;
  if (typeof given !== 'object' || Array.isArray(given)) return 'arguments must be an object';
  const entries = Object.entries(given);
  const allowed = tool === 'screen' ? ['rounds'] : [];
  const unknown = entries.filter(([k]) => !allowed.includes(k)).map(([k]) => k.slice(0, 40));
  if (unknown.length > 0)
    return `takes ${allowed.length ? allowed.join(', ') : 'no arguments'}, not ${unknown.join(', ')}`;
  const rounds = (given as { rounds?: unknown }).rounds ?? defaultRounds;
  if (!Number.isInteger(rounds) || (rounds as number) < 2 || (rounds as number) > 10) {
    return 'rounds must be an integer from 2 to 10';
  }
  return { rounds: rounds as number };
}

/** One call's work. Throws only for the harness's own trouble. */
async function runTool(
  env: StepEnv,
  repo: string,
  draw: DrawHolder,
  tool: ToolName,
  args: { rounds: number },
): Promise<Ran> {
  const { ctx } = env;
  if (tool === 'ledger') {
    const table = ledgerTable(readHistory(ctx.stateDir, ctx.target.name));
    return {
      text: table || 'ledger: no earlier iteration of this target said what it tried',
      isError: false,
    };
  }
  const snap = await snapshot(env, repo);
  if ('refused' in snap) return { text: `${tool}: ${snap.refused}`, isError: true };
  if (snap.commit === undefined) {
    return {
      text: `${tool}: your working tree is the champion's (no change yet): nothing to ${tool}`,
      isError: true,
      tree: snap.tree,
    };
  }
  const found =
    tool === 'check'
      ? await check(env, draw, snap.commit)
      : tool === 'screen'
        ? await screen(env, draw, snap.commit, args.rounds)
        : await profile(env, draw, snap.commit);
  return { ...found, tree: snap.tree };
}

/** The folder of call `n`'s work in the bundle (no step reads it). */
function callDir(env: StepEnv, n: number): string {
  return env.bundle.path(join('tools', String(n).padStart(3, '0')));
}

/**
 * The folder of this call's tool work, emptied: the call's own, or a subfolder for an accelerator's
 * export after the CPU's (`check` exports for both and keeps both logs).
 */
function toolsDir(env: StepEnv, n: number, sub?: string): string {
  const dir = sub === undefined ? callDir(env, n) : join(callDir(env, n), sub);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * A call's programs and traces, once it has answered: the bundle keeps its logs and sessions. Each call
 * could add an export's programs and a profile's traces, and the agent decides how many calls it makes
 * and how big its programs are; the bundle travels between jobs and to the store.
 */
function dropBulk(dir: string): void {
  const accelerators = PLATFORMS.filter((p) => p !== 'cpu');
  for (const bulk of [
    'programs',
    'trace',
    join('champion', 'trace'),
    ...accelerators.map((p) => join(p, 'programs')),
  ]) {
    rmSync(join(dir, bulk), { recursive: true, force: true });
  }
}

/**
 * The agent's working tree as a commit on the champion, taken as propose takes it (plain files only), in
 * a worktree of the tools' own: `commit` undefined when it is the champion's tree.
 */
async function snapshot(
  { ctx, ev }: StepEnv,
  repo: string,
): Promise<{ commit?: string; tree: string } | { refused: string }> {
  const base = ev.base.commit;
  return oneAtATime(async () => {
    const wt = await worktreeAt(ctx, join(ctx.runDir, 'worktrees', `tools-${iterationDirName(ev)}`), base);
    try {
      const taken = snapshotTree(repo, wt.root);
      if (taken.refused.length > 0) {
        return {
          refused: `your tree holds what the harness never takes: ${taken.refused.slice(0, 3).join('; ')}`,
        };
      }
      await wt.stageAll();
      if (!(await wt.hasStagedChanges())) return { tree: await wt.treeHash(base) };
      const commit = await wt.commit("hillclimb: the agent's working tree, for a tool call", {
        identity: HARNESS_IDENTITY,
      });
      return { commit, tree: await wt.treeHash(commit) };
    } finally {
      await wt.resetHard(base); // the next call's worktreeAt finds it clean at the champion
    }
  });
}

/** Export `commit`'s programs into a fresh folder of the tools': undefined when the export failed. */
async function exportTree(
  env: StepEnv,
  draw: DrawHolder,
  commit: string,
  platform: Platform,
  backend: LoopContext['backend'],
): Promise<
  { dir: string; plan: Awaited<ReturnType<typeof requestPlan>>; work: string } | { failed: string }
> {
  const { ctx, ev } = env;
  const plan = await requestPlan(ctx, draw, { backend, harness: ev.base.commit, platform });
  const work = toolsDir(env, (ev.tools?.calls.length ?? 0) + 1, platform === 'cpu' ? undefined : platform);
  const dir = join(work, 'programs');
  const exported = await exportPrograms(ctx, draw, {
    backend,
    commit,
    plan,
    dest: dir,
    logFile: join(work, 'export.log'),
    record: { dir: 'programs', logFile: 'export.log' },
    name: `tools-${platform}`,
    step: platform === 'cpu' ? 'cpu-gate' : 'measure',
  });
  if (exported.status === 'failed') return { failed: exported.reason ?? 'see its log' };
  return { dir, plan, work };
}

async function check(env: StepEnv, draw: DrawHolder, commit: string): Promise<Omit<Ran, 'tree'>> {
  const { ctx } = env;
  const exported = await exportTree(env, draw, commit, 'cpu', ctx.cpuBackend);
  if ('failed' in exported) return { text: `check: failed at the export: ${exported.failed}`, isError: true };
  const cpu = await gateSession(env, draw, exported, 'cpu', ctx.cpuBackend);
  const accelerator = ctx.backend.info().platform;
  if (cpu.isError || accelerator === 'cpu') return cpu;
  // The measuring machine has an accelerator: its export (Mosaic lowering for a TPU) and its gate too.
  const there = await exportTree(env, draw, commit, accelerator, ctx.backend);
  if ('failed' in there) {
    return { text: `${cpu.text}; failed at the ${accelerator} export: ${there.failed}`, isError: true };
  }
  const answer = await gateSession(env, draw, there, accelerator, ctx.backend);
  return { text: `${cpu.text}; ${answer.text.replace(/^check: /, '')}`, isError: answer.isError };
}

/** The verifier's gate session over one export of the tree, on `backend`, as its answer. */
async function gateSession(
  { ctx, ev }: StepEnv,
  draw: DrawHolder,
  exported: { dir: string; plan: Awaited<ReturnType<typeof requestPlan>>; work: string },
  platform: Platform,
  backend: LoopContext['backend'],
): Promise<Omit<Ran, 'tree'>> {
  const cpu = platform === 'cpu';
  const run = await runGateSession(ctx, draw, {
    platform,
    draw: exported.plan.draw,
    arm: 'B',
    programs: exported.dir,
    backend,
    harness: ev.base.commit,
    sessionFile: join(exported.work, 'session.json'),
    logFile: join(exported.work, 'verify.log'),
    name: cpu ? 'tools-check' : 'tools-check-accelerator',
    step: cpu ? 'cpu-gate' : 'accelerator-gate',
  });
  return gateAnswer(run.session.gate!, cpu ? 'the CPU' : backend.info().description);
}

/** A gate session's answer: passed, or the first program that failed and its error. */
function gateAnswer(gate: NonNullable<VerifierRun['session']['gate']>, where: string): Omit<Ran, 'tree'> {
  if (gate.passed) {
    return {
      text: `check: passed: ${gate.total} program(s) exported for ${where} and verified against the reference at this call's shapes`,
      isError: false,
    };
  }
  const failing = failingPrograms(gate.programs);
  return {
    text: `check: failed verification on ${where}: ${gate.failed} of ${gate.total} program(s); first: ${failing[0] ?? 'none verified'}`,
    isError: true,
  };
}

async function screen(
  env: StepEnv,
  draw: DrawHolder,
  commit: string,
  rounds: number,
): Promise<Omit<Ran, 'tree'>> {
  const { ctx, ev } = env;
  const platform = ctx.backend.info().platform;
  const exported = await exportTree(env, draw, commit, platform, ctx.backend);
  if ('failed' in exported)
    return { text: `screen: failed at the export: ${exported.failed}`, isError: true };
  const { dir, plan, work } = exported;
  const champion = await championPrograms(ctx, draw, ev.base.commit, plan);
  let run: Awaited<ReturnType<typeof runVerifier>>;
  try {
    run = await runVerifier(ctx, draw, {
      mode: 'measure',
      platform,
      draw: plan.draw,
      arms: ['A', 'B'],
      rounds,
      ...timedCalls(ctx),
      backend: ctx.backend,
      harness: ev.base.commit,
      programs: { A: champion.dir, B: dir },
      sessionFile: join(work, 'session.json'),
      logFile: join(work, 'verify.log'),
      name: 'tools-screen',
      step: 'measure',
    });
  } catch (e) {
    if (e instanceof VerifierFailed) return { text: `screen: ${e.message}`, isError: true };
    throw e;
  }
  const s = run.session;
  const b = s.arms.B;
  if (!b || b.failure)
    return { text: `screen: your programs failed verification: ${b?.failure ?? 'no arm'}`, isError: true };
  if (s.identical)
    return { text: "screen: your programs are the champion's bytes: nothing to time", isError: true };
  const metric = ctx.target.bench.metric;
  const values = (arm: 'A' | 'B') =>
    s.rounds.map((r) => metricValue(r.metrics[arm]!, metric.path, 'session'));
  // A speedup reads > 1 whichever way the metric points.
  const [num, den] = metric.direction === 'lower' ? [values('A'), values('B')] : [values('B'), values('A')];
  const p = pairedLogRatio(num, den, ctx.config.measure.confidence);
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  return {
    text:
      `screen (advisory, never evidence): ${p.estimate.toFixed(3)}× the champion ` +
      `[${p.ci.lo.toFixed(3)}, ${p.ci.hi.toFixed(3)}] (${pct(ctx.config.measure.confidence)} interval) over ${p.rounds} paired rounds of ${metric.label ?? metric.path}; ` +
      `the rounds' ratios vary by ${pct(Math.expm1(p.logSd))}. The iteration's verdict is measured again on fresh rounds.`,
    isError: false,
  };
}

async function profile(env: StepEnv, draw: DrawHolder, commit: string): Promise<Omit<Ran, 'tree'>> {
  const { ctx, ev } = env;
  if (!ctx.target.profile) {
    return { text: `profile: target ${ctx.target.name} has no profile command configured`, isError: true };
  }
  const platform = ctx.backend.info().platform;
  const exported = await exportTree(env, draw, commit, platform, ctx.backend);
  if ('failed' in exported)
    return { text: `profile: failed at the export: ${exported.failed}`, isError: true };
  const { dir, work } = exported;
  let summary: Awaited<ReturnType<typeof profileCommit>>;
  try {
    summary = await profileCommit(ctx, draw, {
      arm: 'B',
      harness: ev.base.commit,
      programs: dir,
      traceDir: join(work, 'trace'),
      metrics: join(work, 'metrics.json'),
      log: join(work, 'profile.log'),
      session: join(work, 'session.json'),
      name: 'tools-profile',
    });
  } catch (e) {
    if (e instanceof VerifierFailed || !existsSync(join(work, 'session.json'))) {
      return { text: `profile: ${errorMessage(e).slice(0, 500)}`, isError: true };
    }
    throw e;
  }
  // Never into the champion's cached or shared profile: the agent runs (and may load the machine) while
  // it is made, and the profile step and later iterations would show it.
  const champion = await championProfile(ctx, ev.base.commit, { scratch: join(work, 'champion') });
  return {
    text: `profile of your tree against the champion's (advisory):\n${withoutPaths(formatDiff(diffSummaries(champion.summary, summary), 12))}`,
    isError: false,
  };
}

/** The diff's text without the lines naming the harness's trace files (the agent cannot read them). */
function withoutPaths(diff: string): string {
  return diff
    .split('\n')
    .filter((l) => !/^(before|after): +\//.test(l))
    .join('\n');
}

/**
 * One queue of tool work per run, whichever candidate's agent calls: calls run one at a time. Keyed by
 * the tools' backend, which every context of the run shares (a search gives each candidate's steps a
 * copy of the context, so a queue keyed by the context was each candidate's own).
 */
const queues = new WeakMap<LoopContext['toolsBackend'], ReturnType<typeof newQueue>>();
function runQueue(ctx: LoopContext) {
  let q = queues.get(ctx.toolsBackend);
  if (!q) {
    q = newQueue();
    queues.set(ctx.toolsBackend, q);
  }
  return q;
}

function newQueue() {
  let tail: Promise<unknown> = Promise.resolve();
  return {
    run<T>(fn: () => Promise<T>): Promise<T> {
      const p = tail.then(fn, fn);
      tail = p.catch(() => undefined);
      return p;
    },
  };
}
