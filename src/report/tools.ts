/**
 * What the agent asked the harness's tools while it worked (evidence `tools`, written by
 * src/loop/steps/agent-tools.ts): one sentence of counts for the PR and the comment, and the calls
 * in order. The answers were advice to the agent; the section says so, beside a verdict measured afresh.
 */
import type { AgentToolsEvidence, IterationEvidence } from '../evidence/index.js';
import { cell, code } from './markdown.js';

/** Calls listed in the comment; the bundle's evidence has all of them. */
const LISTED_CALLS = 8;

/** Calls and machine seconds spent (ledger calls use no machine time). */
export function toolsSpent(tools: AgentToolsEvidence): { calls: number; seconds: number } {
  let ms = 0;
  for (const c of tools.calls) if (c.tool !== 'ledger') ms += c.costMs;
  return { calls: tools.calls.length, seconds: ms / 1000 };
}

/** "The agent checked 4 times and screened 2 (3 trees, 41 machine-s of 1800) before committing." */
export function toolsSentence(tools: AgentToolsEvidence | undefined): string | undefined {
  if (!tools || (tools.calls.length === 0 && tools.refused.count === 0)) return undefined;
  const n = (tool: string) => tools.calls.filter((c) => c.tool === tool).length;
  const times = (k: number) => (k === 1 ? 'once' : `${k} times`);
  const parts = [
    n('check') ? `checked ${times(n('check'))}` : '',
    n('screen') ? `screened ${times(n('screen'))}` : '',
    n('profile') ? `profiled ${times(n('profile'))}` : '',
    n('ledger') ? `read the ledger ${times(n('ledger'))}` : '',
  ].filter(Boolean);
  const trees = new Set(tools.calls.flatMap((c) => (c.tree ? [c.tree] : []))).size;
  const { seconds } = toolsSpent(tools);
  const refused = tools.refused.count > 0 ? `; ${tools.refused.count} call(s) were refused` : '';
  const did = parts.length > 0 ? parts.join(', ') : 'made no call that ran';
  return `The agent ${did} (${trees} distinct tree(s), ${seconds.toFixed(0)} of ${tools.budget.seconds} machine-s) before committing${refused}.`;
}

/** The comment's section: the sentence, then the first calls. Undefined when the agent called nothing. */
export function toolsSection(evidence: IterationEvidence): string | undefined {
  const tools = evidence.tools;
  const sentence = toolsSentence(tools);
  if (!tools || sentence === undefined) return undefined;
  const lines = [
    '#### Agent tools',
    '',
    `${sentence} Their answers were advice to the agent, never evidence: every number above was measured afresh.`,
  ];
  if (tools.calls.length > 0) {
    lines.push('', '| # | tool | tree | answer | took |', '|---|---|---|---|---|');
    tools.calls.slice(0, LISTED_CALLS).forEach((c, i) => {
      const first = c.answer.split('\n', 1)[0]!.slice(0, 160);
      lines.push(
        `| ${i + 1} | ${c.tool} | ${c.tree ? code(c.tree.slice(0, 10)) : '—'} | ${c.isError ? '✗ ' : ''}${cell(first)} | ${(c.costMs / 1000).toFixed(1)} s |`,
      );
    });
    if (tools.calls.length > LISTED_CALLS) {
      lines.push(`| … | ${tools.calls.length - LISTED_CALLS} more in the evidence bundle | | | |`);
    }
  }
  return lines.join('\n');
}
