/**
 * propose: the agent works in a repository of its own, cloned at the champion, inside the sandbox where
 * the machine can build one. Afterwards the harness takes its change without trusting that repository
 * (workspace/agent-tree.ts): the plain files of its working tree are copied into the candidate worktree
 * the harness owns and committed there by the harness, with the agent as author and the agent's own
 * commit messages when it wrote any. The harness then records what it committed — the commit, its
 * paths, a git bundle and a patch — so later steps, possibly in another job, can rebuild the candidate.
 *
 * No change → `no-op`. Links, special files or git control files in the agent's tree → `invalid`.
 * Infrastructure failures (binary missing, model API down) are retried by the runner; the agent's own
 * failures are not.
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { type AgentIsolation, type AgentOutcome, agentIdentity, leftoverMessage } from '../../agent/index.js';
import { type AgentEvidence, recordIsolation } from '../../evidence/index.js';
import { SANDBOX_HINT, sandboxAvailability } from '../../exec/index.js';
import { interpreterReadPaths, venvPython } from '../../project/index.js';
import {
  copyPlainTree,
  ExitCode,
  HillclimbError,
  tellingLogLine,
  writeFileAtomic,
} from '../../util/index.js';
import { HARNESS_IDENTITY, readAgentHead, snapshotTree } from '../../workspace/index.js';
import type { LoopContext } from '../context.js';
import { BundleFiles } from '../state/bundle.js';
import { agentOutputPath, agentRepoPath, candidateWorktreePath, worktreeAt } from '../state/worktrees.js';
import { agentTools } from './agent-tools.js';
import { InfraFailure } from './failures.js';
import { candidateRef, iterationBranch } from './naming.js';
import { AGENT_RESULT_NAME } from './prepare.js';
import { oneAtATime } from './programs.js';
import type { Step, StepEnv, StepResult } from './step.js';

const MINUTE_MS = 60_000;
const AGENT_LOG_NAME = 'agent.log';

export const proposeStep: Step = {
  name: 'propose',
  evaluation: true,
  async run(env) {
    const { ctx, bundle, ev } = env;
    const base = ev.base.commit;
    const repo = agentRepoPath(ctx, ev);
    const out = agentOutputPath(ctx, ev);
    rmSync(dirname(repo), { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    // A search's agents may run side by side: the repository's git work, one piece at a time.
    await oneAtATime(() => ctx.git.cloneForAgent(repo, base));

    // An attempt killed before it was recorded is made again under its own number.
    const attempts = (ev.agent?.attempts ?? 0) + 1;
    const resultFile = join(out, AGENT_RESULT_NAME);
    const python = venvPython(ctx.root);
    const tools = ctx.config.agent.tools.enabled ? agentTools(env, repo) : undefined;
    let outcome: AgentOutcome;
    try {
      outcome = await ctx.agent.run({
        iteration: ev.iteration,
        ...(ev.slot ? { slot: ev.slot } : {}),
        workdir: repo,
        prompt: readFileSync(bundle.path(BundleFiles.prompt), 'utf8'),
        resultFile,
        logFile: join(out, AGENT_LOG_NAME),
        timeoutMs: ctx.config.agent.timeout_minutes * MINUTE_MS,
        idleTimeoutMs: ctx.config.agent.idle_timeout_minutes * MINUTE_MS,
        env: {
          HILLCLIMB_ITERATION: String(ev.iteration),
          ...(ev.slot ? { HILLCLIMB_CANDIDATE: `${ev.slot.index}/${ev.slot.of}` } : {}),
          HILLCLIMB_TARGET: ctx.target.name,
          HILLCLIMB_RESULT_FILE: resultFile,
          // `python` is the project's interpreter too, for commands of the agent's own; the prompt's test
          // command names it by its absolute path, which a login shell's PATH cannot lose.
          PATH: [dirname(python), process.env.PATH ?? ''].join(delimiter),
        },
        interpreter: python,
        signal: ctx.signal,
        isolation: await agentIsolation(ctx, repo, out),
        ...(tools ? { tools } : {}),
      });
    } finally {
      // A call still running when the agent ended (or threw) is finished and journalled before its tree
      // is taken, or the step fails: never later, beside the steps after it.
      await tools?.close();
    }
    // What the agent wrote for us, into the bundle: plain files only (its output folder was writable to
    // it), each attempt into a folder of its own, emptied first (a resumed attempt starts again). Never
    // its HOME, which holds its private copy of its login.
    rmSync(join(out, 'home'), { recursive: true, force: true });
    const kept = BundleFiles.agentAttempt(attempts);
    rmSync(bundle.path(kept), { recursive: true, force: true });
    copyPlainTree(out, bundle.path(kept), { maxTotalBytes: 256 * 1024 * 1024 });
    if (outcome.isolation) recordIsolation(ev, 'propose', { mode: outcome.isolation, job: ctx.job });
    const earlier = ev.agent ? [...(ev.agent.earlier ?? []), attemptSummary(ev.agent)] : [];
    ev.agent = {
      kind: ctx.agent.name,
      status: outcome.status,
      exitCode: outcome.exitCode,
      durationMs: outcome.durationMs,
      attempts,
      ...(outcome.infraError ? { infraError: outcome.infraError } : {}),
      ...(outcome.result ? { result: outcome.result } : {}),
      ...(outcome.resultProblem ? { resultProblem: outcome.resultProblem } : {}),
      logFile: `${kept}/${AGENT_LOG_NAME}`,
      promptFile: BundleFiles.prompt,
      ...(earlier.length > 0 ? { earlier } : {}),
    };
    if (outcome.infraError) {
      throw new InfraFailure(`agent ${ctx.agent.name}: ${outcome.infraError}`, {
        hint: `the agent log is ${bundle.path(ev.agent.logFile)}`,
      });
    }

    return oneAtATime(() => takeChange(env, repo, outcome));
  },
};

/**
 * The change: the agent's working tree, taken as plain files into the harness's own worktree, committed,
 * and kept reachable (a ref, a git bundle, a patch).
 */
