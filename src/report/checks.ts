/** The checks section: guard and correctness gates, with the names of failing tests. */
import type { GateEvidence, IterationEvidence } from '../evidence/index.js';
import { gateText, guardText } from './facts.js';
import { cell, code, table } from './markdown.js';

/** Failing test names listed per gate in a comment before "and N more". */
export const DEFAULT_FAILING_TESTS = 20;

const GATES = [
  ['cpu', 'CPU correctness'],
  ['accelerator', 'accelerator correctness'],
] as const;

/** `` `test_a`, `test_b` and 3 more `` */
export function failingList(gate: GateEvidence, max: number): string | undefined {
  const failing = gate.junit?.failing ?? [];
  if (failing.length === 0) return undefined;
  const shown = failing.slice(0, Math.max(0, max)).map(code);
  const more = failing.length - shown.length;
  if (shown.length === 0) return `${failing.length} failing tests (names in the evidence bundle)`;
  return `${shown.join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
}

/** The checks table and failing tests; `maxFailing` names per gate. */
export function checksSection(
  evidence: IterationEvidence,
  maxFailing: number = DEFAULT_FAILING_TESTS,
): string {
  const rows: string[][] = [['guard', cell(guardText(evidence.guard))]];
  for (const [key, label] of GATES) rows.push([label, cell(gateText(evidence.gates[key]))]);
  const lines = ['#### Checks', table(['check', 'result'], rows)];
  for (const [key, label] of GATES) {
    const gate = evidence.gates[key];
    const list = gate && failingList(gate, maxFailing);
    if (list) lines.push(`Failing tests (${label}): ${list}`);
  }
  return lines.join('\n\n');
}
