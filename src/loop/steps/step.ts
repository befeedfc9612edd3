/** The shape of an iteration step. Steps mutate the evidence; the runner persists it after each one. */
import type { IterationEvidence, StepName, Verdict } from '../../evidence/index.js';
import type { LoopContext } from '../context.js';
import type { Bundle } from '../state/bundle.js';

export interface StepEnv {
  ctx: LoopContext;
  bundle: Bundle;
  ev: IterationEvidence;
  /** Persist the evidence now (long steps call it after each unit of work, for resume). */
  save(): void;
}

export type StepResult =
  | { status: 'done'; note?: string }
  | { status: 'skipped'; note: string }
  /** The step decided the iteration: later evaluation steps are skipped, record and publish still run. */
  | { status: 'verdict'; verdict: Verdict; reasons: string[]; note?: string };

export interface Step {
  name: StepName;
  /** Evaluation steps are skipped once a verdict is known; record and publish always run. */
  evaluation: boolean;
  run(env: StepEnv): Promise<StepResult>;
}
