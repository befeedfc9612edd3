/**
 * The correctness gates, cheapest first. The CPU gate always runs on this machine (Pallas in interpret
 * mode), so accelerator time goes only to candidates that pass it; the accelerator gate runs on the
 * compute backend and is skipped when the backend has no accelerator.
 *
 * A gate passes only on the verifier's word (./programs.ts): the kernel's test suite runs first and its
 * failures make the iteration `invalid`, but its passes are the candidate's process speaking; then the
 * candidate's programs are exported and the verifier checks every one of the matrix against the
 * reference. The export runs first and alone; then the suite and the verifier run side by side, and
 * the first to fail the candidate stops the other. A gate that could not run at all is an
 * infrastructure failure.
 *
 * Both get the iteration's request file. A pytest suite's process builds those programs too, before its
 * tests (hillclimb_bench's witness plugin), and reports their hashes in its JUnit file: a kernel whose
 * program depends on how it is run (argv, paths, the environment) builds another program there than in
 * its export, and the gate fails naming the programs. The suite's word, so a tripwire: the boundary is
 * the verifier checking the kernel's whole contract on the exported bytes.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Backend } from '../../compute/index.js';
import type { GateConfig } from '../../config/index.js';
import {
  type ExportEvidence,
  failureSummary,
  type GateEvidence,
  type GateProgram,
  type GateVerification,
  readJUnitXml,
  recordIsolation,
} from '../../evidence/index.js';
import { errorMessage } from '../../util/index.js';
import type { LoopContext } from '../context.js';
import { BundleFiles } from '../state/bundle.js';
import { candidateWorktreePath, worktreeAt } from '../state/worktrees.js';
import { championExportFailure } from './champion-programs.js';
import { InfraFailure } from './failures.js';
import { jobId } from './naming.js';
import {
  bundlePrograms,
  CANDIDATE_ENV,
  crashProbe,
  exportPrograms,
  type Platform,
  ProgramFiles,
  placeRequestFile,
  REQUEST_FILE,
  type RequestPlan,
  requestPlan,
  runGateSession,
  VerifierCrashed,
  VerifierFailed,
  type VerifierRun,
} from './programs.js';
import type { Step, StepEnv, StepResult } from './step.js';

const MINUTE_MS = 60_000;
/** Failing test names listed in the evidence (the JUnit file has them all). */
const MAX_FAILING_LISTED = 20;
/** What stands for an export in a dry run (its command was printed, not run). */
const DRY_RUN_EXPORT: ExportEvidence = {
  status: 'passed',
  platform: 'cpu',
  dir: '',
  logFile: '',
  durationMs: 0,
};
/** How the reason of a suite stopped by the verifier's failure starts. */
const STOPPED = 'the test suite was stopped';

export const cpuGateStep: Step = {
  name: 'cpu-gate',
  evaluation: true,
  run: (env) => runGate(env, 'cpu', env.ctx.target.correctness.cpu, env.ctx.cpuBackend),
};

export const acceleratorGateStep: Step = {
  name: 'accelerator-gate',
  evaluation: true,
  async run(env) {
    const gate = env.ctx.target.correctness.accelerator;
    if (!gate) return skip(env, 'accelerator', 'no accelerator gate configured for this target');
    if (!env.ctx.backend.info().hasAccelerator) {
      return skip(env, 'accelerator', `the ${env.ctx.backend.name} backend has no accelerator`);
    }
    return runGate(env, 'accelerator', gate, env.ctx.backend);
  },
};

function skip(env: StepEnv, which: 'cpu' | 'accelerator', reason: string): StepResult {
  env.ev.gates[which] = { status: 'skipped', reason, exitCode: null, durationMs: 0 };
  return { status: 'skipped', note: reason };
}