async function takeChange(
  { ctx, bundle, ev }: StepEnv,
  repo: string,
  outcome: AgentOutcome,
): Promise<StepResult> {
  const base = ev.base.commit;
  const wt = await worktreeAt(ctx, candidateWorktreePath(ctx, ev), base);
  const snapshot = snapshotTree(repo, wt.root);
  if (snapshot.refused.length > 0) {
    await wt.resetHard(base);
    rmSync(dirname(repo), { recursive: true, force: true });
    return {
      status: 'verdict',
      verdict: 'invalid',
      reasons: [
        `the agent's tree holds what the harness never takes: ${snapshot.refused.slice(0, 5).join('; ')}`,
      ],
    };
  }
  await wt.stageAll();
  if (!(await wt.hasStagedChanges())) {
    rmSync(dirname(repo), { recursive: true, force: true });
    const why =
      outcome.status === 'finished'
        ? 'the agent made no commit'
        : outcome.status === 'timeout'
          ? 'the agent timed out without a commit'
          : `the agent failed (exit code ${outcome.exitCode}) without a commit${agentLastWords(bundle.path(ev.agent!.logFile))}`;
    return { status: 'verdict', verdict: 'no-op', reasons: [why] };
  }
  const head = await wt.commit(await commitMessage(ctx, repo, base, outcome.result), {
    identity: HARNESS_IDENTITY,
    author: agentIdentity(ctx.agent.name),
  });
  rmSync(dirname(repo), { recursive: true, force: true });

  // Keep the commit reachable and portable: a ref in the repository, a git bundle and a patch.
  const ref = candidateRef(ctx.runId, ev);
  await ctx.git.updateRef(ref, head);
  await ctx.git.createBundle(bundle.path(BundleFiles.gitBundle), ref, base);
  writeFileAtomic(bundle.path(BundleFiles.patch), await ctx.git.formatPatch(base, head));
  ev.candidate = {
    branch: iterationBranch(ctx, ev),
    commit: head,
    commits: [head],
    subject: await ctx.git.subject(head),
    changedPaths: await ctx.git.changedPaths(base, head),
    patchFile: BundleFiles.patch,
  };
  const note = outcome.status === 'finished' ? undefined : `agent ${outcome.status}, but it committed`;
  return note ? { status: 'done', note } : { status: 'done' };
}

