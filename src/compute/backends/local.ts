/**
 * `local`: jobs run on this machine, in their working tree, through the exec funnel. {python} is the
 * project venv's interpreter (job worktrees have no .venv of their own), {root} the working tree.
 *
 * Job code is the candidate's, so each job runs in the namespace sandbox (src/exec/sandbox.ts): the
 * working tree and the interpreter read-only, one fresh output folder and the code's own {cache}
 * folder writable, no network, nothing else of the machine. Outputs are copied from that folder to
 * their destinations afterwards, plain files only. Where the machine cannot build the sandbox, the job
 * does not run (`sandbox.mode: required`, the default), or, with the opt-out `allow-unsandboxed`, runs
 * unsandboxed and says so (`isolation: 'none'`).
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { availableParallelism, constants, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fillCommand, type SandboxConfig, usesPlaceholder } from '../../config/index.js';
import {
  displayCommand,
  ExecError,
  findOnPath,
  programReadPaths,
  run,
  SANDBOX_HINT,
  SANDBOX_SETUP_FAILED,
  sandboxAvailability,
  sandboxCommand,
  sandboxWasReady,
} from '../../exec/index.js';
import { interpreterReadPaths, venvPython } from '../../project/index.js';
import { copyPlainTree, type Logger, secretsFromEnv } from '../../util/index.js';
import {
  type Backend,
  type BackendInfo,
  EPHEMERAL_CACHE_KEY,
  type Isolation,
  type JobOutputs,
  type JobResult,
  type JobSpec,
  OUTPUT_NAMES,
} from '../backend.js';
import { jobEnv, sandboxJobEnv } from '../job-env.js';
import { clearDestinations, prepareDestinations } from '../outputs.js';

export interface LocalBackendOptions {
  /** Project root: where the venv lives. */
  root: string;
  logger: Logger;
  /** Print commands instead of running them. */
  dryRun?: boolean;
  /** What {cache} becomes: a folder kept across jobs. Default <root>/.hillclimb/cache/jobs. */
  cacheDir?: string;
  /** How job code is isolated (`sandbox` in hillclimb.yml). Default: auto, no extra read paths. */
  sandbox?: SandboxConfig;
}

/** Where a sandboxed job writes its outputs, inside its private folder. */
const SANDBOX_OUTPUTS = {
  metrics: 'metrics.json',
  junit: 'junit.xml',
  trace: 'trace',
  programs: 'programs',
} as const;

export interface LocalAccelerator {
  kind: 'tpu' | 'none';
  /** What the detection found, for the description. */
  evidence: string;
}

/**
 * Whether this machine has a TPU, from device files alone (no JAX start-up, which takes seconds and
 * may grab the device): TPU VMs expose /dev/accel* (v4, v5p) or VFIO groups /dev/vfio/<n> (v5e, v6e).
 * HILLCLIMB_ACCELERATOR=tpu|none overrides. GPUs do not count: the kernels are Pallas TPU kernels.
 */
export function detectLocalAccelerator(
  env: NodeJS.ProcessEnv = process.env,
  devDir = '/dev',
): LocalAccelerator {
  const forced = env.HILLCLIMB_ACCELERATOR;
  if (forced === 'tpu' || forced === 'none') return { kind: forced, evidence: 'HILLCLIMB_ACCELERATOR' };
  const list = (dir: string): string[] => {
    try {
      return readdirSync(dir);
    } catch {
      return [];
    }
  };
  const accel = list(devDir).filter((n) => /^accel\d+$/.test(n));
  if (accel.length > 0) return { kind: 'tpu', evidence: accel.map((n) => `${devDir}/${n}`).join(', ') };
  const vfio = list(`${devDir}/vfio`).filter((n) => /^\d+$/.test(n));
  if (vfio.length > 0) return { kind: 'tpu', evidence: vfio.map((n) => `${devDir}/vfio/${n}`).join(', ') };
  return { kind: 'none', evidence: 'no /dev/accel* or /dev/vfio/<n>' };
}

/** Exit code of a process ended by a signal, shell style (128 + signal number). */
function signalExitCode(signal: NodeJS.Signals | null): number | null {
  if (signal === null) return null;
  const n = (constants.signals as Record<string, number>)[signal];
  return n === undefined ? null : 128 + n;
}

