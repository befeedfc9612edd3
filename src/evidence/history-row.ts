/**
 * The append-only history: one row per iteration, with provenance, in `<state_dir>/history.jsonl`
 * (and mirrored to the store). Rows are never rewritten; the champion and the trajectory are derived
 * from them.
 */
import type { Verdict } from './verdicts.js';

export const HISTORY_SCHEMA = 'hillclimb.history/v1';

/** A pair of arm medians. */
export interface ArmPair {
  a: number | null;
  b: number | null;
}

export interface HistoryLevels {
  kernelMs: ArmPair;
  kernelMfu: ArmPair;
  stepMs: ArmPair;
  modelMfu: ArmPair;
  /** What the MFUs are against: the table's peak, or a matmul peak measured in each run. */
  peak: 'table' | 'measured' | null;
}

/** The programs a champion won with, by hash: its code, the platform and the JAX versions they need. */
export interface KeptPrograms {
  /**
   * The champion's files, hashed (path and blob of each), leaving out the hill-climb log the harness
   * writes on top of a winner: the same code under any commit that has these files.
   */
  tree: string;
  /**
   * The same over the target's editable and protected paths only: what a commit that changed other
   * files (docs, a merge after main moved) still shares with the champion, for the check of its export.
   */
  code?: string;
  platform: string;
  /** jax and jaxlib (and python) versions of the environment that exported and verified them. */
  versions: Record<string, string>;
  /** sha256 of each timed program, keyed measurement@case. */
  sha256: Record<string, string>;
}

export interface HistoryRow {
  schema: typeof HISTORY_SCHEMA;
  /** When the row was written (ISO 8601). */
  at: string;
  runId: string;
  iteration: number;
  /** Which of the iteration's candidates, when it proposed several (loop.candidates > 1); 1-based. */
  slot?: number;
  target: string;
  verdict: Verdict;
  /** One line: why. */
  reason: string;
  baseCommit: string;
  candidateCommit: string | null;
  /** The agent's commit subject (prose). */
  subject: string | null;
  /** The iteration's PR branch (where a later iteration stacks when this one became the champion). */
  branch: string | null;
  /** The change's fingerprint (the guard's), for the novelty check; absent on older rows. */
  change?: string;
  /** The agent's hypothesis (its prose, one line), for the ledger later prompts show; absent without one. */
  hypothesis?: string;
  metric: { path: string; direction: 'higher' | 'lower'; label: string; unit: string };
  /** Median of the per-run values, champion (A) and candidate (B); null when not measured. */
  a: number | null;
  b: number | null;
  nA: number;
  nB: number;
  /** Improvement ratio (> 1 better) and its confidence interval. */
  ratio: number | null;
  ciLow: number | null;
  ciHigh: number | null;
  /** Minimum detectable effect (fraction) and the accept bar used. */
  mde: number | null;
  mfuA: number | null;
  mfuB: number | null;
  /**
   * Medians of both levels, champion (A) and candidate (B), when the runs measured them (levels.ts);
   * absent when they measured none (a target whose bench times neither the kernel's fwd_bwd nor a
   * model's train step), and from rows written before the model level existed.
   */
  levels?: HistoryLevels;
  /** The champion after this iteration. */
  championAfter: string;
  /**
   * A new champion's timed programs as the verifier measured them (improved rows): the bytes it is
   * timed by from now on. A later export of the same tree with the same JAX must give these hashes.
   */
  programs?: KeptPrograms;
  harnessHash: string | null;
  configHash: string;
  device: string | null;
  backend: string | null;
  versions: Record<string, string>;
  prUrl: string | null;
  evidenceUrl: string | null;
}
