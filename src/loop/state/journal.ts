/**
 * The run journal: an append-only JSON-lines file per run (`<state_dir>/runs/<run-id>/journal.jsonl`).
 * Each line is flushed to disk before the loop moves on, so a killed run can be resumed from it
 * without repeating finished work. Per-iteration details live in the iteration's own state file; the
 * journal records the run-level facts and the order in which things happened.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { appendLineDurable, HillclimbError, readJsonLines } from '../../util/index.js';

export type RunEndReason = 'completed' | 'failure-budget' | 'stuck' | 'interrupted' | 'fatal';

export type JournalEntry =
  | {
      t: 'run-start';
      at: string;
      run: string;
      target: string;
      iterations: number;
      start_commit: string;
      config_file: string;
      config_hash: string;
      options: Record<string, unknown>;
    }
  | { t: 'resume'; at: string; run: string; from_iteration: number }
  | { t: 'iteration-start'; at: string; iteration: number; base_commit: string }
  | {
      t: 'step';
      at: string;
      iteration: number;
      /** The candidate, in an iteration that proposed several (loop.candidates > 1). */
      slot?: number;
      step: string;
      status: 'done' | 'skipped' | 'failed';
      note?: string;
    }
  /** A step's attempt failed for infrastructure reasons (retried after a backoff, or the last one). */
  | {
      t: 'attempt';
      at: string;
      iteration: number;
      slot?: number;
      step: string;
      attempt: number;
      message: string;
    }
  | { t: 'iteration-end'; at: string; iteration: number; verdict: string; candidate_commit?: string }
  | { t: 'champion'; at: string; iteration: number; commit: string }
  | { t: 'run-end'; at: string; reason: RunEndReason; message?: string };

export class Journal {
  readonly file: string;

  constructor(readonly runDir: string) {
    this.file = join(runDir, 'journal.jsonl');
  }

  append(entry: JournalEntry): void {
    appendLineDurable(this.file, JSON.stringify(entry));
  }

  entries(): JournalEntry[] {
    return readJsonLines<JournalEntry>(this.file).rows;
  }
}

/** What a journal says about where a run stands. */
export interface RunProgress {
  start: Extract<JournalEntry, { t: 'run-start' }>;
  /** Iterations that reached iteration-end, with their verdicts. */
  finished: Map<number, string>;
  /** The champion commit after the last champion event (or the start commit). */
  champion: { commit: string; iteration: number | undefined };
  /** The iteration that started but did not end, if any. */
  inProgress: number | undefined;
  ended: Extract<JournalEntry, { t: 'run-end' }> | undefined;
}

export function runProgress(entries: readonly JournalEntry[], file: string): RunProgress {
  const start = entries.find((e): e is Extract<JournalEntry, { t: 'run-start' }> => e.t === 'run-start');
  if (!start) throw new HillclimbError(`${file}: no run-start entry; this is not a hillclimb run journal`);
  const finished = new Map<number, string>();
  let champion: RunProgress['champion'] = { commit: start.start_commit, iteration: undefined };
  let inProgress: number | undefined;
  let ended: RunProgress['ended'];
  for (const e of entries) {
    if (e.t === 'iteration-start') inProgress = e.iteration;
    if (e.t === 'iteration-end') {
      finished.set(e.iteration, e.verdict);
      if (inProgress === e.iteration) inProgress = undefined;
    }
    if (e.t === 'champion') champion = { commit: e.commit, iteration: e.iteration };
    if (e.t === 'run-end') ended = e;
    if (e.t === 'resume') ended = undefined;
  }
  return { start, finished, champion, inProgress, ended };
}

/** Run ids under a state dir, oldest first (ids start with a UTC timestamp). */
export function listRuns(stateDir: string): string[] {
  const runs = join(stateDir, 'runs');
  if (!existsSync(runs)) return [];
  return readdirSync(runs)
    .filter((d) => existsSync(join(runs, d, 'journal.jsonl')))
    .sort();
}

/** A new run id: UTC timestamp plus a short random suffix, e.g. 20261121-234512-a3f9. */
export function newRunId(now: Date = new Date(), random: () => number = Math.random): string {
  const ts = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  const suffix = Math.floor(random() * 0xffff)
    .toString(16)
    .padStart(4, '0');
  return `${ts}-${suffix}`;
}