async function runGate(
  { ctx, bundle, ev }: StepEnv,
  which: 'cpu' | 'accelerator',
  gate: GateConfig,
  backend: Backend,
): Promise<StepResult> {
  const candidate = ev.candidate!;
  const label = which === 'cpu' ? 'CPU' : 'accelerator';
  const wt = await worktreeAt(ctx, candidateWorktreePath(ctx, ev), candidate.commit);
  const platform: Platform = which === 'cpu' ? 'cpu' : backend.info().platform;
  const plan = await requestPlan(ctx, ev, { backend, harness: ev.base.commit, platform });
  // The export first (seconds), alone; then the suite and the verification side by side (most of
  // either is one process compiling on one core). A failure of either counts; only the verifier passes
  // the gate. The first to fail the candidate stops the other: the verdict is `invalid` either way, and
  // a wrong kernel would otherwise hold the machine for the whole suite after the verifier's answer.
  const stop = new AbortController();
  const stopWithLoop = () => stop.abort();
  if (ctx.signal.aborted) stop.abort();
  else ctx.signal.addEventListener('abort', stopWithLoop, { once: true });
  const job = {
    ctx: { ...ctx, signal: stop.signal },
    bundle,
    ev,
    which,
    backend,
    root: wt.root,
    commit: candidate.commit,
    plan,
  };
  const stoppedHere = () => stop.signal.aborted && !ctx.signal.aborted;
  const firstFailureStops = <T extends { problems: string[] }>(part: Promise<T>, stopped: () => T) =>
    part.then(
      (r) => {
        if (r.problems.length > 0) stop.abort();
        return r;
      },
      (e: unknown) => {
        if (stoppedHere()) return stopped();
        throw e;
      },
    );
  // The export first, alone: no other process of the candidate's runs beside it (none runs beside a
  // champion's export either, so running beside its own suite would tell an export which arm it is).
  let suite: Awaited<ReturnType<typeof runSuite>>;
  let programs: Awaited<ReturnType<typeof verifyPrograms>>;
  try {
    // A dry run printed the export's command; the suite and the verifier print theirs.
    const exported = await exportCandidate(job).catch((e: unknown) => {
      if (ctx.dryRun && /\bdry run\b/.test(errorMessage(e))) return DRY_RUN_EXPORT;
      throw e;
    });
    if (exported.status === 'failed') {
      const reason = `the candidate's programs could not be exported: ${exported.reason}`;
      ev.gates[which] = { ...stoppedSuite(`the test suite was not run: ${reason}`), export: exported };
      return { status: 'verdict', verdict: 'invalid', reasons: [`${label} correctness failed: ${reason}`] };
    }
    [suite, programs] = settled(
      await Promise.allSettled([
        firstFailureStops(runSuite(job, gate), () => ({
          evidence: stoppedSuite(`${STOPPED} once the verifier had failed the candidate (no test results)`),
          problems: [],
        })),
        firstFailureStops(verifyPrograms(job, exported), () => ({ problems: [] })),
      ]),
    );
  } finally {
    ctx.signal.removeEventListener('abort', stopWithLoop);
  }
  const witness =
    suite.problems.length === 0 && programs.problems.length === 0 && programs.verifier
      ? checkWitness(gate, suite.witness, programs.verifier.programs)
      : undefined;
  const evidence: GateEvidence = {
    ...suite.evidence,
    ...(programs.export ? { export: programs.export } : {}),
    ...(programs.verifier ? { verifier: programs.verifier } : {}),
    ...(witness ? { witness: witness.evidence } : {}),
  };
  const problems = [...suite.problems, ...programs.problems, ...(witness?.problems ?? [])];
  if (problems.length > 0) {
    evidence.status = 'failed';
    evidence.reason = problems[0];
    ev.gates[which] = evidence;
    const stopped = suite.evidence.reason?.startsWith(STOPPED) ? [suite.evidence.reason] : [];
    return {
      status: 'verdict',
      verdict: 'invalid',
      reasons: [`${label} correctness failed: ${problems.join('; ')}`, ...stopped],
    };
  }
  ev.gates[which] = evidence;
  const t = evidence.junit;
  const tests = t ? `${t.passed} tests passed, ${t.skipped} skipped; ` : '';
  return { status: 'done', note: `${tests}${evidence.verifier!.total} programs verified` };
}

