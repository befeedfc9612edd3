/**
 * `ray`: jobs are submitted to a Ray cluster through the Jobs REST API, with no Python in the engine.
 *
 * - The working tree (as on disk, with the job runner added) is zipped with `git archive` and uploaded
 *   through the packages API as `gcs://_ray_pkg_<tree id>.zip`, exactly as Ray's own CLI does for
 *   `--working-dir`; an identical tree is uploaded once.
 * - The submission id is derived from the job id, so a retried submit attaches to the job that is
 *   already there instead of starting a second one.
 * - The runner fills the placeholders on the worker and sends the outputs back through the job log
 *   (base64 gzipped tar between markers, size-capped), so no shared filesystem is needed.
 * - HTTP and connection failures, a lost job and a job stuck PENDING are infrastructure errors; a
 *   job that ran and exited non-zero is the job's failure.
 *
 * Security: the Ray job server runs whatever it is sent and has no authentication by default. Reach
 * it through an SSH/IAP tunnel or a private network only (docs/compute.md).
 */
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fillCommand, type RayConfig } from '../../config/index.js';
import {
  ExitCode,
  errorMessage,
  HillclimbError,
  type Logger,
  redact,
  secretsFromEnv,
} from '../../util/index.js';
import type { Backend, BackendInfo, JobResult, JobSpec } from '../backend.js';
import { raySubmissionId } from '../names.js';
import { clearDestinations, installOutputs, prepareDestinations } from '../outputs.js';
import { RayApiError, type RayJobDetails, RayJobsClient, TERMINAL_STATUSES } from '../ray/client.js';
import {
  LogForwarder,
  parseRunnerOutput,
  type RunnerSpec,
  requestedOutputs,
  runnerArgv,
  runnerNonce,
} from '../runner/protocol.js';
import { RUNNER_FILE, RUNNER_SOURCE } from '../runner/source.js';
import { shellJoin } from '../shell.js';
import { archiveTree, snapshotTree } from '../tree.js';
import { sleep } from '../wait.js';

export interface RayBackendOptions {
  config: RayConfig;
  logger: Logger;
  dryRun?: boolean;
  /** How long polling may fail to reach the head before the job counts as lost. Default 60 s. */
  connectionGraceMs?: number;
  /** How long to wait for a stopped job to reach a terminal state. Default 60 s. */
  stopWaitMs?: number;
}

const DEFAULT_CONNECTION_GRACE_MS = 60_000;
const DEFAULT_STOP_WAIT_MS = 60_000;
/** The runner's own time limit is the job's plus this, so it only fires when the engine is gone. */
const RUNNER_TIMEOUT_MARGIN_S = 120;
const MIB = 1024 * 1024;

type StopReason = NonNullable<JobResult['killedBy']> | 'pending';

/** Hosts a job server may sit on without a warning: loopback (a tunnel's end) and private ranges. */
export function isPrivateAddress(address: string): boolean {
  let host: string;
  try {
    host = new URL(address).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return false;
  }
  if (host === 'localhost' || host === '::1' || host.endsWith('.internal') || host.endsWith('.local'))
    return true;
  const m = /^(\d+)\.(\d+)\.\d+\.\d+$/.exec(host);
  if (!m) return /^f[cd][0-9a-f]{2}:/i.test(host);
  const [a, b] = [Number(m[1]), Number(m[2])];
  return a === 127 || a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168);
}

export class RayBackend implements Backend {
  readonly name = 'ray';
  private readonly client: RayJobsClient;
  private readonly token: string | undefined;
  private opened = false;

  constructor(private readonly opts: RayBackendOptions) {
    const { config } = opts;
    if (config.token_env) {
      this.token = process.env[config.token_env];
      if (!this.token) {
        throw new HillclimbError(`compute.ray.token_env names ${config.token_env}, which is not set`, {
          hint: `export ${config.token_env}=<the cluster's Ray auth token>, or remove compute.ray.token_env`,
          exitCode: ExitCode.badInput,
        });
      }
    }
    this.client = new RayJobsClient(config.address, { token: this.token });
  }

  private get logger(): Logger {
    return this.opts.logger;
  }

