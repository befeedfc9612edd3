/**
 * One-line descriptions of an iteration's evidence that every report shares: the headline, the
 * verdict's reasons, gate and guard results, the device, MFU. Each is derived from harness numbers
 * only; the agent's words never pass through here except the commit subject, which reports label.
 */
import {
  type GateEvidence,
  type GuardEvidence,
  type IterationEvidence,
  type MeasurementEvidence,
  VERDICT_SYMBOLS,
} from '../evidence/index.js';
import {
  EM_DASH,
  formatDuration,
  formatMetricChange,
  formatMfu,
  formatMfuDelta,
  formatValue,
  iterationTag,
  oneLine,
  plural,
} from './format.js';
import { levelsOf, modelMfuHeadline, peakLabel } from './levels.js';

/** Shown instead of a verdict symbol while an iteration has none yet. */
const PENDING_SYMBOL = '…';

/** `✓ improved`, `… pending` before a verdict exists, `… dry run` for a dry run's (which has none). */
export function verdictLabel(evidence: Pick<IterationEvidence, 'verdict' | 'dryRun'>): string {
  if (evidence.dryRun && !evidence.verdict) return `${PENDING_SYMBOL} dry run`;
  return evidence.verdict
    ? `${VERDICT_SYMBOLS[evidence.verdict]} ${evidence.verdict}`
    : `${PENDING_SYMBOL} pending`;
}

/** The measurement's comparison when it produced a ratio and interval (a measured verdict). */
export function measuredChange(evidence: IterationEvidence): MeasuredChange | undefined {
  const m = evidence.measurement;
  const c = m?.comparison;
  if (!m || !c || c.ratio === null || c.ci === null) return undefined;
  const delta = formatMetricChange(c.ratio, c.ci, c.direction);
  return { measurement: m, delta, text: `${m.metric.label} ${delta}`, n: `n=${c.a.n}+${c.b.n}` };
}

export interface MeasuredChange {
  measurement: MeasurementEvidence;
  /** `−18.6% [−20.1%, −17.0%]`: the metric's own change with its interval. */
  delta: string;
  /** The delta after the metric's label: `fwd+bwd time −18.6% [−20.1%, −17.0%]`. */
  text: string;
  /** `n=5+5`: runs per arm. */
  n: string;
}

/** The verdict's reasons: the loop's first, then the statistics' own, without repeats. */
export function verdictReasons(evidence: IterationEvidence): string[] {
  const all = [...evidence.verdictReasons, ...(evidence.measurement?.comparison?.reasons ?? [])];
  return [...new Set(all.map(oneLine).filter((r) => r !== ''))];
}

/**
 * The one-line headline: `✓ improved: fwd+bwd time −18.6% [−20.1%, −17.0%] (n=5+5)` for a measured
 * verdict, then the model's MFU when the runs trained a model (`; model MFU 9.21% → 9.60% (+0.39 pp)`);
 * else the verdict and its first reason.
 */
export function headline(evidence: IterationEvidence): string {
  const change = measuredChange(evidence);
  if (change) {
    const model = modelMfuHeadline(evidence);
    return `${verdictLabel(evidence)}: ${change.text} (${change.n})${model ? `; ${model}` : ''}`;
  }
  return `${verdictLabel(evidence)}: ${firstReason(evidence)}`;
}

function firstReason(evidence: IterationEvidence): string {
  const reason = verdictReasons(evidence)[0];
  if (reason) return reason;
  if (evidence.verdict === 'no-op') return 'the agent made no commit';
  if (evidence.stoppedAt) return `stopped at ${evidence.stoppedAt}`;
  return evidence.verdict ? 'no reason recorded' : 'the iteration has not finished';
}

/** The candidate's subject (the agent's commit subject), or what stands in for it. */
export function subjectOf(evidence: IterationEvidence): string {
  const subject = evidence.candidate?.subject ? oneLine(evidence.candidate.subject) : '';
  if (subject !== '') return subject;
  return evidence.candidate ? '(empty commit subject)' : '(no commit)';
}

/** True when the measurement ran on a CPU (no accelerator): MFU does not apply. */
export function ranOnCpu(evidence: IterationEvidence): boolean {
  const device = evidence.measurement?.device;
  if (device) return device.backend === 'cpu';
  return evidence.provenance.backend?.hasAccelerator === false;
}

/** `TPU v5p ×4`, `CPU (Pallas interpret mode)`; undefined when nothing says. */
export function deviceLabel(evidence: IterationEvidence): string | undefined {
  const device = evidence.measurement?.device;
  if (device) {
    const name = device.backend === 'cpu' ? 'CPU' : device.kind || device.backend;
    const count = device.count > 1 ? ` ×${device.count}` : '';
    return `${name}${count}${device.interpret && device.backend !== 'cpu' ? ' (interpret mode)' : ''}`;
  }
  const backend = evidence.provenance.backend;
  if (!backend) return undefined;
  if (backend.acceleratorType) return backend.acceleratorType;
  return backend.hasAccelerator ? undefined : 'CPU';
}