/** How an earlier attempt ended, for the evidence's list of attempts. */
function attemptSummary(a: AgentEvidence): NonNullable<AgentEvidence['earlier']>[number] {
  return {
    attempt: a.attempts,
    status: a.status,
    exitCode: a.exitCode,
    durationMs: a.durationMs,
    ...(a.infraError ? { infraError: a.infraError } : {}),
    logFile: a.logFile,
  };
}

/**
 * The sandbox the agent runs in: its repository and output folder writable; the repository's objects
 * (its clone borrows them), the Python environment and `sandbox.read_paths` read-only. Where the machine
 * cannot build it: unsandboxed with a warning (`sandbox.mode: allow-unsandboxed`), or not at all (`required`, the default).
 */
async function agentIsolation(ctx: LoopContext, repo: string, out: string): Promise<AgentIsolation> {
  const available = await sandboxAvailability();
  if (!available.available) {
    const why = `no sandbox on this machine (${available.reason})`;
    if (ctx.config.sandbox.mode === 'required') {
      throw new HillclimbError(`sandbox.mode is required, but ${why}`, {
        hint: SANDBOX_HINT,
        exitCode: ExitCode.badInput,
      });
    }
    ctx.logger.warn(`the agent runs unsandboxed: ${why}; ${SANDBOX_HINT}`);
    return { sandbox: false, why };
  }
  return {
    sandbox: {
      readOnly: [
        await ctx.git.objectsDir(),
        ...interpreterReadPaths(venvPython(ctx.root)),
        ...ctx.config.sandbox.read_paths,
      ],
      writable: [repo, out],
      home: join(out, 'home'),
    },
  };
}

/**
 * The commit message: the agent's own messages when it committed (read through its object folder, never
 * its config), else one built from its result.
 */
async function commitMessage(
  ctx: LoopContext,
  repo: string,
  base: string,
  result: Parameters<typeof leftoverMessage>[1],
): Promise<string> {
  const head = readAgentHead(repo);
  const objects = join(repo, '.git', 'objects');
  if (head && head !== base && existsSync(objects)) {
    const messages = await ctx.git.messagesVia(objects, base, head);
    if (messages && messages.length > 0) return `${messages.join('\n\n')}\n`;
  }
  return leftoverMessage(ctx.agent.name, result);
}

/** Shells say a program is missing in these words (dash, bash, env, execvp). */
const NOT_FOUND = /: (?:\d+: )?(?:[^:]+: )?(?:not found|command not found|No such file or directory)$/;

/**
 * The line of a failed agent's log that says why, for the verdict: a program its sandbox could not
 * find (with where to look), else its last line that reads as an error. Empty when there is none.
 */
export function agentLastWords(logFile: string): string {
  const line = tellingLogLine(logFile, {
    // The log opens with the harness's header (`$ <command>`, which spans lines in the sandbox, then
    // `# cwd: …`); what the agent said comes after it.
    headerEnd: /^# cwd: .*$/m,
    skip: /^# /,
    within: 40,
    telling: [NOT_FOUND, /\b(?:error|failed|fatal|denied)\b/i],
  });
  if (line === undefined) return '';
  if (NOT_FOUND.test(line)) {
    return (
      `: ${line.slice(0, 300)} (in the sandbox PATH shows the system folders, the agent's own binary, ` +
      "Node.js and the project's .venv; a shim such as pyenv's or a tool under your home is not there: " +
      'name the program by an absolute path outside your home, or {python})'
    );
  }
  return `: ${line.slice(0, 300)}`;
}