  async open(): Promise<void> {
    if (this.opened) return;
    if (!isPrivateAddress(this.opts.config.address)) {
      this.logger.warn(
        `compute.ray.address ${this.opts.config.address} is not a loopback or private address: the Ray job ` +
          'server runs any code it is sent; reach it through an SSH/IAP tunnel (docs/compute.md)',
      );
    }
    if (this.opts.dryRun) {
      this.logger.info(`dry run: would check GET ${this.client.address}/api/version`);
      this.opened = true;
      return;
    }
    try {
      const version = await this.client.version();
      this.logger.info(`ray: job server at ${this.client.address} (Ray ${version})`);
    } catch (e) {
      throw new HillclimbError(`the Ray job server does not answer: ${errorMessage(e)}`, {
        hint:
          'start the head or the tunnel to it (e.g. ssh -N -L 8265:localhost:8265 <head>, or gcloud compute ' +
          'ssh <head> --tunnel-through-iap -- -N -L 8265:localhost:8265), then check compute.ray.address',
        exitCode: ExitCode.infra,
        cause: e,
      });
    }
    this.opened = true;
  }

  async run(job: JobSpec): Promise<JobResult> {
    const started = Date.now();
    const { config } = this.opts;
    const submissionId = raySubmissionId(job.id);
    const nonce = runnerNonce(submissionId);
    const outputs = requestedOutputs(job.outputs);
    // Fails fast (before anything is uploaded) on a placeholder the job has no destination for.
    fillCommand(job.command, { python: 'python', root: '.', cache: '.', ...job.outputs });
    const spec: RunnerSpec = {
      nonce,
      command: job.command,
      env: job.env ?? {},
      ...(job.cacheKey ? { cache_key: job.cacheKey } : {}),
      outputs,
      emit: 'log',
      max_bytes: Math.floor(config.max_output_mb * MIB),
      timeout_s: Math.ceil(job.timeoutMs / 1000) + RUNNER_TIMEOUT_MARGIN_S,
    };
    const entrypoint = shellJoin(runnerArgv(config.python, spec));
    const result = (extra: Partial<JobResult>): JobResult => ({
      exitCode: null,
      durationMs: Date.now() - started,
      logFile: job.logFile,
      handle: submissionId,
      // Job code runs on the cluster's machines, never beside the harness.
      isolation: 'remote',
      ...extra,
    });
    mkdirSync(dirname(job.logFile), { recursive: true });
    const log = (text: string): void => {
      if (text) appendFileSync(job.logFile, redact(text, secretsFromEnv()));
    };
    log(`[hillclimb] ray job ${submissionId} at ${this.client.address}\n`);

    if (this.opts.dryRun) {
      this.logger.info(`dry run: would submit ${submissionId} with entrypoint: ${entrypoint}`);
      return result({ infraError: 'dry run: the submission was printed, not sent' });
    }
    clearDestinations(job.outputs);
    prepareDestinations(job.outputs);
    if (job.signal?.aborted) return result({ killedBy: 'abort' });

    try {
      const existing = await this.client.getJob(submissionId);
      if (existing) {
        this.logger.info(`ray: ${submissionId} already exists (${existing.status}); attaching`);
      } else {
        const workingDir = await this.uploadTree(job.workdir, job.include);
        const submitted = await this.client.submit({
          entrypoint,
          submission_id: submissionId,
          runtime_env: { ...this.runtimeEnvBase(), working_dir: workingDir },
          metadata: { hillclimb: '1', job_id: job.id },
          ...(config.entrypoint_resources ? { entrypoint_resources: config.entrypoint_resources } : {}),
        });
        this.logger.info(
          submitted === 'submitted'
            ? `ray: submitted ${submissionId}`
            : `ray: ${submissionId} was submitted meanwhile; attaching`,
        );
      }
    } catch (e) {
      if (e instanceof RayApiError || e instanceof HillclimbError) {
        return result({ infraError: `could not submit ${submissionId}: ${e.message}` });
      }
      throw e;
    }
    return this.follow(job, submissionId, nonce, log, result);
  }