/**
 * `31.20% → 38.33% (+7.13 pp)`, with the peak when the runs named it (`… vs measured matmul peak`);
 * `n/a on CPU` for runs of older benches, or why it is unknown.
 */
export function mfuText(evidence: IterationEvidence): string {
  const mfu = evidence.measurement?.mfu;
  const a = mfu?.a ?? null;
  const b = mfu?.b ?? null;
  const vs = peakLabel(levelsOf(evidence)?.peak);
  if (a !== null && b !== null)
    return `${formatMfu(a)} → ${formatMfu(b)} (${formatMfuDelta(a, b)})${vs ? ` ${vs}` : ''}`;
  if (a === null && b === null) {
    if (!evidence.measurement) return 'not measured';
    return ranOnCpu(evidence) ? 'n/a on CPU' : 'unknown (no peak FLOP/s for this device)';
  }
  return `${a === null ? EM_DASH : formatMfu(a)} → ${b === null ? EM_DASH : formatMfu(b)}`;
}

/** `12.31 ms → 10.02 ms`, from the arms' medians. */
export function mediansText(measurement: MeasurementEvidence): string | undefined {
  const c = measurement.comparison;
  if (!c || c.a.median === null || c.b.median === null) return undefined;
  const unit = measurement.metric.unit;
  return `${formatValue(c.a.median, unit)} → ${formatValue(c.b.median, unit)}`;
}

/** `128 tests: 126 passed, 2 skipped` (zero counts other than passed are left out). */
export function junitCounts(junit: NonNullable<GateEvidence['junit']>): string {
  const parts = [`${junit.passed} passed`];
  if (junit.failed > 0) parts.push(`${junit.failed} failed`);
  if (junit.errors > 0) parts.push(plural(junit.errors, 'error'));
  if (junit.skipped > 0) parts.push(`${junit.skipped} skipped`);
  return `${plural(junit.tests, 'test')}: ${parts.join(', ')}`;
}

/** `passed, 128 tests: 126 passed, 2 skipped (41.2 s)`; `skipped: <why>`; `not run`. */
export function gateText(gate: GateEvidence | undefined): string {
  if (!gate) return 'not run';
  const took = gate.junit ? formatDuration(gate.junit.time * 1000) : formatDuration(gate.durationMs);
  const why = gate.reason ? oneLine(gate.reason) : undefined;
  switch (gate.status) {
    case 'passed':
      return gate.junit ? `passed, ${junitCounts(gate.junit)} (${took})` : `passed (${took})`;
    case 'failed': {
      const counts = gate.junit ? `, ${junitCounts(gate.junit)}` : '';
      return `failed${counts}${why ? ` ${EM_DASH} ${why}` : ''} (${took})`;
    }
    case 'error':
      return `error${why ? `: ${why}` : gate.exitCode !== null ? `: exit code ${gate.exitCode}` : ''}`;
    case 'skipped':
      return `skipped${why ? `: ${why}` : ''}`;
  }
}

/** `passed, 2 paths changed`; on failure, what was touched and what the static scan found. */
export function guardText(guard: GuardEvidence | undefined): string {
  if (!guard) return 'not run';
  const changed = plural(guard.changedPaths.length, 'path');
  if (guard.allowed) return `passed, ${changed} changed`;
  const parts: string[] = [];
  if (guard.protectedTouched.length > 0)
    parts.push(`protected paths touched: ${guard.protectedTouched.join(', ')}`);
  if (guard.outsideEditable.length > 0)
    parts.push(`outside the editable paths: ${guard.outsideEditable.join(', ')}`);
  if (guard.findings.length > 0) {
    parts.push(`static checks: ${guard.findings.map((f) => `${f.file}:${f.line} ${f.rule}`).join(', ')}`);
  }
  if (guard.repeatOf) parts.push(`a repeat of ${guard.repeatOf} on the same champion`);
  return `failed, ${changed} changed${parts.length > 0 ? `; ${parts.join('; ')}` : ''}`;
}

/** The champion after an iteration: the candidate (with its log commit) when it improved, else the base. */
export function championAfter(evidence: IterationEvidence): string {
  const c = evidence.candidate;
  if (evidence.verdict === 'improved' && c) return c.logCommit ?? c.commit;
  return evidence.base.commit;
}

/** Where an iteration's bundle lives in the store (and under the state folder): `runs/<run>/i003`. */
export function bundleKey(evidence: Pick<IterationEvidence, 'runId' | 'iteration' | 'slot'>): string {
  return `runs/${evidence.runId}/${iterationTag(evidence)}`;
}
