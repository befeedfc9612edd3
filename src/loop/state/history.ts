/**
 * The append-only history file and what the loop derives from it: the rows of a target, and the
 * champion's latest harness-measured numbers for the prompt.
 */
import { join } from 'node:path';
import {
  HISTORY_SCHEMA,
  type HistoryLevels,
  type HistoryRow,
  type IterationEvidence,
  type KeptPrograms,
} from '../../evidence/index.js';
import { appendLineDurable, readJsonLines } from '../../util/index.js';

export const HISTORY_FILE = 'history.jsonl';

export function historyFile(stateDir: string): string {
  return join(stateDir, HISTORY_FILE);
}

export function appendHistory(stateDir: string, row: HistoryRow): void {
  appendLineDurable(historyFile(stateDir), JSON.stringify(row));
}

/** Every row, oldest first; optionally only one target's. A torn last line is ignored. */
export function readHistory(stateDir: string, target?: string): HistoryRow[] {
  const { rows } = readJsonLines<HistoryRow>(historyFile(stateDir));
  return rows.filter((r) => r.schema === HISTORY_SCHEMA && (target === undefined || r.target === target));
}

/** The history row of an iteration, from its evidence. */
export function historyRow(
  ev: IterationEvidence,
  championAfter: string,
  now: Date = new Date(),
  kept?: KeptPrograms,
): HistoryRow {
  const m = ev.measurement;
  const c = m?.comparison;
  const metric = m?.metric ?? { path: '', direction: 'lower' as const, label: '', unit: '' };
  const levels = m?.levels ? historyLevels(m.levels) : undefined;
  return {
    schema: HISTORY_SCHEMA,
    at: now.toISOString(),
    runId: ev.runId,
    iteration: ev.iteration,
    ...(ev.slot ? { slot: ev.slot.index } : {}),
    target: ev.target,
    verdict: ev.verdict ?? 'error',
    reason: ev.verdictReasons[0] ?? '',
    baseCommit: ev.base.commit,
    candidateCommit: ev.candidate?.commit ?? null,
    subject: ev.candidate?.subject ?? null,
    branch: ev.candidate?.branch ?? null,
    ...(ev.guard?.change ? { change: ev.guard.change } : {}),
    ...(ev.agent?.result?.hypothesis ? { hypothesis: oneLine(ev.agent.result.hypothesis, 300) } : {}),
    metric,
    a: c?.a.median ?? null,
    b: c?.b.median ?? null,
    nA: m?.runs.filter((r) => r.arm === 'A').length ?? 0,
    nB: m?.runs.filter((r) => r.arm === 'B').length ?? 0,
    ratio: c?.ratio ?? null,
    ciLow: c?.ci?.lo ?? null,
    ciHigh: c?.ci?.hi ?? null,
    mde: c?.mde ?? null,
    mfuA: m?.mfu.a ?? null,
    mfuB: m?.mfu.b ?? null,
    ...(levels && anyLevelMeasured(levels) ? { levels } : {}),
    championAfter,
    ...(kept ? { programs: kept } : {}),
    harnessHash: ev.provenance.harnessHash ?? null,
    configHash: ev.provenance.configHash,
    device: m?.device?.kind ?? null,
    backend: ev.provenance.backend?.backend ?? null,
    versions: m?.versions ?? {},
    prUrl: ev.publish?.prUrl ?? null,
    evidenceUrl: ev.publish?.bundleUrl ?? null,
  };
}

/** The medians of both levels a history row keeps (for the trajectory and baseline charts). */
function historyLevels(
  l: NonNullable<NonNullable<IterationEvidence['measurement']>['levels']>,
): HistoryLevels {
  const pair = (c: { a: number | null; b: number | null } | undefined) => ({
    a: c?.a ?? null,
    b: c?.b ?? null,
  });
  return {
    kernelMs: pair(l.kernel.time),
    kernelMfu: pair(l.kernel.mfu),
    stepMs: pair(l.model?.time),
    modelMfu: pair(l.model?.mfu),
    peak: l.peak?.source ?? null,
  };
}

/**
 * Whether a row's levels hold a number: a target whose bench times neither the GDN kernel's fwd_bwd nor
 * a model's train step (an RMSNorm, a matmul) measures no level, and its rows carry none.
 */
function anyLevelMeasured(l: HistoryLevels): boolean {
  return [l.kernelMs, l.kernelMfu, l.stepMs, l.modelMfu].some((p) => p.a !== null || p.b !== null);
}

/** The champion's most recent harness measurement: as arm A of a later iteration or as the winning B. */
export function championMeasurement(
  rows: readonly HistoryRow[],
  champion: string,
): { value: number; mfu: number | null; row: HistoryRow; as: 'A' | 'B' } | undefined {
  for (let i = rows.length - 1; i >= 0; i--) {
    const r = rows[i]!;
    if (r.baseCommit === champion && r.a !== null) return { value: r.a, mfu: r.mfuA, row: r, as: 'A' };
    if (
      r.championAfter === champion &&
      r.candidateCommit !== null &&
      r.b !== null &&
      r.verdict === 'improved'
    ) {
      return { value: r.b, mfu: r.mfuB, row: r, as: 'B' };
    }
  }
  return undefined;
}

/** Agent prose as one bounded line (it is shown to later agents and in tables). */
function oneLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
