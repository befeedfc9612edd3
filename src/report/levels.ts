/**
 * The two levels in words and tables: kernel fwd+bwd time and MFU, the model's training step time,
 * tokens/s and MFU, each with its change and interval; the GDN kernels' share of the step before and
 * after, and what Amdahl's law allows from here. Shared by the comment, the PR body, the log entry and
 * the terminal, so the same number reads the same everywhere (`hillclimb log lint` relies on it).
 *
 * MFU against a peak the bench measured (every CPU) is always labelled "vs measured matmul peak", so it
 * is never read as a datasheet number.
 */

import {
  amdahlLimit,
  amdahlSpeedup,
  type IterationEvidence,
  type KernelShare,
  LEVEL_METRICS,
  type LevelChange,
  type LevelKey,
  type LevelsEvidence,
  type PeakInfo,
} from '../evidence/index.js';
import {
  EM_DASH,
  formatMetricChange,
  formatMfu,
  formatMfuDelta,
  formatPercent,
  formatRatio,
  formatValue,
} from './format.js';
import { cell, code, table } from './markdown.js';

/** The kernel speed-up the Amdahl sentence is worked for (the issue's "a 2× faster kernel"). */
export const AMDAHL_EXAMPLE_SPEEDUP = 2;

/** The levels of an iteration's measurement, when its runs recorded them. */
export function levelsOf(evidence: IterationEvidence): LevelsEvidence | undefined {
  return evidence.measurement?.levels;
}

/** `vs measured matmul peak`, `vs TPU v5p bf16 peak`. */
export function peakLabel(peak: PeakInfo | undefined): string | undefined {
  if (!peak) return undefined;
  return peak.source === 'measured' ? 'vs measured matmul peak' : `vs ${peak.name} ${peak.dtype} peak`;
}

/** `MFU vs measured matmul peak`, or plain `MFU` when the peak is unknown. */
export function mfuLabel(peak: PeakInfo | undefined): string {
  const vs = peakLabel(peak);
  return vs ? `MFU ${vs}` : 'MFU';
}

/**
 * Both arms' MFUs are against one peak, the median of the runs' own (a measured peak moves with the
 * load): say which, and how far the runs' own spread, when they differ.
 */
export function pooledPeakNote(levels: LevelsEvidence): string | undefined {
  const p = levels.pooledPeak;
  if (!p || p.max <= p.min) return undefined;
  const g = (x: number) => `${(x / 1e9).toFixed(1)} GFLOP/s`;
  return `both arms' MFUs are against one peak, ${g(p.flopsPerS)} (the median of ${p.n} runs' own, which ranged ${g(p.min)}–${g(p.max)})`;
}

/** What a measured peak is, for a footnote: `the best of 512^3 fp32 matmuls timed in each run`. */
export function peakNote(peak: PeakInfo | undefined): string | undefined {
  if (peak?.source !== 'measured') return undefined;
  return `MFU here is against a measured matmul peak (${peak.name}, the best of a few timed in each benchmark process), not a datasheet number: the device is not in schemas/device-peaks.json`;
}

function value(x: number | null, unit: string): string {
  if (x === null) return EM_DASH;
  return unit === 'MFU' ? formatMfu(x) : formatValue(x, unit);
}

/** `−23.8% [−25.1%, −22.0%]`; for MFU `+2.83 pp (+30.0% [+28.1%, +32.0%])`; `—` when unmeasured. */
export function changeText(key: LevelKey, c: LevelChange): string {
  const metric = LEVEL_METRICS[key];
  const relative =
    c.ratio !== null && c.ci !== null ? formatMetricChange(c.ratio, c.ci, metric.direction) : undefined;
  if (metric.unit === 'MFU') {
    if (c.a === null || c.b === null) return EM_DASH;
    const pp = formatMfuDelta(c.a, c.b);
    return relative ? `${pp} (${relative})` : pp;
  }
  return relative ?? EM_DASH;
}

/** `1.875 ms → 1.428 ms, −23.8% [−25.1%, −22.0%]`. */
export function beforeAfterText(key: LevelKey, c: LevelChange): string {
  const unit = LEVEL_METRICS[key].unit;
  const change = changeText(key, c);
  return `${value(c.a, unit)} → ${value(c.b, unit)}${change === EM_DASH ? '' : `, ${change}`}`;
}

/** `32.0%`, `—`. */
function shareValue(x: number | null): string {
  return x === null ? EM_DASH : formatPercent(x, 1);
}

/** Where a share comes from, shortly: `from the profile`, `estimated from the medians`. */
function shareSource(share: KernelShare): string {
  return share.source === 'profile' ? 'from the profile' : 'estimated from the medians';
}

/**
 * `the GDN kernels are 32.0% of the step: a 2× faster kernel gives at most 1.19× step speed, and no
 * kernel speed-up more than 1.47×`.
 */
export function amdahlText(share: number): string {
  const k = AMDAHL_EXAMPLE_SPEEDUP;
  const limit = amdahlLimit(share);
  const most = Number.isFinite(limit) ? `, and no kernel speed-up more than ${formatRatio(limit)}` : '';
  return `the GDN kernels are ${formatPercent(share, 1)} of the step: a ${k}× faster kernel gives at most ${formatRatio(amdahlSpeedup(share, k))} step speed${most}`;
}

/** The share to show: the profile's when the profile step found one, else the measurement's. */
export function shareOf(evidence: IterationEvidence): KernelShare | undefined {
  return evidence.profile?.kernelShare ?? levelsOf(evidence)?.share;
}