  /** Poll the job to a terminal state, forwarding its log and enforcing the limits; then classify. */
  private async follow(
    job: JobSpec,
    id: string,
    nonce: string,
    log: (text: string) => void,
    result: (extra: Partial<JobResult>) => JobResult,
  ): Promise<JobResult> {
    const { config } = this.opts;
    const pollMs = config.poll_seconds * 1000;
    const pendingLimitMs = config.pending_timeout_minutes * 60_000;
    const graceMs = this.opts.connectionGraceMs ?? DEFAULT_CONNECTION_GRACE_MS;
    const stopWaitMs = this.opts.stopWaitMs ?? DEFAULT_STOP_WAIT_MS;
    const forwarder = new LogForwarder(nonce);
    const pendingSince = Date.now();
    let runningSince: number | undefined;
    let lastGrowth = Date.now();
    let logLength = 0;
    let lastContact = Date.now();
    let stoppedBy: StopReason | undefined;
    let stopRequestedAt = 0;
    let details: RayJobDetails | undefined;
    let pendingMessage = '';

    const requestStop = async (reason: StopReason): Promise<void> => {
      stoppedBy = reason;
      stopRequestedAt = Date.now();
      this.logger.warn(`ray: stopping ${id} (${reason})`);
      try {
        await this.client.stop(id);
      } catch (e) {
        this.logger.warn(`ray: stop request for ${id} failed: ${errorMessage(e)}`);
      }
    };

    for (;;) {
      if (job.signal?.aborted && !stoppedBy) await requestStop('abort');
      try {
        details = await this.client.getJob(id);
        lastContact = Date.now();
      } catch (e) {
        if (!(e instanceof RayApiError)) throw e;
        if (Date.now() - lastContact > graceMs) {
          return result({ infraError: `lost contact with the Ray head while following ${id}: ${e.message}` });
        }
        await sleep(pollMs, job.signal);
        continue;
      }
      if (!details) {
        return result({
          infraError: `job ${id} disappeared from the cluster (head restarted or job deleted)`,
        });
      }
      const terminal = TERMINAL_STATUSES.includes(details.status);
      if (details.status !== 'PENDING') {
        const text = await this.client.logs(id).catch(() => undefined);
        if (text !== undefined) {
          if (text.length > logLength) lastGrowth = Date.now();
          logLength = text.length;
          log(forwarder.next(text, terminal));
        }
      }
      if (terminal) break;
      const now = Date.now();
      if (stoppedBy) {
        if (now - stopRequestedAt > stopWaitMs) {
          return result({
            ...(stoppedBy === 'pending' ? {} : { killedBy: stoppedBy }),
            infraError: `job ${id} did not stop within ${Math.round(stopWaitMs / 1000)} s of the stop request`,
          });
        }
      } else if (details.status === 'PENDING') {
        pendingMessage = details.message ?? '';
        if (now - pendingSince > pendingLimitMs) {
          // Ray queues the stop on the job's supervisor actor, which is itself waiting for resources:
          // the job cannot reach a terminal state now, so do not wait for one. If it ever starts, the
          // queued stop ends it at once.
          await requestStop('pending');
          return this.classify(job, details, { finished: false }, stoppedBy, pendingMessage, result);
        }
      } else if (details.status === 'RUNNING') {
        if (runningSince === undefined) {
          runningSince = now;
          lastGrowth = now;
        }
        if (now - runningSince > job.timeoutMs) await requestStop('timeout');
        else if (job.idleTimeoutMs !== undefined && now - lastGrowth > job.idleTimeoutMs)
          await requestStop('idle-timeout');
      }
      if (!stoppedBy) await sleep(pollMs, job.signal);
      else await sleep(Math.min(pollMs, 1000));
    }

    const full = await this.client.logs(id).catch(() => '');
    return this.classify(job, details, parseRunnerOutput(full, nonce), stoppedBy, pendingMessage, result);
  }

