/**
 * The iteration state machine. Steps run in order; the evidence is saved after each and the journal
 * records it, so a killed process resumes at the first unfinished step. Once a step reaches a verdict
 * the remaining evaluation steps are skipped with that reason, but record and publish always run.
 * Infrastructure failures are retried with exponential backoff; when retries run out the iteration ends
 * in `error` (or, for record and publish, the step is marked failed and retried on resume).
 */
import { EVIDENCE_SCHEMA, type IterationEvidence, STEPS, type StepName } from '../../evidence/index.js';
import { errorMessage, isHillclimbError } from '../../util/index.js';
import type { LoopContext } from '../context.js';
import type { Bundle } from '../state/bundle.js';
import { stepFinished } from '../state/bundle.js';
import type { Journal } from '../state/journal.js';
import { decideStep } from './decide.js';
import { backoffMs, InfraFailure, Interrupted } from './failures.js';
import { acceleratorGateStep, cpuGateStep } from './gates.js';
import { guardStep } from './guard.js';
import { measureStep } from './measure.js';
import { prepareStep } from './prepare.js';
import { profileStep } from './profile.js';
import { proposeStep } from './propose.js';
import { publishStep } from './publish.js';
import { recordStep } from './record.js';
import type { Step, StepResult } from './step.js';

export const STEP_IMPLS: Readonly<Record<StepName, Step>> = {
  prepare: prepareStep,
  propose: proposeStep,
  guard: guardStep,
  'cpu-gate': cpuGateStep,
  'accelerator-gate': acceleratorGateStep,
  measure: measureStep,
  profile: profileStep,
  decide: decideStep,
  record: recordStep,
  publish: publishStep,
};

export interface NewIteration {
  iteration: number;
  base: { commit: string; iteration?: number; branch?: string };
}

/** A fresh evidence record for an iteration that has not started. */
export function newEvidence(ctx: LoopContext, it: NewIteration): IterationEvidence {
  return {
    schema: EVIDENCE_SCHEMA,
    runId: ctx.runId,
    runStartedAt: ctx.runStartedAt,
    iteration: it.iteration,
    totalIterations: ctx.totalIterations,
    target: ctx.target.name,
    startedAt: new Date().toISOString(),
    verdictReasons: [],
    base: it.base,
    gates: {},
    provenance: { hillclimbVersion: ctx.hillclimbVersion, configHash: ctx.configHash, host: ctx.host },
    steps: {},
  };
}

export interface RunStepsOptions {
  /** Only these steps (in pipeline order); default all. The GitHub actions run one phase per job. */
  only?: readonly StepName[];
}

/** Run the iteration's unfinished steps. Returns the evidence (its verdict is set once `decide` or an earlier step decided). */
export async function runIterationSteps(
  ctx: LoopContext,
  bundle: Bundle,
  journal: Journal | undefined,
  opts: RunStepsOptions = {},
): Promise<IterationEvidence> {
  const ev = bundle.load();
  const save = () => bundle.save(ev);
  const journalStep = (at: string, step: StepName, status: 'done' | 'skipped' | 'failed', note?: string) =>
    journal?.append({
      t: 'step',
      at,
      iteration: ev.iteration,
      ...(ev.slot ? { slot: ev.slot.index } : {}),
      step,
      status,
      ...(note ? { note } : {}),
    });
  for (const name of STEPS) {
    if (opts.only && !opts.only.includes(name)) continue;
    if (stepFinished(ev, name)) continue;
    const step = STEP_IMPLS[name];
    const startedAt = new Date().toISOString();
    if (step.evaluation && ev.verdict !== undefined) {
      record(ev, name, {
        status: 'skipped',
        startedAt,
        finishedAt: startedAt,
        note: `verdict already ${ev.verdict}`,
      });
      save();
      journalStep(startedAt, name, 'skipped');
      continue;
    }
    ctx.progress(`${name} …`);
    const outcome = await runWithRetries(ctx, step, { ctx, bundle, ev, save }, journal);
    const finishedAt = new Date().toISOString();
    if (outcome.kind === 'ok') {
      const r = outcome.result;
      if (r.status === 'verdict') {
        ev.verdict = r.verdict;
        ev.verdictReasons = r.reasons;
        ev.stoppedAt = name;
      }
      const note = r.status === 'verdict' ? `${r.verdict}: ${r.reasons[0] ?? ''}` : r.note;
      record(ev, name, {
        status: r.status === 'skipped' ? 'skipped' : 'done',
        startedAt,
        finishedAt,
        ...(note ? { note } : {}),
      });
      save();
      journalStep(finishedAt, name, r.status === 'skipped' ? 'skipped' : 'done', note);
      ctx.progress(
        `${name} ${r.status === 'verdict' ? `→ ${r.verdict}` : r.status}${note ? `: ${note}` : ''}`,
      );
      continue;
    }
    if (outcome.kind === 'dry-run') {
      ev.dryRun = true;
      record(ev, name, { status: 'skipped', startedAt, finishedAt, note: outcome.message });
      save();
      journalStep(finishedAt, name, 'skipped', outcome.message);
      ctx.progress(`${name} skipped: ${outcome.message}`);
      continue;
    }
    // Retries ran out: an infrastructure failure the loop could not get past.
    const message =
      outcome.attempts > 1 ? `${outcome.message} (${outcome.attempts} attempts)` : outcome.message;
    record(ev, name, { status: 'failed', startedAt, finishedAt, note: message });
    if (step.evaluation) {
      ev.verdict = 'error';
      ev.verdictReasons = [`${name}: ${message}`];
      ev.stoppedAt = name;
    } else {
      ev.publish ??= { warnings: [] };
      ev.publish.warnings.push(`${name} failed: ${message}`);
    }
    save();
    journalStep(finishedAt, name, 'failed', message);
    ctx.progress(`${name} failed: ${message}`);
  }
  return ev;
}

