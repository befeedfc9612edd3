/**
 * Plain-text output for the terminal: one progress line per step and the table at the end of a run.
 * No colour codes; columns are aligned by code points (every symbol used here is one column wide).
 */
import type { IterationEvidence, StepName } from '../evidence/index.js';
import { median } from '../stats/index.js';
import {
  championAfter,
  gateText,
  guardText,
  headline,
  measuredChange,
  subjectOf,
  verdictLabel,
} from './facts.js';
import {
  EM_DASH,
  formatDuration,
  formatSignedValue,
  formatValue,
  iterationTag,
  oneLine,
  plural,
  shortSha,
  truncateText,
} from './format.js';
import { beforeAfter, hotspotBasis, profilerInflated, topChanges } from './hotspots.js';

/** Subjects longer than this are shortened in the run table. */
export const TABLE_SUBJECT_WIDTH = 48;

/** `A 12.31 ms · B 10.02 ms (n=5+5)`, from the runs finished so far. */
export function measureProgress(evidence: IterationEvidence): string | undefined {
  const m = evidence.measurement;
  if (!m) return undefined;
  const values = (arm: 'A' | 'B') =>
    m.runs.filter((r) => r.arm === arm && r.value !== null).map((r) => r.value!);
  const a = values('A');
  const b = values('B');
  const med = (xs: number[]) => (xs.length === 0 ? EM_DASH : formatValue(median(xs), m.metric.unit));
  const failed = m.runs.filter((r) => r.value === null).length;
  return `A ${med(a)} · B ${med(b)} (n=${a.length}+${b.length}${failed > 0 ? `, ${failed} failed` : ''})`;
}

/** What a step found, in one line, from the evidence. */
function stepDetail(evidence: IterationEvidence, step: StepName): string | undefined {
  switch (step) {
    case 'propose': {
      const agent = evidence.agent;
      if (!agent) return undefined;
      const commit = evidence.candidate
        ? `commit ${shortSha(evidence.candidate.commit)} “${truncateText(subjectOf(evidence), TABLE_SUBJECT_WIDTH)}”`
        : 'no commit';
      return `agent ${agent.kind} ${agent.status} in ${formatDuration(agent.durationMs)}: ${commit}`;
    }
    case 'guard':
      return evidence.guard ? guardText(evidence.guard) : undefined;
    case 'cpu-gate':
      return evidence.gates.cpu ? gateText(evidence.gates.cpu) : undefined;
    case 'accelerator-gate':
      return evidence.gates.accelerator ? gateText(evidence.gates.accelerator) : undefined;
    case 'measure': {
      const progress = measureProgress(evidence);
      const change = measuredChange(evidence);
      return progress && change ? `${progress} · ${change.delta}` : progress;
    }
    case 'profile': {
      const p = evidence.profile;
      if (!p) return undefined;
      if (p.status !== 'done') return `${p.status}${p.reason ? `: ${oneLine(p.reason)}` : ''}`;
      // The rows the diff leads with, as in the PR: the whole trace when a trace's steps are unreliable.
      const basis = p.diff ? hotspotBasis(p.diff) : undefined;
      const inflated = profilerInflated(p) ? ' (profiler-inflated)' : '';
      const step = basis?.wholeTrace
        ? `whole trace: device op time ${beforeAfter(basis.total)}${inflated}`
        : p.diff?.stepTimeMs
          ? `step ${beforeAfter(p.diff.stepTimeMs)}${inflated}`
          : undefined;
      const top = topChanges(basis?.rows ?? [], 1)[0];
      const hot = top ? `top Δ ${top.name} ${formatSignedValue(top.delta, 'ms')}` : undefined;
      return [step, hot].filter(Boolean).join('; ') || 'done';
    }
    case 'decide':
      return evidence.verdict ? headline(evidence) : undefined;
    case 'publish': {
      const p = evidence.publish;
      if (!p?.prUrl) return p?.bundleUrl ? `bundle ${p.bundleUrl}` : undefined;
      return `PR #${p.prNumber ?? '?'} ${p.prOperation ?? ''} ${p.prUrl}`.replace(/\s+/g, ' ');
    }
    default:
      return undefined;
  }
}

/**
 * `[i003 measure] A 12.31 ms · B 10.02 ms (n=5+5) · −18.6% [−20.1%, −17.0%]`. The detail comes
 * from the evidence; `note` (e.g. the step record's note) is used when the evidence says nothing.
 */
export function progressLine(evidence: IterationEvidence, step: StepName, note?: string): string {
  const record = evidence.steps[step];
  const status = record && record.status !== 'done' ? `${record.status}` : undefined;
  const detail = stepDetail(evidence, step) ?? note ?? record?.note;
  const text = [status, detail].filter(Boolean).join(': ');
  return `[${iterationTag(evidence)} ${step}]${text ? ` ${oneLine(text)}` : ''}`;
}

/** Pad to `width` code points. */
function pad(text: string, width: number, align: 'left' | 'right'): string {
  const fill = ' '.repeat(Math.max(0, width - [...text].length));
  return align === 'left' ? text + fill : fill + text;
}

/** An aligned plain-text table; the last column is not padded. */
export function textTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  right: readonly number[] = [],
): string {
  const widths = header.map((h, i) => Math.max([...h].length, ...rows.map((r) => [...(r[i] ?? '')].length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) =>
        i === cells.length - 1 && !right.includes(i)
          ? c
          : pad(c, widths[i]!, right.includes(i) ? 'right' : 'left'),
      )
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** The final table of a run: iteration, verdict, subject, delta [CI], champion after, PR. */
export function runTable(iterations: readonly IterationEvidence[]): string {
  if (iterations.length === 0) return 'no iterations';
  const rows = iterations.map((ev) => [
    iterationTag(ev),
    verdictLabel(ev),
    truncateText(subjectOf(ev), TABLE_SUBJECT_WIDTH),
    measuredChange(ev)?.delta ?? EM_DASH,
    shortSha(championAfter(ev)),
    ev.publish?.prUrl ?? EM_DASH,
  ]);
  const improved = iterations.filter((e) => e.verdict === 'improved').length;
  const table = textTable(['iter', 'verdict', 'subject', 'delta [CI]', 'champion after', 'PR'], rows);
  const count = new Set(iterations.map((e) => e.iteration)).size;
  const candidates = iterations.some((e) => e.slot) ? ` (${plural(iterations.length, 'candidate')})` : '';
  return `${table}\n${plural(count, 'iteration')}${candidates}, ${improved} improved`;
}
