/**
 * The message of the commit the harness makes from an agent's working tree when the agent wrote no
 * commit message of its own (codex cannot commit in its sandbox; any agent may leave its change
 * uncommitted): built from its result, with the harness saying it committed.
 */
import type { AgentResult } from './agent.js';

const SUBJECT_MAX = 72;

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
