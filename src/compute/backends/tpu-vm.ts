/**
 * `tpu-vm`: jobs run on a Cloud TPU VM through gcloud.
 *
 * open() attaches to a TPU that `hillclimb tpu allocate` (or the `tpu` action) holds for this project
 * and accelerator type, else allocates one (zone fallback, TTL labels, setup_command) and owns it.
 * run() ships the working tree (as on disk, plus the job runner) as a tarball with `tpu-vm scp`, runs
 * the runner over `tpu-vm ssh --worker=all` (every value in the remote command quoted), and fetches the
 * outputs tarball back from worker 0 with scp. Jobs on one VM run one at a time. A TPU that stops
 * answering (preempted spot VM) makes that job an infrastructure error, and the next job gets a new
 * TPU. close() releases what open() allocated; a TPU held by the CLI stays for `hillclimb tpu release`.
 * Attach-only (the tools relay's serving job) never allocates: no TPU held is an error, and a lost one
 * makes each later job an infrastructure error until it answers again.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fillCommand, type TpuVmConfig } from '../../config/index.js';
import { errorMessage, HillclimbError, type Logger } from '../../util/index.js';
import type { Backend, BackendInfo, JobResult, JobSpec } from '../backend.js';
import { jobSlug } from '../names.js';
import { clearDestinations, installOutputs, prepareDestinations } from '../outputs.js';
import {
  parseRunnerOutput,
  type RunnerSpec,
  requestedOutputs,
  runnerArgv,
  runnerNonce,
} from '../runner/protocol.js';
import { RUNNER_FILE, RUNNER_SOURCE } from '../runner/source.js';
import { describeNodeArgs, scpArgs, sshArgs } from '../tpu/commands.js';
import { type Gcloud, gcloudError } from '../tpu/gcloud.js';
import { allocateTpu, describedState, releaseTpu, runSetup, type TpuContext } from '../tpu/lifecycle.js';
import { jobDir, killScript, OUTPUTS_FILE, PGID_FILE, runScript, uploadName } from '../tpu/remote.js';
import { readRecords, removeRecord, type TpuAllocation } from '../tpu/state.js';
import { archiveTree, snapshotTree } from '../tree.js';

export interface TpuVmBackendOptions {
  config: TpuVmConfig;
  logger: Logger;
  gcloud: Gcloud;
  /** Folder of allocation records (tpuStateDir). */
  stateDir: string;
  /** Names the TPU this backend allocates. */
  runId: string;
  /** Slack on top of a job's time limit for the local ssh (connect, unpack). Default 3 min. */
  sshMarginMs?: number;
  /**
   * Use only a TPU `hillclimb tpu allocate` holds, never one of this backend's own: no TPU held is an
   * error, and a lost one is not replaced (the tools relay: advice to an agent is worth no new TPU).
   */
  attachOnly?: boolean;
}

const UPLOAD_TIMEOUT_MS = 15 * 60_000;
const FETCH_TIMEOUT_MS = 15 * 60_000;
const KILL_TIMEOUT_MS = 2 * 60_000;
/**
 * ssh connection and unpacking, on top of the job's own time limit. The runner on the VM enforces the
 * limit itself from the moment the job starts (and keeps enforcing it if the engine dies); the local
 * ssh limit is the backstop for a VM that stops answering.
 */
const SSH_MARGIN_MS = 3 * 60_000;
const RELEASE_ATTEMPTS = 3;