  private classify(
    job: JobSpec,
    details: RayJobDetails,
    report: ReturnType<typeof parseRunnerOutput>,
    stoppedBy: StopReason | undefined,
    pendingMessage: string,
    result: (extra: Partial<JobResult>) => JobResult,
  ): JobResult {
    const { config } = this.opts;
    if (stoppedBy === 'pending') {
      const wanted = config.entrypoint_resources ? ` for ${JSON.stringify(config.entrypoint_resources)}` : '';
      return result({
        infraError:
          `job ${details.submission_id} stayed PENDING for more than ${config.pending_timeout_minutes} min` +
          `${wanted}: no node could take it (${pendingMessage || 'no message'})`,
      });
    }
    if (stoppedBy) return result({ killedBy: stoppedBy });
    if (report.killed === 'timeout') return result({ killedBy: 'timeout' });
    if (details.status === 'STOPPED' || report.killed) {
      return result({ infraError: `job ${details.submission_id} was stopped outside hillclimb` });
    }
    if (!report.finished || report.exitCode === undefined) {
      const why = [details.error_type, details.message].filter(Boolean).join(': ');
      return result({
        infraError: `job ${details.submission_id} ${details.status} before the runner reported (${why.slice(-800) || 'no message'})`,
      });
    }
    if (report.spawnError) {
      return result({ infraError: `the worker could not start the command: ${report.spawnError}` });
    }
    const exitCode = report.exitCode;
    if (report.outputsError) return result({ exitCode, infraError: `outputs: ${report.outputsError}` });
    if (!report.outputs) return result({ exitCode, infraError: 'outputs: the runner sent none' });
    try {
      const installed = installOutputs(report.outputs, job.outputs);
      if (installed.ignored.length > 0) {
        this.logger.debug(`ray: ignored output entries: ${installed.ignored.join(', ')}`);
      }
    } catch (e) {
      return result({ exitCode, infraError: `outputs: could not unpack: ${errorMessage(e)}` });
    }
    return result({ exitCode });
  }

  /** runtime_env from the config without the keys hillclimb owns. */
  private runtimeEnvBase(): Record<string, unknown> {
    const { working_dir, excludes: _excludes, ...rest } = this.opts.config.runtime_env ?? {};
    if (working_dir !== undefined) {
      this.logger.warn('compute.ray.runtime_env.working_dir is replaced by the job working tree');
    }
    return rest;
  }

  /** Package the working tree and upload it unless the head already has it; returns the package URI. */
  private async uploadTree(workdir: string, include: readonly string[] = []): Promise<string> {
    const excludes = this.opts.config.runtime_env?.excludes;
    const treeId = await snapshotTree(workdir, {
      include,
      extraFiles: { [RUNNER_FILE]: RUNNER_SOURCE },
      excludes: Array.isArray(excludes) ? excludes.map(String) : [],
    });
    const uri = `gcs://_ray_pkg_${treeId}.zip`;
    if (await this.client.packageExists(uri)) {
      this.logger.debug(`ray: package ${uri} already on the head`);
      return uri;
    }
    const tmp = mkdtempSync(join(tmpdir(), 'hc-raypkg-'));
    try {
      const zip = join(tmp, 'package.zip');
      await archiveTree(workdir, treeId, 'zip', zip);
      const data = readFileSync(zip);
      this.logger.info(`ray: uploading ${uri} (${(data.length / MIB).toFixed(1)} MiB)`);
      await this.client.uploadPackage(uri, data);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
    return uri;
  }

  async close(): Promise<void> {
    // Jobs end with run(); the cluster is not ours to release.
    this.opened = false;
  }

  info(): BackendInfo {
    const resources = this.opts.config.entrypoint_resources ?? {};
    const tpuType = Object.keys(resources)
      .map((k) => /^TPU-(.+)-head$/.exec(k)?.[1])
      .find(Boolean);
    const hasTpu = Object.entries(resources).some(([k, v]) => /^TPU/.test(k) && v > 0);
    return {
      backend: this.name,
      hasAccelerator: hasTpu,
      platform: hasTpu ? 'tpu' : 'cpu',
      description: `ray ${this.client.address}${hasTpu ? ` (${JSON.stringify(resources)})` : ''}`,
      ...(tpuType ? { acceleratorType: tpuType } : {}),
      ...((this.opts.config.parallel_jobs ?? 1) > 1 ? { parallelJobs: this.opts.config.parallel_jobs } : {}),
    };
  }
}
