/**
 * prepare: a clean worktree at the champion, provenance, and the prompt — template, directive presets
 * and context the harness computed (champion numbers from history, hotspots from the champion's trace,
 * recent log entries). Nothing here comes from an agent.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { TOOL_AGENT_KINDS } from '../../agent/index.js';
import { fillCommand } from '../../config/index.js';
import type { IterationEvidence } from '../../evidence/index.js';
import { displayCommand } from '../../exec/index.js';
import { venvPython } from '../../project/index.js';
import { writeFileAtomic } from '../../util/index.js';
import type { LoopContext } from '../context.js';
import { BundleFiles, type IterationKey } from '../state/bundle.js';
import { championMeasurement, readHistory } from '../state/history.js';
import { agentOutputPath, agentRepoPath, candidateWorktreePath, worktreeAt } from '../state/worktrees.js';
import { ChampionFailure } from './failures.js';
import { recentLogEntries } from './log-file.js';
import { championProfile, knownProfileSummary } from './profile.js';
import { loadDirectives, type PromptVars, renderPrompt } from './prompt.js';
import { hotspotTable, ledgerTable, promptMemory } from './prompt-context.js';
import type { Step } from './step.js';

export const prepareStep: Step = {
  name: 'prepare',
  evaluation: true,
  async run({ ctx, bundle, ev }) {
    await worktreeAt(ctx, candidateWorktreePath(ctx, ev), ev.base.commit);
    ev.provenance.harnessHash = await ctx.git.treeHash(ev.base.commit, ctx.target.protected);
    const info = ctx.backend.info();
    ev.provenance.backend = {
      backend: info.backend,
      description: info.description,
      hasAccelerator: info.hasAccelerator,
      ...(info.acceleratorType ? { acceleratorType: info.acceleratorType } : {}),
    };

    const hotspots = await championHotspots(ctx, ev.base.commit);
    const vars: PromptVars = {
      iteration: String(ev.iteration),
      total_iterations: String(ev.totalIterations),
      target: ctx.target.name,
      branch: ev.candidate?.branch ?? '(assigned when the iteration is published)',
      champion_commit: ev.base.commit.slice(0, 12),
      editable: ctx.target.editable.map((g) => `\`${g}\``).join(', '),
      protected: ctx.target.protected.map((g) => `\`${g}\``).join(', '),
      device: info.description,
      champion_metrics: championMetricsText(ctx, ev.base.commit),
      hotspots,
      recent_log: await recentLogText(ctx, ev.base.commit),
      cpu_test_command: agentTestCommand(ctx, ev),
      result_file: join(agentOutputPath(ctx, ev), AGENT_RESULT_NAME),
      directives:
        loadDirectives(resolve(ctx.root, ctx.config.paths.directives_dir), [
          ...ctx.config.agent.directives,
          ...slotDirectives(ctx, ev.slot),
        ]) +
        searchNote(ev.slot) +
        toolsNote(ctx, ev.slot),
    };
    const templateFile = resolve(ctx.root, ctx.config.paths.prompt);
    const prompt = renderPrompt(readFileSync(templateFile, 'utf8'), vars, templateFile);
    writeFileAtomic(bundle.path(BundleFiles.prompt), prompt);
    return { status: 'done' };
  },
};

/** A candidate's own directive preset (search.slot_directives, round-robin over the slots). */
function slotDirectives(ctx: LoopContext, slot: IterationEvidence['slot']): string[] {
  const presets = ctx.config.search.slot_directives;
  if (!slot || presets.length === 0) return [];
  const preset = presets[(slot.index - 1) % presets.length]!;
  return ctx.config.agent.directives.includes(preset) ? [] : [preset];
}

/** What a candidate of a search is told: others work from the same champion, and only the best is measured. */
function searchNote(slot: IterationEvidence['slot']): string {
  if (!slot) return '';
  return [
    '',
    `## Candidate ${slot.index} of ${slot.of}`,
    '',
    `This iteration proposes ${slot.of} candidates from the same champion, each by a separate agent run that`,
    'cannot see the others. The harness screens every candidate that passes its gates with a short',
    'measurement against the champion and measures only the best one in full, on fresh runs. A change',
    'another candidate is likely to make as well adds nothing: pursue a distinct idea.',
    '',
  ].join('\n');
}

/**
 * What the agent is told of the harness's tools (./agent-tools.ts), when its kind can call them: what
 * each is for, what it costs, and that its answers are advice. Appended like the directives, so a
 * project's own template needs no new placeholder.
 */
