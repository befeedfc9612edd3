/** The checks section: guard and correctness gates, with the names of failing tests. */
import type { GateEvidence, IterationEvidence } from '../evidence/index.js';
import { OBSERVES_RULE_PREFIX } from '../workspace/index.js';
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
  const programs = programsText(evidence);
  if (programs) rows.push(['programs', cell(programs)]);
  const lines = ['#### Checks', table(['check', 'result'], rows)];
  for (const [key, label] of GATES) {
    const gate = evidence.gates[key];
    const list = gate && failingList(gate, maxFailing);
    if (list) lines.push(`Failing tests (${label}): ${list}`);
  }
  const signals = observesList(evidence, MAX_SIGNALS);
  if (signals) lines.push(signals);
  return lines.join('\n\n');
}

/** Lines of code listed as signals, at most. */
const MAX_SIGNALS = 8;

const CHAMPION_SOURCE = {
  kept: 'the champion timed by the programs it won with',
  stored: 'the champion timed by the programs it won with (from the store)',
  'exported-checked': 'the champion exported again, the same bytes it won with',
  'exported-unverified':
    'the champion exported again under other JAX versions than it won with: its programs cannot be checked',
  exported: 'the champion exported again (no record of the programs it won with)',
} as const;

/**
 * What is known of the programs that were timed: whether the suite's process built the programs that
 * were exported (the witness), and where the champion's came from.
 */
export function programsText(evidence: IterationEvidence): string | undefined {
  const parts: string[] = [];
  for (const [key, label] of GATES) {
    const w = evidence.gates[key]?.witness;
    if (!w) continue;
    const where = key === 'cpu' ? '' : ` (${label})`;
    if (w.status === 'matched') parts.push(`the test suite's process built the exported programs${where}`);
    else if (w.status === 'not-pytest') parts.push(`not compared with the test suite's (not pytest)${where}`);
    else if (w.status === 'missing') parts.push(`the test suite reported no programs${where}`);
    else
      parts.push(`the test suite's process built other programs${where}: ${(w.differing ?? []).join(', ')}`);
  }
  for (const source of Object.values(evidence.championPrograms ?? {})) {
    if (source) parts.push(CHAMPION_SOURCE[source]);
  }
  return parts.length > 0 ? [...new Set(parts)].join('; ') : undefined;
}

/**
 * The candidate's lines that can tell how the code is run (argv, paths, the environment, JAX options,
 * the stack, the clock): for the reviewer, never a verdict — the harness judged the programs themselves.
 */
export function observesList(evidence: IterationEvidence, max: number): string | undefined {
  const found = (evidence.guard?.findings ?? []).filter((f) => f.rule.startsWith(OBSERVES_RULE_PREFIX));
  if (found.length === 0) return undefined;
  const shown = found
    .slice(0, max)
    .map(
      (f) =>
        `- ${code(`${f.file}${f.line ? `:${f.line}` : ''}`)} ${f.rule.slice(OBSERVES_RULE_PREFIX.length)}: ${code(f.excerpt)}`,
    );
  const more = found.length - shown.length;
  return [
    'Code that can tell how it is run (for the reviewer; the verdict judged the programs themselves):',
    ...shown,
    ...(more > 0 ? [`- … and ${more} more (the evidence bundle's guard findings)`] : []),
  ].join('\n');
}