/** The suite's evidence when it was stopped because the export or the verifier failed first. */
function stoppedSuite(reason: string): GateEvidence {
  return { status: 'failed', reason, exitCode: null, durationMs: 0 };
}

/** The values of settled promises, or the first rejection rethrown once both have settled. */
function settled<T extends unknown[]>(results: { [K in keyof T]: PromiseSettledResult<T[K]> }): T {
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<unknown>).value) as T;
}

interface GateJob {
  ctx: StepEnv['ctx'];
  bundle: StepEnv['bundle'];
  ev: StepEnv['ev'];
  which: 'cpu' | 'accelerator';
  backend: Backend;
  root: string;
  commit: string;
  plan: RequestPlan;
}

/** The witness property hillclimb_bench's pytest plugin writes into the JUnit report. */
const WITNESS_PROPERTY = 'hillclimb-witness';
/** Bytes of a witness report read (a few dozen hashes fit many times over). */
const MAX_WITNESS_BYTES = 1 << 20;

/** The environment that loads the witness into a pytest suite's process (harmless to other suites). */
function witnessEnv(ctx: StepEnv['ctx'], platform: Platform): Record<string, string> {
  const p = ctx.target.programs;
  return {
    PYTEST_PLUGINS: 'hillclimb_bench.witness',
    HILLCLIMB_WITNESS: JSON.stringify({ module: p.module, args: p.args, platform, requests: REQUEST_FILE }),
  };
}

/** Whether the gate's command runs pytest (`python -m pytest …`, `pytest …`): then a witness is due. */
export function runsPytest(command: readonly string[]): boolean {
  const at = command.indexOf('-m');
  if (at !== -1 && command[at + 1] === 'pytest') return true;
  return /(^|\/)py\.?test$/.test(command[0] ?? '');
}

/** The witness's program hashes as the suite reported them (the candidate's words: parsed defensively). */
function witnessOf(
  properties: ReadonlyArray<{ name: string; value: string }>,
): Record<string, string> | undefined {
  const raw = properties.find((p) => p.name === WITNESS_PROPERTY)?.value;
  if (raw === undefined || raw.length > MAX_WITNESS_BYTES) return undefined;
  try {
    const doc = JSON.parse(raw) as { programs?: unknown };
    if (typeof doc.programs !== 'object' || doc.programs === null) return undefined;
    return Object.fromEntries(
      Object.entries(doc.programs).filter((e): e is [string, string] => typeof e[1] === 'string'),
    );
  } catch {
    return undefined;
  }
}

/**
 * The gate's witness check: every program the verifier read must be the one the suite's process built
 * from the same request (same sha256). A pytest suite that reported none fails too.
 */
export function checkWitness(
  gate: GateConfig,
  witnessed: Record<string, string> | undefined,
  verified: Record<string, string>,
): { evidence: NonNullable<GateEvidence['witness']>; problems: string[] } {
  if (!runsPytest(gate.command)) return { evidence: { status: 'not-pytest' }, problems: [] };
  if (witnessed === undefined) {
    return {
      evidence: { status: 'missing' },
      problems: [
        "the test suite's report carries no witness of the programs its process builds (hillclimb_bench's pytest plugin, loaded through PYTEST_PLUGINS, records them in the JUnit file)",
      ],
    };
  }
  const differing = Object.keys(verified)
    .filter((key) => witnessed[key] !== verified[key])
    .sort();
  if (differing.length === 0) return { evidence: { status: 'matched' }, problems: [] };
  return {
    evidence: { status: 'differs', differing: differing.slice(0, MAX_FAILING_LISTED) },
    problems: [
      `the programs exported are not the ones the test suite's process builds from the same request (${differing.slice(0, 5).join(', ')}${differing.length > 5 ? `, … ${differing.length} in all` : ''}): the kernel's program depends on how it is run (argv, paths, the environment, what the process loaded), so its tests ran other code than would be timed`,
    ],
  };
}

/**
 * The kernel's own test suite, in the candidate's process: its failures count against the candidate;
 * its passes decide nothing (a process that imported the candidate could forge them).
 */
