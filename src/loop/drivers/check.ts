/**
 * `hillclimb check`: a target module's first test, before any loop. HEAD's programs are asked for,
 * exported and verified once on this machine's CPU by the very steps a gate uses (the requests step,
 * the arm-blind export, the verifier: ../steps/programs.ts), each one check; the first that fails says
 * what to change (../steps/target-mistakes.ts). No test suite and no timing: `hillclimb test` and
 * `hillclimb measure` run those.
 */
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { type HillclimbConfig, loadConfig, selectTarget } from '../../config/index.js';
import { ExitCode, errorMessage, isHillclimbError } from '../../util/index.js';
import type { LoopContext } from '../context.js';
import { newRunId } from '../state/journal.js';
import { championExportFailure } from '../steps/champion-programs.js';
import { Interrupted } from '../steps/failures.js';
import { failingPrograms } from '../steps/gates.js';
import {
  type DrawHolder,
  exportPrograms,
  mistakeHint,
  type RequestPlan,
  requestPlan,
  runGateSession,
  targetFacts,
} from '../steps/programs.js';
import { verificationHint } from '../steps/target-mistakes.js';
import { type ManualOptions, withContext } from './commits.js';

/** The checks, in the order they run: each needs the one before it. */
export const TARGET_CHECKS = ['config', 'requests', 'export', 'verify'] as const;
export type TargetCheckName = (typeof TARGET_CHECKS)[number];

export interface TargetCheck {
  name: TargetCheckName;
  status: 'passed' | 'failed' | 'not-run';
  /** What was found, or what failed. */
  detail: string;
  /** What to change (a failed check). */
  hint?: string;
}

export interface TargetCheckReport {
  checks: TargetCheck[];
  /** 0 all passed, 2 a mistake of the target's (ExitCode.badInput), 3 infrastructure (ExitCode.infra). */
  exitCode: number;
  /** The commit checked. */
  commit?: string;
}

/** A check that failed, and the exit code its failure means. */
class CheckFailed extends Error {
  constructor(
    readonly check: TargetCheck,
    readonly exitCode: number,
  ) {
    super(check.detail);
  }
}

/** Check `ref` (default HEAD) of the project: its target module's programs, exported and verified once. */
export async function checkTarget(opts: ManualOptions & { ref?: string }): Promise<TargetCheckReport> {
  const passed: TargetCheck[] = [];
  const report = (exitCode: number, failed?: TargetCheck, commit?: string): TargetCheckReport => {
    const ran = failed ? [...passed, failed] : passed;
    const rest = TARGET_CHECKS.slice(ran.length).map(
      (name): TargetCheck => ({ name, status: 'not-run', detail: 'not run' }),
    );
    return { checks: [...ran, ...rest], exitCode, ...(commit ? { commit } : {}) };
  };
  let config: HillclimbConfig;
  try {
    config = loadConfig(opts.configFile, opts.overrides);
    const target = selectTarget(config, opts.target);
    passed.push({
      name: 'config',
      status: 'passed',
      detail: `${relative(config.root, config.file) || config.file}: target ${target.name}, programs.module ${target.programs.module}`,
    });
  } catch (e) {
    const failure = asFailure('config', e);
    return report(failure.exitCode, failure.check);
  }
  let commit: string | undefined;
  try {
    await withContext(
      opts,
      `manual-check-${newRunId()}`,
      ['cpu-gate'],
      async (ctx) => {
        commit = await ctx.git.revParse(opts.ref ?? 'HEAD');
        const holder: DrawHolder = { iteration: 1 };
        const plan = await step('requests', () =>
          requestPlan(ctx, holder, { backend: ctx.cpuBackend, harness: commit!, platform: 'cpu' }),
        );
        passed.push({
          name: 'requests',
          status: 'passed',
          detail: `${plan.keys.length} program(s) asked for (${listed(plan.keys)}), without the kernel's code`,
        });
        const programs = await step('export', () => exportHead(ctx, holder, commit!, plan));
        passed.push({
          name: 'export',
          status: 'passed',
          detail: `${plan.keys.length} program(s) of ${commit!.slice(0, 12)} exported for the CPU`,
        });
        await step('verify', () => verifyHead(ctx, holder, commit!, plan, programs));
        passed.push({
          name: 'verify',
          status: 'passed',
          detail: `${plan.keys.length} program(s) agree with the reference (rel_rms_tol)`,
        });
      },
      config,
    );
  } catch (e) {
    if (!(e instanceof CheckFailed)) throw e;
    return report(e.exitCode, e.check, commit);
  }
  return report(ExitCode.ok, undefined, commit);
}

