/**
 * `local`: jobs run on this machine, in their working tree, through the exec funnel. {python} is the
 * project venv's interpreter (job worktrees have no .venv of their own), {root} the working tree, and
 * outputs are written straight to their local destinations.
 */
import { appendFileSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { availableParallelism, constants } from 'node:os';
import { dirname, join } from 'node:path';
import { fillCommand, usesPlaceholder } from '../../config/command.js';
import { venvPython } from '../../env/python.js';
import { displayCommand, ExecError, run } from '../../exec/exec.js';
import type { Logger } from '../../util/log.js';
import { secretsFromEnv } from '../../util/redact.js';
import type { Backend, BackendInfo, JobResult, JobSpec } from '../backend.js';
import { jobEnv } from '../job-env.js';
import { clearDestinations, prepareDestinations } from '../outputs.js';

export interface LocalBackendOptions {
  /** Project root: where the venv lives. */
  root: string;
  logger: Logger;
  /** Print commands instead of running them. */
  dryRun?: boolean;
  /** What {cache} becomes: a folder kept across jobs. Default <root>/.hillclimb/cache/jobs. */
  cacheDir?: string;
}

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

  constructor(private readonly opts: LocalBackendOptions) {
    this.accelerator = detectLocalAccelerator();
  }

  async open(): Promise<void> {
    this.opts.logger.debug(`local backend: ${this.info().description}`);
  }

  async run(job: JobSpec): Promise<JobResult> {
    const started = Date.now();
    const python = venvPython(this.opts.root);
    const cache = this.opts.cacheDir ?? join(this.opts.root, '.hillclimb', 'cache', 'jobs');
    const argv = fillCommand(job.command, { python, root: job.workdir, cache, ...job.outputs });
    const shown = displayCommand(argv[0], argv.slice(1));
    const result = (extra: Partial<JobResult>): JobResult => ({
      exitCode: null,
      durationMs: Date.now() - started,
      logFile: job.logFile,
      handle: `local:${job.id}`,
      ...extra,
    });
    mkdirSync(dirname(job.logFile), { recursive: true });
    appendFileSync(job.logFile, `$ ${shown}\n`);
    if (this.opts.dryRun) {
      this.opts.logger.info(`dry run: ${shown} (in ${job.workdir})`);
      return result({ infraError: 'dry run: the command was printed, not run' });
    }
    if (usesPlaceholder(job.command, 'python') && !existsSync(python)) {
      return result({
        infraError: `the project interpreter ${python} does not exist; run \`hillclimb setup\` in ${this.opts.root}`,
      });
    }
    clearDestinations(job.outputs);
    prepareDestinations(job.outputs);
    try {
      const r = await run(argv[0], argv.slice(1), {
        cwd: job.workdir,
        env: jobEnv(job.env),
        timeoutMs: job.timeoutMs,
        idleTimeoutMs: job.idleTimeoutMs,
        signal: job.signal,
        logFile: job.logFile,
        allowedExitCodes: 'any',
        redact: secretsFromEnv(),
      });
      return result({ exitCode: r.exitCode ?? signalExitCode(r.signal) });
    } catch (e) {
      if (!(e instanceof ExecError)) throw e;
      if (e.result?.killedBy) return result({ killedBy: e.result.killedBy });
      // Ended by a signal nobody here sent (a crash, the OOM killer): the job's failure, shell-style code.
      if (e.result) return result({ exitCode: signalExitCode(e.result.signal) });
      return result({ infraError: e.message }); // could not start
    }
  }

  async close(): Promise<void> {
    // Nothing is held between jobs.
  }

  info(): BackendInfo {
    const tpu = this.accelerator.kind === 'tpu';
    return {
      backend: this.name,
      hasAccelerator: tpu,
      description: tpu
        ? `local TPU (${this.accelerator.evidence})`
        : `local CPU (${availableParallelism()} cores)`,
    };
  }
}