export class LocalBackend implements Backend {
  readonly name = 'local';
  private readonly accelerator: LocalAccelerator;
  private decided: Promise<{ mode: Isolation; why?: string; problem?: string }> | undefined;

  constructor(private readonly opts: LocalBackendOptions) {
    this.accelerator = detectLocalAccelerator();
  }

  async open(): Promise<void> {
    this.opts.logger.debug(`local backend: ${this.info().description}`);
  }

  async run(job: JobSpec): Promise<JobResult> {
    const cacheRoot = this.opts.cacheDir ?? join(this.opts.root, '.hillclimb', 'cache', 'jobs');
    // Keyed jobs get their code's own folder; jobs without a key share one that holds no code's cache;
    // an ephemeral job gets an empty folder of its own, removed when it ends.
    if (job.cacheKey !== EPHEMERAL_CACHE_KEY) {
      return this.runWith(job, join(cacheRoot, ...(job.cacheKey ? ['by-code', job.cacheKey] : ['shared'])));
    }
    const cache = join(cacheRoot, 'ephemeral', randomBytes(8).toString('hex'));
    try {
      return await this.runWith(job, cache);
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  }

  private async runWith(job: JobSpec, cache: string): Promise<JobResult> {
    const started = Date.now();
    const python = venvPython(this.opts.root);
    const result = (extra: Partial<JobResult>): JobResult => ({
      exitCode: null,
      durationMs: Date.now() - started,
      logFile: job.logFile,
      handle: `local:${job.id}`,
      ...extra,
    });
    mkdirSync(dirname(job.logFile), { recursive: true });
    if (this.opts.dryRun) {
      const shown = displayCommand(
        ...split(fillCommand(job.command, { python, root: job.workdir, cache, ...job.outputs })),
      );
      appendFileSync(job.logFile, `$ ${shown}\n`);
      this.opts.logger.info(`dry run: ${shown} (in ${job.workdir})`);
      return result({ infraError: 'dry run: the command was printed, not run' });
    }
    if (usesPlaceholder(job.command, 'python') && !existsSync(python)) {
      return result({
        infraError: `the project interpreter ${python} does not exist; run \`hillclimb setup\` in ${this.opts.root}`,
      });
    }
    const isolation = await this.isolation();
    if (isolation.problem) return result({ infraError: isolation.problem });
    mkdirSync(cache, { recursive: true });
    clearDestinations(job.outputs);
    prepareDestinations(job.outputs);
    if (isolation.mode === 'none') {
      const argv = fillCommand(job.command, { python, root: job.workdir, cache, ...job.outputs });
      appendFileSync(job.logFile, `$ ${displayCommand(...split(argv))}\n# unsandboxed: ${isolation.why}\n`);
      const { ended } = await this.exec(argv, job, jobEnv(job.env), true, started);
      return { ...ended, isolation: 'none' };
    }
    // Sandboxed: outputs go to a private folder first, then plain files are copied to their destinations.
    const scratch = mkdtempSync(join(tmpdir(), 'hc-job-'));
    try {
      const out = join(scratch, 'out');
      mkdirSync(out);
      const inside: JobOutputs = {
        ...(job.outputs.metrics ? { metrics: join(out, SANDBOX_OUTPUTS.metrics) } : {}),
        ...(job.outputs.junit ? { junit: join(out, SANDBOX_OUTPUTS.junit) } : {}),
        ...(job.outputs.trace ? { trace: join(out, SANDBOX_OUTPUTS.trace) } : {}),
        ...(job.outputs.programs ? { programs: join(out, SANDBOX_OUTPUTS.programs) } : {}),
      };
      const argv = fillCommand(job.command, { python, root: job.workdir, cache, ...inside });
      appendFileSync(job.logFile, `$ ${displayCommand(...split(argv))}\n`);
      // Looked up here, as an unsandboxed run would: a missing program is the machine's problem, and
      // the folder it lives in must be visible inside.
      const program = argv[0].includes('/') ? resolve(job.workdir, argv[0]) : findOnPath(argv[0]);
      if (program === undefined || !existsSync(program)) {
        return result({ infraError: `${displayCommand(...split(argv))}: command not found: ${argv[0]}` });
      }
      const sandboxed = sandboxCommand(
        {
          cwd: job.workdir,
          readOnly: [
            job.workdir,
            ...programReadPaths(program),
            ...interpreterReadPaths(python),
            ...(this.opts.sandbox?.read_paths ?? []),
          ],
          writable: [out, cache],
          readyFile: join(scratch, 'ready'),
        },
        argv[0],
        argv.slice(1),
      );
      const { ended, lastError } = await this.exec(
        [sandboxed.command, ...sandboxed.args],
        job,
        sandboxJobEnv(job.env),
        false,
        started,
      );
      // Only the init's own mark says the sandbox was built: a command can exit 125 and print anything.
      if (!sandboxWasReady(join(scratch, 'ready')) && ended.exitCode === SANDBOX_SETUP_FAILED) {
        return {
          ...ended,
          exitCode: null,
          infraError: `the sandbox could not be built: ${lastError ?? 'exit 125'}`,
        };
      }
      const refused = collectOutputs(inside, job.outputs);
      if (refused.length > 0) appendFileSync(job.logFile, `# outputs refused: ${refused.join('; ')}\n`);
      return { ...ended, isolation: 'sandbox' };
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }

  private async exec(
    argv: readonly string[],
    job: JobSpec,
    env: Record<string, string | undefined>,
    inheritEnv: boolean,
    started: number,
  ): Promise<{ ended: JobResult; lastError?: string }> {
    const done = (extra: Partial<JobResult>, lastError?: string) => ({
      ended: {
        exitCode: null,
        logFile: job.logFile,
        handle: `local:${job.id}`,
        ...extra,
        durationMs: Date.now() - started,
      },
      ...(lastError !== undefined ? { lastError } : {}),
    });
    try {
      const r = await run(argv[0]!, argv.slice(1), {
        cwd: job.workdir,
        env,
        inheritEnv,
        timeoutMs: job.timeoutMs,
        idleTimeoutMs: job.idleTimeoutMs,
        signal: job.signal,
        logFile: job.logFile,
        allowedExitCodes: 'any',
        redact: secretsFromEnv(),
      });
      return done({ exitCode: r.exitCode ?? signalExitCode(r.signal) }, r.stderr.trim().split('\n').at(-1));
    } catch (e) {
      if (!(e instanceof ExecError)) throw e;
      if (e.result?.killedBy) return done({ killedBy: e.result.killedBy });
      // Ended by a signal nobody here sent (a crash, the OOM killer): the job's failure, shell-style code.
      if (e.result) return done({ exitCode: signalExitCode(e.result.signal) });
      return done({ infraError: e.message }); // could not start
    }
  }

  /** How jobs run here: decided once, from `sandbox.mode` and whether this machine can build the sandbox. */
  private async isolation(): Promise<{ mode: Isolation; why?: string; problem?: string }> {
    this.decided ??= (async () => {
      const available = await sandboxAvailability();
      if (available.available) return { mode: 'sandbox' as const };
      const why = `no sandbox on this machine (${available.reason})`;
      if (this.opts.sandbox?.mode === 'required') {
        return { mode: 'none' as const, problem: `sandbox.mode is required, but ${why}; ${SANDBOX_HINT}` };
      }
      this.opts.logger.warn(
        `candidate code runs unsandboxed: ${why}. Its numbers are unverified and no iteration can be improved; ${SANDBOX_HINT}`,
      );
      return { mode: 'none' as const, why };
    })();
    return this.decided;
  }

  async close(): Promise<void> {
    // Nothing is held between jobs.
  }

  info(): BackendInfo {
    const tpu = this.accelerator.kind === 'tpu';
    return {
      backend: this.name,
      hasAccelerator: tpu,
      platform: tpu ? 'tpu' : 'cpu',
      description: tpu
        ? `local TPU (${this.accelerator.evidence})`
        : `local CPU (${availableParallelism()} cores)`,
    };
  }
}

function split(argv: readonly string[]): [string, string[]] {
  return [argv[0]!, argv.slice(1)];
}

/** Copy what a sandboxed job wrote to the requested destinations (plain files only); returns what was refused. */
function collectOutputs(inside: JobOutputs, outputs: JobOutputs): string[] {
  const refused: string[] = [];
  for (const name of OUTPUT_NAMES) {
    const from = inside[name];
    const to = outputs[name];
    if (from === undefined || to === undefined || !existsSync(from)) continue;
    const r = copyPlainTree(from, to);
    refused.push(...r.refused.map((x) => `${name}/${x}`));
  }
  return refused;
}