/**
 * The Amdahl paragraph: the champion's share and what it allows, then the candidate's (what is left
 * from here). Undefined without a share.
 */
export function amdahlSection(evidence: IterationEvidence): string | undefined {
  const share = shareOf(evidence);
  if (!share || (share.a === null && share.b === null)) return undefined;
  const parts: string[] = [];
  if (share.a !== null) parts.push(`Champion: ${amdahlText(share.a)}.`);
  if (share.b !== null) parts.push(`Candidate: ${amdahlText(share.b)}.`);
  return `**Amdahl** (${cell(share.detail)}). ${parts.join(' ')}`;
}

/** Whether either arm measured this: a target's metrics carry only the measurements it has. */
function measured(c: LevelChange): boolean {
  return c.a !== null || c.b !== null;
}

/**
 * The two-level table: kernel and model rows with both arms, the change and its interval. Only the rows
 * the target's metrics carry (a target without a `fwd_bwd` measurement or a model step has none of
 * those); undefined when none is left.
 */
export function levelsTable(evidence: IterationEvidence): string | undefined {
  const levels = levelsOf(evidence);
  if (!levels) return undefined;
  const mfu = mfuLabel(levels.peak);
  const rows: string[][] = [];
  const row = (level: string, what: string, key: LevelKey, c: LevelChange): void => {
    if (!measured(c)) return;
    rows.push([
      level,
      cell(what),
      value(c.a, LEVEL_METRICS[key].unit),
      value(c.b, LEVEL_METRICS[key].unit),
      changeText(key, c),
    ]);
  };
  row('kernel', 'fwd+bwd time, median', 'kernelMs', levels.kernel.time);
  row('kernel', mfu, 'kernelMfu', levels.kernel.mfu);
  const model = levels.model;
  if (model) {
    const name = `model ${code(model.preset)}`;
    row(name, 'train step time, median', 'stepMs', model.time);
    row(name, 'tokens/s', 'tokensPerS', model.tokensPerS);
    row(name, mfu, 'modelMfu', model.mfu);
    const share = shareOf(evidence);
    if (share) {
      rows.push([
        name,
        cell(`GDN kernels' share of the step (${shareSource(share)})`),
        shareValue(share.a),
        shareValue(share.b),
        '',
      ]);
    }
  }
  if (rows.length === 0) return undefined;
  const confidence = `${Math.round(levels.confidence * 100)}% CI`;
  const header = ['level', '', 'champion (A)', 'candidate (B)', `change [${confidence}]`];
  const lines = [table(header, rows, ['left', 'left', 'right', 'right', 'right'])];
  const note = peakNote(levels.peak);
  const pooled = pooledPeakNote(levels);
  if (note || pooled) lines.push(`_${[note, pooled].filter(Boolean).join('; ')}._`);
  const amdahl = amdahlSection(evidence);
  if (amdahl) lines.push(amdahl);
  return lines.join('\n\n');
}

/**
 * The log entry's `Kernel` line: `fwd+bwd time 1.875 ms → 1.428 ms, −23.8% […]; MFU … 9.47% → 12.30%
 * (+2.83 pp …)`, with what was measured; undefined for a target without a `fwd_bwd` measurement.
 */
export function kernelLine(levels: LevelsEvidence): string | undefined {
  const parts = [
    ...(measured(levels.kernel.time)
      ? [`fwd+bwd time ${beforeAfterText('kernelMs', levels.kernel.time)}`]
      : []),
    ...(measured(levels.kernel.mfu)
      ? [`${mfuLabel(levels.peak)} ${beforeAfterText('kernelMfu', levels.kernel.mfu)}`]
      : []),
  ];
  return parts.length > 0 ? parts.join('; ') : undefined;
}

/** The log entry's `Model` line, when a step was timed. */
export function modelLine(levels: LevelsEvidence): string | undefined {
  const m = levels.model;
  if (!m) return undefined;
  return [
    `${code(m.preset)} train step ${beforeAfterText('stepMs', m.time)}`,
    beforeAfterText('tokensPerS', m.tokensPerS),
    `${mfuLabel(levels.peak)} ${beforeAfterText('modelMfu', m.mfu)}`,
  ].join('; ');
}

/** The log entry's `Kernel share` line: both arms, the source, and Amdahl's bound from the champion. */
export function shareLine(evidence: IterationEvidence): string | undefined {
  const share = shareOf(evidence);
  if (!share || (share.a === null && share.b === null)) return undefined;
  const bound = share.a ?? share.b!;
  return `${shareValue(share.a)} → ${shareValue(share.b)} of the train step (${shareSource(share)}); Amdahl: ${amdahlText(bound)}`;
}

/**
 * `model MFU 9.21% → 9.60% (+0.39 pp, +4.2% [−1.9%, +10.0%])` for headlines, the interval showing
 * whether the model level moved beyond its noise; undefined without a model level.
 */
export function modelMfuHeadline(evidence: IterationEvidence): string | undefined {
  const levels = levelsOf(evidence);
  const c = levels?.model?.mfu;
  if (!levels || !c || c.a === null || c.b === null) return undefined;
  const vs = levels.peak?.source === 'measured' ? ' vs measured matmul peak' : '';
  const relative =
    c.ratio !== null && c.ci !== null ? `, ${formatMetricChange(c.ratio, c.ci, 'higher')}` : '';
  return `model MFU ${formatMfu(c.a)} → ${formatMfu(c.b)} (${formatMfuDelta(c.a, c.b)}${relative})${vs}`;
}