export class TpuVmBackend implements Backend {
  readonly name = 'tpu-vm';
  private allocation: TpuAllocation | undefined;
  /** True when this backend allocated the TPU (and so releases it). */
  private owned = false;
  /** Set when the TPU stopped answering; the next job replaces it. */
  private lost = false;
  private generation = 1;
  /** Jobs on one VM run one at a time (a TPU is held by one process). */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: TpuVmBackendOptions) {}

  private get ctx(): TpuContext {
    return {
      config: this.opts.config,
      gcloud: this.opts.gcloud,
      logger: this.opts.logger,
      stateDir: this.opts.stateDir,
    };
  }

  async open(): Promise<void> {
    if (this.allocation && !this.lost) return;
    const held = await this.findHeld();
    if (held) {
      // A TPU held by the CLI stays for `hillclimb tpu release`; one a backend of this run allocated
      // before (an engine that crashed and resumed) is ours to release.
      this.owned = held.owner === 'backend';
      this.opts.logger.info(
        this.owned
          ? `tpu: resuming with ${held.name} in ${held.zone}, allocated earlier in this run`
          : `tpu: using ${held.name} in ${held.zone}, held by \`hillclimb tpu allocate\``,
      );
      await runSetup(this.ctx, held);
      this.allocation = held;
      this.lost = false;
      return;
    }
    if (this.opts.attachOnly) {
      throw new HillclimbError(
        `no TPU held by \`hillclimb tpu allocate\` is up for ${this.opts.config.project} (${this.opts.config.accelerator_type}), and this job allocates none`,
        { hint: 'run it after the job that allocates the TPU, with the allocation records it holds' },
      );
    }
    await this.allocateOwned();
  }

  /** An ACTIVE allocation recorded by the CLI (or by this run) for the same project and accelerator. */
  private async findHeld(): Promise<TpuAllocation | undefined> {
    if (this.opts.gcloud.dryRun) return undefined;
    const c = this.opts.config;
    const candidates = readRecords(this.opts.stateDir).filter(
      (r) =>
        r.state === 'active' &&
        r.project === c.project &&
        r.acceleratorType === c.accelerator_type &&
        // A backend's own TPU of this run (an engine that crashed and resumed) is its to release: never
        // an attach-only backend's.
        (r.owner === 'cli' || (r.runId === this.opts.runId && !this.opts.attachOnly)),
    );
    for (const rec of candidates) {
      if (await this.isUp(rec)) return rec;
      this.opts.logger.warn(`tpu: recorded ${rec.name} in ${rec.zone} is not up; forgetting it`);
      if (rec.owner === 'backend') await releaseTpu(this.ctx, rec).catch(() => undefined);
      else removeRecord(this.opts.stateDir, rec.name, rec.zone);
    }
    return undefined;
  }

  private async isUp(rec: TpuAllocation): Promise<boolean> {
    const d = await this.opts.gcloud.run(describeNodeArgs(rec, rec.name), {
      readOnly: true,
      timeoutMs: 120_000,
    });
    if (d.exitCode !== 0) return false;
    try {
      return describedState(JSON.parse(d.stdout) as Record<string, unknown>) === 'READY';
    } catch {
      return false;
    }
  }

  run(job: JobSpec): Promise<JobResult> {
    const next = this.queue.then(() => this.runNow(job));
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async runNow(job: JobSpec): Promise<JobResult> {
    const started = Date.now();
    const result = (extra: Partial<JobResult>): JobResult => ({
      exitCode: null,
      durationMs: Date.now() - started,
      logFile: job.logFile,
      ...(this.allocation ? { handle: `${this.allocation.name}@${this.allocation.zone}` } : {}),
      // Job code runs on the cluster's machines, never beside the harness.
      isolation: 'remote',
      ...extra,
    });
    // Fails fast on a placeholder the job has no destination for.
    fillCommand(job.command, { python: 'python', root: '.', cache: '.', ...job.outputs });
    if (this.lost && this.opts.attachOnly) {
      // Asked again: one failed status check (a gcloud hiccup) must not end the held TPU's use for good.
      const alloc = this.allocation;
      if (alloc && (await this.isUp(alloc))) this.lost = false;
      else {
        return result({
          infraError: `no TPU: ${alloc ? `${alloc.name} in ${alloc.zone}` : 'the held TPU'} was lost, and this job allocates none`,
        });
      }
    }
    if (this.lost || !this.allocation) {
      try {
        if (this.lost) await this.replaceLost();
        else await this.open();
      } catch (e) {
        return result({ infraError: `no TPU: ${errorMessage(e)}` });
      }
    }
    const alloc = this.allocation!;
    const { config, gcloud } = this.opts;
    const slug = jobSlug(job.id);
    const nonce = runnerNonce(`${alloc.name}/${slug}`);
    const spec: RunnerSpec = {
      nonce,
      command: job.command,
      env: job.env ?? {},
      ...(job.cacheKey ? { cache_key: job.cacheKey } : {}),
      outputs: requestedOutputs(job.outputs),
      emit: OUTPUTS_FILE,
      timeout_s: Math.max(1, Math.ceil(job.timeoutMs / 1000)),
      pgid_file: PGID_FILE,
    };
    const extra = config.ssh_args;
    const host = alloc.name;
    mkdirSync(dirname(job.logFile), { recursive: true });
    if (!gcloud.dryRun) {
      clearDestinations(job.outputs);
      prepareDestinations(job.outputs);
    }
    const tmp = mkdtempSync(join(tmpdir(), 'hc-tpujob-'));
    try {
      const tarball = join(tmp, 'tree.tar.gz');
      try {
        const treeId = await snapshotTree(job.workdir, {
          extraFiles: { [RUNNER_FILE]: RUNNER_SOURCE },
          ...(job.include ? { include: job.include } : {}),
        });
        await archiveTree(job.workdir, treeId, 'tar.gz', tarball);
      } catch (e) {
        return result({ infraError: `could not package ${job.workdir}: ${errorMessage(e)}` });
      }
      const up = await gcloud.run(scpArgs(alloc, [tarball], `${host}:${uploadName(slug)}`, 'all', extra), {
        timeoutMs: UPLOAD_TIMEOUT_MS,
        logFile: job.logFile,
        signal: job.signal,
      });
      if (up.killedBy === 'abort') return result({ killedBy: 'abort' });
      if (up.exitCode !== 0) return this.infraFailure(result, `copying the tree to ${host}`, up);

      const script = runScript(slug, runnerArgv(config.python, spec));
      const ran = await gcloud.run(sshArgs(alloc, host, 'all', script, extra), {
        timeoutMs: job.timeoutMs + (this.opts.sshMarginMs ?? SSH_MARGIN_MS),
        idleTimeoutMs: job.idleTimeoutMs,
        signal: job.signal,
        logFile: job.logFile,
      });
      if (ran.printed) return result({ infraError: 'dry run: the commands were printed, not run' });
      if (ran.killedBy) {
        await this.stopRemote(slug);
        return result({ killedBy: ran.killedBy });
      }
      const report = parseRunnerOutput(ran.stdout, nonce);
      if (!report.finished || report.exitCode === undefined) {
        if (report.killed === 'timeout') return result({ killedBy: 'timeout' });
        return this.infraFailure(result, `running the job on ${host}`, ran);
      }
      if (report.spawnError)
        return result({ infraError: `the TPU VM could not start the command: ${report.spawnError}` });
      const exitCode = report.exitCode;
      if (report.outputsError) return result({ exitCode, infraError: `outputs: ${report.outputsError}` });

      const local = join(tmp, 'outputs.tar.gz');
      const fetched = await gcloud.run(
        scpArgs(alloc, [`${host}:${jobDir(slug)}/${OUTPUTS_FILE}`], local, 0, extra),
        { timeoutMs: FETCH_TIMEOUT_MS, logFile: job.logFile },
      );
      if (fetched.exitCode !== 0) {
        return result({
          exitCode,
          infraError: `outputs: could not fetch them from ${host}: ${gcloudError(fetched)}`,
        });
      }
      try {
        installOutputs(readFileSync(local), job.outputs);
      } catch (e) {
        return result({ exitCode, infraError: `outputs: could not unpack: ${errorMessage(e)}` });
      }
      return result({ exitCode });
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }

  /** An ssh/scp failure: if the VM is gone or not READY, mark it lost so the next job gets a new one. */
  private async infraFailure(
    result: (extra: Partial<JobResult>) => JobResult,
    what: string,
    r: Awaited<ReturnType<Gcloud['run']>>,
  ): Promise<JobResult> {
    const alloc = this.allocation!;
    const up = await this.isUp(alloc);
    if (!up) {
      this.lost = true;
      return result({
        infraError: `${what}: ${alloc.name} in ${alloc.zone} is not READY any more (preempted?): ${gcloudError(r)}`,
      });
    }
    return result({ infraError: `${what}: ${gcloudError(r)}` });
  }

  /** Kill the job's process group on every worker after a local timeout or abort. */
  private async stopRemote(slug: string): Promise<void> {
    const alloc = this.allocation!;
    const r = await this.opts.gcloud.run(
      sshArgs(alloc, alloc.name, 'all', killScript(slug), this.opts.config.ssh_args),
      {
        timeoutMs: KILL_TIMEOUT_MS,
      },
    );
    if (r.exitCode !== 0)
      this.opts.logger.warn(`tpu: could not stop job ${slug} on ${alloc.name}: ${gcloudError(r)}`);
  }

  /** Release a lost TPU we own and allocate the next generation. */
  private async replaceLost(): Promise<void> {
    const old = this.allocation;
    if (old && this.owned) {
      await releaseTpu(this.ctx, old).catch((e) =>
        this.opts.logger.warn(`tpu: could not release lost ${old.name}: ${errorMessage(e)}`),
      );
    }
    this.allocation = undefined;
    this.generation += 1;
    this.opts.logger.warn(`tpu: replacing the lost TPU (generation ${this.generation})`);
    await this.allocateOwned();
  }

  /** Create a TPU this backend owns (and so releases in close()), at the current generation. */
  private async allocateOwned(): Promise<void> {
    this.allocation = await allocateTpu(this.ctx, {
      runId: this.opts.runId,
      owner: 'backend',
      generation: this.generation,
    });
    this.owned = true;
    this.lost = false;
  }

  async close(): Promise<void> {
    await this.queue;
    const alloc = this.allocation;
    if (!alloc || !this.owned) {
      this.allocation = undefined;
      return;
    }
    let lastError: unknown;
    for (let attempt = 1; attempt <= RELEASE_ATTEMPTS; attempt++) {
      try {
        await releaseTpu(this.ctx, alloc);
        this.allocation = undefined;
        this.owned = false;
        return;
      } catch (e) {
        lastError = e;
        this.opts.logger.warn(`tpu: release attempt ${attempt} failed: ${errorMessage(e)}`);
      }
    }
    throw lastError instanceof HillclimbError
      ? lastError
      : new HillclimbError(`could not release ${alloc.name}: ${errorMessage(lastError)}`);
  }

  info(): BackendInfo {
    const a = this.allocation;
    const c = this.opts.config;
    return {
      backend: this.name,
      hasAccelerator: true,
      platform: 'tpu',
      description: a
        ? `tpu-vm ${a.acceleratorType} ${a.zone} (${a.name})`
        : `tpu-vm ${c.accelerator_type} (${c.zones.join(', ')}; not allocated)`,
      acceleratorType: a?.acceleratorType ?? c.accelerator_type,
    };
  }
}
