/**
 * Committing an agent's uncommitted change on its behalf. Used for codex: its workspace-write sandbox
 * keeps `.git` read-only (so the agent cannot rewrite hooks, config or history), which also means it
 * cannot commit. The harness commits the working tree instead, with the harness as committer and the
 * agent as author, and reports the SHA as `harnessCommit`. The guard and the static scan then judge
 * that commit like any other.
 */
import type { Git } from '../workspace/git.js';
import { HARNESS_IDENTITY } from '../workspace/git.js';
import type { AgentResult } from './agent.js';
import { agentIdentity } from './environment.js';

const SUBJECT_MAX = 72;

/**
 * Commit leftovers when the agent made no commit of its own. `exclude` names the harness's own files
 * (result file, logs) in case they live inside the working tree. Returns the new SHA, or undefined.
 */
export async function commitLeftovers(
  git: Git,
  headBefore: string,
  agent: string,
  result: AgentResult | undefined,
  exclude: readonly string[] = [],
): Promise<string | undefined> {
  if ((await git.head()) !== headBefore) return undefined;
  if (await git.isClean()) return undefined;
  await git.stageAll({ exclude });
  if (!(await git.hasStagedChanges())) return undefined;
  return git.commit(leftoverMessage(agent, result), {
    identity: HARNESS_IDENTITY,
    author: agentIdentity(agent),
  });
}

export function leftoverMessage(agent: string, result: AgentResult | undefined): string {
  const first = (result?.summary ?? result?.hypothesis ?? `${agent} change`).split('\n')[0]!.trim();
  const subject = first.length > SUBJECT_MAX ? `${first.slice(0, SUBJECT_MAX - 1)}…` : first;
  const body = [
    result ? `Hypothesis: ${result.hypothesis}` : undefined,
    result ? `Summary: ${result.summary}` : undefined,
    `Committed by the hillclimb harness on behalf of the ${agent} agent, from the files it left.`,
  ].filter((l) => l !== undefined);
  return `${subject}\n\n${body.join('\n\n')}\n`;
}