/** Run one check's work; what it throws becomes that check's failure. */
async function step<T>(name: TargetCheckName, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof CheckFailed || e instanceof Interrupted) throw e;
    throw asFailure(name, e);
  }
}

/** A thrown error as a check's failure: a HillclimbError's own exit code (2 the user's, 3 the machine's). */
function asFailure(name: TargetCheckName, e: unknown): CheckFailed {
  if (!isHillclimbError(e)) {
    // Not ours to classify (a verifier that timed out, a bug): the machine's, with its words.
    return new CheckFailed({ name, status: 'failed', detail: errorMessage(e) }, ExitCode.infra);
  }
  const check: TargetCheck = {
    name,
    status: 'failed',
    detail: e.message,
    ...(e.hint ? { hint: e.hint } : {}),
  };
  return new CheckFailed(check, e.exitCode === ExitCode.badInput ? ExitCode.badInput : ExitCode.infra);
}

/** HEAD's programs, exported as a gate exports a candidate's: the folder they are in. */
async function exportHead(
  ctx: LoopContext,
  holder: DrawHolder,
  commit: string,
  plan: RequestPlan,
): Promise<string> {
  const dir = join(ctx.runDir, 'programs');
  const logFile = join(ctx.runDir, 'export.log');
  const exported = await exportPrograms(ctx, holder, {
    backend: ctx.cpuBackend,
    commit,
    plan,
    dest: dir,
    logFile,
    record: { dir: 'programs', logFile: 'export.log' },
    name: 'check-cpu',
    step: 'cpu-gate',
  });
  if (exported.status === 'failed') {
    // The fix first: the reason ends in it (exportPrograms), the hint leads with it here.
    const reason = exported.reason ?? 'see its log';
    const mistake = await mistakeHint(ctx, 'export', readLog(logFile), commit);
    const said = mistake !== undefined && reason.endsWith(`; ${mistake}`);
    const failure = championExportFailure(
      ctx,
      `the programs of ${commit.slice(0, 12)} could not be exported: ${said ? reason.slice(0, -mistake.length - 2) : reason}`,
      logFile,
    );
    const hint = [mistake, failure.hint].filter((h) => h !== undefined).join('; ');
    throw new CheckFailed(
      { name: 'export', status: 'failed', detail: failure.message, ...(hint ? { hint } : {}) },
      failure.exitCode === ExitCode.badInput ? ExitCode.badInput : ExitCode.infra,
    );
  }
  return dir;
}

/** The verifier's gate session over HEAD's programs, with HEAD's harness: every program must pass. */
async function verifyHead(
  ctx: LoopContext,
  holder: DrawHolder,
  commit: string,
  plan: RequestPlan,
  programs: string,
): Promise<void> {
  const logFile = join(ctx.runDir, 'verify.log');
  const run = await runGateSession(ctx, holder, {
    platform: 'cpu',
    draw: plan.draw,
    arm: 'B',
    programs,
    backend: ctx.cpuBackend,
    harness: commit,
    sessionFile: join(ctx.runDir, 'verify.session.json'),
    logFile,
    name: 'check',
    step: 'cpu-gate',
  });
  const gate = run.session.gate!;
  if (gate.passed) return;
  const failing = failingPrograms(gate.programs);
  const first = failing[0];
  const detail =
    first === undefined
      ? 'the verifier checked no programs'
      : `${gate.failed} of ${gate.total} program(s) failed verification, first: ${first}`;
  const hint = first === undefined ? undefined : verificationHint(first, await targetFacts(ctx, commit));
  throw new CheckFailed(
    {
      name: 'verify',
      status: 'failed',
      detail,
      hint: `${hint ? `${hint}; ` : ''}the verifier's log: ${logFile}`,
    },
    ExitCode.badInput,
  );
}

function readLog(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** A few keys, then how many more. */
function listed(keys: readonly string[]): string {
  const SHOWN = 4;
  return keys.length <= SHOWN
    ? keys.join(', ')
    : `${keys.slice(0, SHOWN).join(', ')}, … ${keys.length} in all`;
}