async function runSuite(
  { ctx, bundle, ev, which, backend, root, commit, plan }: GateJob,
  gate: GateConfig,
): Promise<{ evidence: GateEvidence; problems: string[]; witness?: Record<string, string> }> {
  const junitFile = bundle.path(BundleFiles.gateJunit(which));
  const logFile = bundle.path(BundleFiles.gateLog(which));
  // A retried gate starts clean: the outputs are copied without writing through anything already there.
  rmSync(junitFile, { force: true });
  placeRequestFile(root, plan);
  const result = await backend
    .run({
      id: jobId(ctx.runId, ev, `${which}-gate`, Date.now()),
      command: gate.command,
      workdir: root,
      env: { ...CANDIDATE_ENV, ...witnessEnv(ctx, plan.platform) },
      timeoutMs: gate.timeout_minutes * MINUTE_MS,
      idleTimeoutMs: gate.idle_timeout_minutes * MINUTE_MS,
      outputs: { junit: junitFile },
      logFile,
      signal: ctx.signal,
      cacheKey: await ctx.git.treeHash(commit),
      include: [REQUEST_FILE],
    })
    .finally(() => rmSync(join(root, REQUEST_FILE), { force: true }));
  if (result.isolation) {
    recordIsolation(ev, `${which}-gate`, { mode: result.isolation, job: ctx.job });
  }
  if (result.killedBy === 'abort') throw new InfraFailure(`${which} gate cancelled`);
  if (result.infraError) throw new InfraFailure(`${which} gate could not run: ${result.infraError}`);

  const evidence: GateEvidence = {
    status: 'passed',
    exitCode: result.exitCode,
    durationMs: result.durationMs,
    logFile: BundleFiles.gateLog(which),
  };
  const problems: string[] = [];
  let witness: Record<string, string> | undefined;
  if (existsSync(junitFile)) {
    try {
      const report = await readJUnitXml(junitFile);
      witness = witnessOf(report.properties);
      const failing = report.cases
        .filter((c) => c.status === 'failed' || c.status === 'error')
        .map((c) => `${c.classname}::${c.name}${c.message ? ` — ${failureSummary(c.message)}` : ''}`);
      evidence.junit = { ...report.totals, failing: failing.slice(0, MAX_FAILING_LISTED) };
      evidence.junitFile = BundleFiles.gateJunit(which);
      if (failing.length > 0) problems.push(`${failing.length} test(s) failed, first: ${failing[0]}`);
      if (report.totals.tests === 0) problems.push('the test report holds no tests');
    } catch (e) {
      problems.push(`unreadable JUnit report: ${errorMessage(e)}`);
    }
  } else if (gate.command.some((a) => a.includes('{junit}'))) {
    problems.push('the test command wrote no JUnit report');
  }
  if (result.killedBy === 'timeout') problems.unshift(`timed out after ${gate.timeout_minutes} min`);
  else if (result.killedBy === 'idle-timeout') {
    problems.unshift(`printed nothing for ${gate.idle_timeout_minutes} min (hung), killed`);
  } else if (result.exitCode !== 0) problems.push(`exit code ${result.exitCode}`);
  return { evidence, problems, ...(witness ? { witness } : {}) };
}

/**
 * The candidate's programs, exported for the gate's platform (the only other process that runs its
 * code), then verified over the matrix by the verifier, which never imports it: the gate's verdict.
 */
/** The candidate's programs, exported for the gate's platform (the only other process that runs its code). */
async function exportCandidate({
  ctx,
  bundle,
  ev,
  which,
  backend,
  commit,
  plan,
}: GateJob): Promise<ExportEvidence> {
  const { platform } = plan;
  return exportPrograms(ctx, ev, {
    backend,
    commit,
    plan,
    dest: bundlePrograms(bundle, 'B', platform),
    logFile: bundle.path(ProgramFiles.exportLog('B', platform)),
    record: { dir: ProgramFiles.dir('B', platform), logFile: ProgramFiles.exportLog('B', platform) },
    name: `B-${platform}`,
    step: `${which}-gate`,
  });
}