function toolsNote(ctx: LoopContext, slot: IterationEvidence['slot']): string {
  const cfg = ctx.config.agent.tools;
  if (!cfg.enabled || !TOOL_AGENT_KINDS.includes(ctx.config.agent.kind)) return '';
  const budget = toolsBudget(cfg, slot);
  return [
    '',
    "## The harness's tools (MCP server `hillclimb`)",
    '',
    'While you work you may call these tools. Each runs on a snapshot the harness takes of your working',
    'tree as it is at the call (save your files first; no commit is needed), in the harness, not in your',
    'sandbox. You pass no paths or commands; `screen` takes a number of rounds.',
    '',
    '- `check`: exports your programs for the CPU and verifies them against the reference, as the CPU',
    '  gate will (tens of seconds). Call it before you commit: a commit that fails verification ends the',
    '  iteration `invalid`.',
    `- \`screen\`: a short paired timing of your tree against the champion on ${ctx.toolsBackend.info().description}:`,
    '  an estimate, its interval and the noise. Advisory: the verdict is measured again on fresh rounds.',
    "- `profile`: where your tree's time goes, diffed against the champion's profile.",
    '- `ledger`: what earlier iterations tried and how each ended.',
    '',
    `Budget for this run: ${budget.calls} call(s) and ${budget.seconds} machine second(s); a call past it is`,
    'refused. The answers are advice to you: the harness checks and measures your commit afresh, and',
    'reports how many calls you made.',
    ...(ctx.config.agent.kind === 'command'
      ? ['', 'A command agent reaches the server at `$HILLCLIMB_TOOLS_URL` (docs/agents.md, "Tools").']
      : []),
    '',
  ].join('\n');
}

/**
 * A run's share of the iteration's tool budget: all of it for one candidate, an equal part for each of
 * a search's candidates (their agents run side by side, each with a journal of its own).
 */
export function toolsBudget(
  cfg: LoopContext['config']['agent']['tools'],
  slot: IterationEvidence['slot'],
): { calls: number; seconds: number } {
  const of = slot?.of ?? 1;
  return { calls: Math.floor(cfg.max_calls / of), seconds: Math.floor(cfg.max_seconds / of) };
}

/** What the agent's result file is called in its output folder (copied into the bundle afterwards). */
export const AGENT_RESULT_NAME = 'result.json';

/**
 * The CPU gate's command as the agent can run it from its repository: the project's interpreter by its
 * absolute path (Codex runs commands in a login shell, and Debian's and Ubuntu's /etc/profile reset
 * PATH), the JUnit report into its output folder.
 */
export function agentTestCommand(ctx: LoopContext, key: number | IterationKey): string {
  const out = agentOutputPath(ctx, key);
  const argv = fillCommand(ctx.target.correctness.cpu.command, {
    python: venvPython(ctx.root),
    root: agentRepoPath(ctx, key),
    junit: join(out, 'junit.xml'),
    metrics: join(out, 'metrics.json'),
    trace: join(out, 'trace'),
    cache: join(out, 'cache'),
  });
  return displayCommand(argv[0], argv.slice(1));
}

function championMetricsText(ctx: LoopContext, champion: string): string {
  const rows = readHistory(ctx.stateDir, ctx.target.name);
  const m = championMeasurement(rows, champion);
  if (!m) {
    return '(not measured yet: this iteration measures the champion as arm A, in the same job as your change)';
  }
  const r = m.row;
  const mfu = m.mfu === null ? 'n/a (no peak for this device)' : `${(m.mfu * 100).toFixed(2)}%`;
  return [
    `| metric | champion | measured in |`,
    `|---|---|---|`,
    `| ${r.metric.label || r.metric.path} (${r.metric.direction} is better) | ${formatValue(m.value, r.metric.unit)} | run ${r.runId} iteration ${r.iteration} (arm ${m.as}, n=${m.as === 'A' ? r.nA : r.nB}) |`,
    `| MFU | ${mfu} | same runs |`,
  ].join('\n');
}

function formatValue(value: number, unit: string): string {
  return unit === 'ms' ? `${value.toPrecision(4)} ms` : `${value.toPrecision(4)}${unit ? ` ${unit}` : ''}`;
}

async function championHotspots(ctx: LoopContext, champion: string): Promise<string> {
  if (!ctx.target.profile) return '(no profile command configured for this target)';
  try {
    const known = await knownProfileSummary(ctx, champion);
    if (known) return hotspotTable(known);
    if (!ctx.prepareMayProfile) {
      return '(no profile of the champion yet: the measuring job profiles it, and the next iteration sees it)';
    }
    const profile = await championProfile(ctx, champion);
    return hotspotTable(profile.summary);
  } catch (e) {
    // A dry run printed the profile command above: that is all it was meant to do.
    if (ctx.dryRun) return "(dry run: the champion's profile command was printed, not run)";
    // A champion that cannot export stops the run here, before the agent spends anything.
    if (e instanceof ChampionFailure) throw e;
    ctx.logger.warn(`champion profile for the prompt failed: ${(e as Error).message}`);
    return `(the champion's profile failed: ${(e as Error).message.split('\n')[0]})`;
  }
}

/** The ledger of every earlier iteration (history rows), then the newest hill-climb log entries. */
async function recentLogText(ctx: LoopContext, base: string): Promise<string> {
  const runLog = join(ctx.runDir, 'hillclimb-log.md');
  const n = ctx.config.loop.log_entries_in_prompt;
  let entries = n > 0 && existsSync(runLog) ? recentLogEntries(readFileSync(runLog, 'utf8'), n) : [];
  if (entries.length < n) {
    const repoLog = await ctx.git.show(base, ctx.config.paths.log_file);
    if (repoLog) entries = [...recentLogEntries(repoLog, n - entries.length), ...entries];
  }
  return promptMemory(ledgerTable(readHistory(ctx.stateDir, ctx.target.name)), entries, n);
}