function record(
  ev: IterationEvidence,
  name: StepName,
  rec: NonNullable<IterationEvidence['steps'][StepName]>,
): void {
  ev.steps[name] = rec;
}

type Outcome<T = StepResult> =
  | { kind: 'ok'; result: T }
  | { kind: 'infra'; message: string; attempts: number }
  | { kind: 'dry-run'; message: string };

/** What failed attempts are counted under: a step, or a candidate's screen (drivers/search.ts). */
export type AttemptKey = StepName | 'screen';

function runWithRetries(
  ctx: LoopContext,
  step: Step,
  env: Parameters<Step['run']>[0],
  journal: Journal | undefined,
): Promise<Outcome> {
  return withInfraRetries(ctx, step.name, () => step.run(env), env, journal);
}

/**
 * Run `work`, retrying infrastructure failures with backoff. Each failed attempt is saved in the
 * evidence and the journal before the wait, so a run killed mid-retry resumes at the next attempt
 * rather than at the first: `loop.infra_retries` bounds the attempts across interruptions. Anything
 * else (a bug, a ChampionFailure, an interruption) is thrown.
 */
export async function withInfraRetries<T>(
  ctx: LoopContext,
  key: AttemptKey,
  work: () => Promise<T>,
  { ev, save }: { ev: IterationEvidence; save: () => void },
  journal: Journal | undefined,
): Promise<Outcome<T>> {
  const retries = ctx.config.loop.infra_retries;
  const failed = (ev.failedAttempts?.[key] ?? []).length;
  for (let attempt = failed + 1; ; attempt++) {
    if (ctx.signal.aborted) throw new Interrupted();
    try {
      return { kind: 'ok', result: await work() };
    } catch (e) {
      if (e instanceof Interrupted || ctx.signal.aborted)
        throw e instanceof Interrupted ? e : new Interrupted();
      if (!isInfra(e)) throw e;
      const message = errorMessage(e).split('\n')[0]!;
      // A dry run answers every job with "dry run: …": the step printed its commands, which is all a
      // dry run asks of it (nothing to retry, nothing failed).
      if (ctx.dryRun && /\bdry run\b/.test(message)) return { kind: 'dry-run', message };
      const at = new Date().toISOString();
      const failedSoFar = ev.failedAttempts?.[key] ?? [];
      ev.failedAttempts = { ...ev.failedAttempts, [key]: [...failedSoFar, { attempt, at, message }] };
      save();
      journal?.append({
        t: 'attempt',
        at,
        iteration: ev.iteration,
        ...(ev.slot ? { slot: ev.slot.index } : {}),
        step: key,
        attempt,
        message,
      });
      if (attempt > retries) return { kind: 'infra', message, attempts: attempt };
      const wait = backoffMs(ctx.config.loop.retry_backoff_seconds, attempt);
      // The hint names the attempt's log (the agent's, the step's): where to read why, while it waits.
      const hint = isHillclimbError(e) && e.hint ? ` (${e.hint})` : '';
      ctx.logger.warn(
        `${key}: ${message}; retry ${attempt}/${retries} in ${Math.round(wait / 1000)} s${hint}`,
      );
      await ctx.sleep(wait);
    }
  }
}

/**
 * Failures worth retrying: our InfraFailure, and HillclimbErrors raised by backends, forges and stores
 * (network, API, command could not start). A bug (a plain Error) is not retried: it stops the run with
 * its stack, so it gets fixed rather than papered over.
 */
function isInfra(e: unknown): boolean {
  return e instanceof InfraFailure || (isHillclimbError(e) && e.exitCode !== 2);
}