/**
 * After the verifier crashed on the candidate's programs: the champion's, exported with the same
 * request file, through the same gate session. Resolves when it ends (whatever it says of them);
 * throws when it could not run.
 */
async function championGate({
  ctx,
  bundle,
  ev,
  which,
  backend,
  plan,
}: Omit<GateJob, 'root' | 'commit'>): Promise<void> {
  const { platform, draw } = plan;
  const dir = bundle.path(`programs/A-${platform}-probe`);
  const exported = await exportPrograms(ctx, ev, {
    backend,
    commit: ev.base.commit,
    plan,
    dest: dir,
    logFile: bundle.path(`programs/export-A-${platform}-probe.log`),
    record: { dir: `programs/A-${platform}-probe`, logFile: `programs/export-A-${platform}-probe.log` },
    name: `A-${platform}-probe`,
    step: `${which}-gate`,
  });
  if (exported.status === 'failed') {
    throw championExportFailure(
      ctx,
      `the champion's export failed: ${exported.reason ?? 'see its log'}`,
      bundle.path(`programs/export-A-${platform}-probe.log`),
    );
  }
  const name = `${which}-gate-probe`;
  await runGateSession(ctx, ev, {
    platform,
    draw,
    arm: 'A',
    programs: dir,
    backend,
    harness: ev.base.commit,
    sessionFile: bundle.path(ProgramFiles.session(name)),
    logFile: bundle.path(ProgramFiles.verifyLog(name)),
    name,
    step: `${which}-gate`,
  });
}

/** The verifier's check of the exported programs over the matrix: the gate's verdict. */
async function verifyPrograms(
  { ctx, bundle, ev, which, backend, plan }: GateJob,
  exported: ExportEvidence,
): Promise<{ export?: ExportEvidence; verifier?: GateVerification; problems: string[] }> {
  const { platform, draw } = plan;
  const programsDir = bundlePrograms(bundle, 'B', platform);
  const name = `${which}-gate` as const;
  const session = () =>
    runGateSession(ctx, ev, {
      platform,
      draw,
      arm: 'B',
      programs: programsDir,
      backend,
      harness: ev.base.commit,
      sessionFile: bundle.path(ProgramFiles.session(name)),
      logFile: bundle.path(ProgramFiles.verifyLog(name)),
      name,
      step: name,
    });
  let run: VerifierRun;
  try {
    run = await session();
  } catch (e) {
    if (e instanceof VerifierFailed) return { export: exported, problems: [e.message] };
    if (e instanceof VerifierCrashed) {
      const why = await crashProbe(e, {
        again: session,
        champion: () => championGate({ ctx, bundle, ev, which, backend, plan }),
      });
      return { export: exported, problems: [why] };
    }
    throw e;
  }
  const verdict = run.session.gate!;
  const failing = failingPrograms(verdict.programs);
  const verifier: GateVerification = {
    passed: verdict.passed,
    total: verdict.total,
    failed: verdict.failed,
    failing: failing.slice(0, MAX_FAILING_LISTED),
    programs: run.session.arms.B?.programs ?? {},
    platform,
    draw,
    sessionFile: ProgramFiles.session(name),
    logFile: ProgramFiles.verifyLog(name),
    durationMs: run.durationMs,
  };
  if (verdict.passed) return { export: exported, verifier, problems: [] };
  const why =
    verdict.total === 0
      ? 'the verifier checked no programs'
      : `${verdict.failed} of ${verdict.total} exported programs failed verification, first: ${failing[0]}`;
  return { export: exported, verifier, problems: [why] };
}

/** Each failed program of a gate session as `<key>: <its error>`, in the session's order. */
export function failingPrograms(programs: readonly GateProgram[]): string[] {
  return programs
    .filter((p) => p.status === 'failed')
    .map((p) => (p.error?.startsWith(`${p.key}: `) ? p.error : `${p.key}: ${p.error ?? 'failed'}`));
}

export function gateJobDescription(ctx: LoopContext): string {
  return ctx.cpuBackend.info().description;
}
