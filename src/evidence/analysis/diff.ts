/**
 * The diff of two trace summaries, in the style of HTA's TraceDiff (`compare_traces` + `ops_diff`):
 * per op (name without `.N`), per category and per custom call, the time per step before and after,
 * Δ, Δ%, occurrences per step, and a status (added / removed / increased / decreased / unchanged),
 * sorted by |Δ|. Per-step normalisation lets traces with different step counts be compared; the same
 * code serves TPU, GPU and CPU summaries.
 */
import {
  type DiffNumbers,
  type DiffRow,
  type DiffStatus,
  TRACE_DIFF_SCHEMA,
  type TraceDiff,
  type TraceSummary,
} from './types.js';

export interface DiffOptions {
  /** Changes smaller than this percent of op time per step count as unchanged. Default 0.5. */
  unchangedBelowPct?: number;
}

const DEFAULT_UNCHANGED_PCT = 0.5;

interface Entry {
  name: string;
  category: string;
  timeMs: number;
  count: number;
}

export function diffSummaries(before: TraceSummary, after: TraceSummary, opts: DiffOptions = {}): TraceDiff {
  const unchangedBelowPct = opts.unchangedBelowPct ?? DEFAULT_UNCHANGED_PCT;
  const threshold = (Math.max(before.steps.opMs, after.steps.opMs) * unchangedBelowPct) / 100;
  const rows = (b: Entry[], a: Entry[]): DiffRow[] => diffRows(b, a, threshold);
  const beforeMean = before.steps.timeMs?.mean;
  const afterMean = after.steps.timeMs?.mean;
  return {
    schema: TRACE_DIFF_SCHEMA,
    before: side(before),
    after: side(after),
    stepTimeMs: beforeMean === undefined || afterMean === undefined ? null : numbers(beforeMean, afterMean),
    opTimeMs: numbers(before.steps.opMs, after.steps.opMs),
    busyMs: numbers(before.steps.busyMs, after.steps.busyMs),
    ops: rows(opEntries(before), opEntries(after)),
    categories: rows(categoryEntries(before), categoryEntries(after)),
    customCalls: rows(customCallEntries(before), customCallEntries(after)),
    unchangedBelowPct,
    warnings: warnings(before, after),
  };
}

function side(s: TraceSummary): TraceDiff['before'] {
  return { path: s.source.path, platform: s.platform, detector: s.steps.detector, steps: s.steps.count };
}

function opEntries(s: TraceSummary): Entry[] {
  return s.ops.map((o) => ({ name: o.name, category: o.category, timeMs: o.timeMs, count: o.occurrences }));
}

function categoryEntries(s: TraceSummary): Entry[] {
  return s.categories.map((c) => ({
    name: c.name,
    category: c.name,
    timeMs: c.timeMs,
    count: c.occurrences,
  }));
}

/** Custom calls by name (scopes merged). */
function customCallEntries(s: TraceSummary): Entry[] {
  const byName = new Map<string, Entry>();
  for (const c of s.customCalls) {
    const e = byName.get(c.name);
    if (e === undefined)
      byName.set(c.name, { name: c.name, category: 'custom-call', timeMs: c.timeMs, count: c.launches });
    else {
      e.timeMs += c.timeMs;
      e.count += c.launches;
    }
  }
  return [...byName.values()];
}

function diffRows(before: readonly Entry[], after: readonly Entry[], threshold: number): DiffRow[] {
  const b = new Map(before.map((e) => [e.name, e]));
  const a = new Map(after.map((e) => [e.name, e]));
  const names = new Set([...b.keys(), ...a.keys()]);
  const rows: DiffRow[] = [];
  for (const name of names) {
    const x = b.get(name);
    const y = a.get(name);
    const n = numbers(x?.timeMs ?? 0, y?.timeMs ?? 0);
    let status: DiffStatus;
    if (x === undefined) status = 'added';
    else if (y === undefined) status = 'removed';
    else if (Math.abs(n.delta) < threshold) status = 'unchanged';
    else status = n.delta > 0 ? 'increased' : 'decreased';
    rows.push({
      name,
      category: y?.category ?? x?.category ?? '',
      status,
      ...n,
      countBefore: x?.count ?? 0,
      countAfter: y?.count ?? 0,
    });
  }
  return rows.sort(
    (p, q) => Math.abs(q.delta) - Math.abs(p.delta) || (p.name < q.name ? -1 : p.name > q.name ? 1 : 0),
  );
}

function numbers(before: number, after: number): DiffNumbers {
  const delta = round(after - before);
  return { before, after, delta, deltaPct: before === 0 ? null : Math.round((1e6 * delta) / before) / 1e4 };
}

function warnings(before: TraceSummary, after: TraceSummary): string[] {
  const out: string[] = [];
  if (before.platform !== after.platform) {
    out.push(
      `the traces ran on different platforms (${before.platform} → ${after.platform}); op names may not match`,
    );
  }
  if (before.steps.detector !== after.steps.detector) {
    out.push(
      `steps were found differently (${before.steps.detector} → ${after.steps.detector}); per-step numbers may not be comparable`,
    );
  }
  for (const [label, s] of [
    ['before', before],
    ['after', after],
  ] as const) {
    if (s.source.capped)
      out.push(`the ${label} trace hit the profiler's event cap; its later steps are missing`);
  }
  return out;
}

function round(ms: number): number {
  return Math.round(ms * 1e6) / 1e6;
}
