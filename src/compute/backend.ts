/**
 * Where harness commands run: the `Backend` interface. Implementations live in ./backends/ and are
 * chosen by `compute.backend` in hillclimb.yml through ./factory.ts; nothing above this module knows
 * which one it got.
 *
 * A job is an argument array with placeholders ({python}, {root}, {metrics}, {junit}, {trace}). The
 * backend fills them with paths that make sense where the job runs, and makes sure every requested
 * output ends up at its local destination before `run` resolves.
 */
import type { CommandArgs } from '../config/index.js';
import type { Isolation } from '../evidence/index.js';

export interface JobOutputs {
  /** Local path where the metrics JSON the job writes ({metrics}) must end up. */
  metrics?: string;
  /** Local path where the JUnit XML ({junit}) must end up. */
  junit?: string;
  /** Local directory where the profiler trace directory ({trace}) must end up. */
  trace?: string;
  /** Local directory where the exported programs ({programs}) must end up. */
  programs?: string;
}

export interface JobSpec {
  /**
   * Stable, unique id of this job, e.g. `<run>-i003-bench-b-02`. Backends use it for idempotent
   * submission (a retried submit with the same id must not start a second job) and for names.
   * Only [A-Za-z0-9._-].
   */
  id: string;
  /** What to run, with placeholders. */
  command: CommandArgs;
  /** The working tree to run in (a local checkout of the commit under test). */
  workdir: string;
  /** Extra environment for the job. Never secrets the agent could have planted code to read. */
  env?: Record<string, string>;
  /** Kill after this long. */
  timeoutMs: number;
  /** Kill when the job prints nothing for this long. */
  idleTimeoutMs?: number;
  /** Where the outputs named by placeholders must end up locally. */
  outputs: JobOutputs;
  /** Local file receiving the job's combined output. */
  logFile: string;
  /** Cancels the job (the backend stops it where it runs). */
  signal?: AbortSignal;
  /**
   * Paths in `workdir` (relative) that travel with it to a remote machine even where the repository's
   * ignore rules would leave them out: the programs a verifier job receives.
   */
  include?: readonly string[];
  /**
   * Names the code under test (its tree hash): jobs of the same code share one {cache} folder, and no
   * job can write the cache of other code (a candidate must not poison the champion's compile cache).
   * Without it {cache} is one folder for all jobs. `VERIFIER_CACHE_KEY` names the verifier's own folder,
   * which only verifier jobs (harness code, no candidate code) get. `EPHEMERAL_CACHE_KEY`: a fresh, empty
   * folder for this job alone, removed after it (an export must find nothing an earlier job left).
   */
  cacheKey?: string;
}

export type { Isolation } from '../evidence/index.js';

/** The {cache} key of verifier jobs: a folder no job that runs candidate code is ever given. */
export const VERIFIER_CACHE_KEY = 'verifier';
/** The {cache} key of a job that gets a fresh, empty folder of its own, removed when it ends. */
export const EPHEMERAL_CACHE_KEY = 'ephemeral';

/** The names of a job's outputs, in the order backends handle them. */
export const OUTPUT_NAMES = ['metrics', 'junit', 'trace', 'programs'] as const;

export interface JobResult {
  /** The job's exit code; null when it was killed or never ran. */
  exitCode: number | null;
  /** Why the job was stopped, if the backend stopped it. */
  killedBy?: 'timeout' | 'idle-timeout' | 'abort';
  /**
   * Set when the failure is the infrastructure's (could not start, lost worker, backend API error), not the job's.
   * It wins over `exitCode`: both are set when the job ran to the end but its outputs could not be brought
   * back (over the size cap, damaged, fetch failed), so the run must not be used as evidence. A dry run
   * returns an infraError starting with "dry run".
   */
  infraError?: string;
  durationMs: number;
  logFile: string;
  /** Backend-specific id of the run (Ray submission id, TPU VM name), for logs and evidence. */
  handle?: string;
  /** How the job's code was isolated from the harness (absent when it never ran). */
  isolation?: Isolation;
}

/** What a backend runs on; recorded with every measurement as provenance. */
export interface BackendInfo {
  backend: string;
  /** True when jobs see an accelerator; the accelerator correctness gate is skipped otherwise. */
  hasAccelerator: boolean;
  /**
   * The JAX platform jobs run on: what programs are exported for (`jax.export(platforms=[...])`) and
   * verified on. `cpu` means Pallas interpret mode.
   */
  platform: 'cpu' | 'tpu';
  /** Human description, e.g. "local CPU (2 cores)", "ray http://head:8265", "tpu-vm v5p-8 us-east5-a". */
  description: string;
  /** Accelerator type when known, e.g. v5p-8. */
  acceleratorType?: string;
  /**
   * Independent timing jobs that may run at once without sharing a machine (Ray: compute.ray.parallel_jobs);
   * absent: one at a time (one machine, whose cores the jobs would share).
   */
  parallelJobs?: number;
}

export interface Backend {
  readonly name: string;
  /**
   * Acquire what jobs need (allocate the TPU, check the Ray head). Idempotent. Throws a
   * HillclimbError whose message names what failed and what to do.
   */
  open(): Promise<void>;
  /** Run one job to completion. Resolves for job failures (exit code ≠ 0); infra failures set infraError. */
  run(job: JobSpec): Promise<JobResult>;
  /** Release everything `open` acquired. Safe to call twice, and after a failed `open`. */
  close(): Promise<void>;
  info(): BackendInfo;
}
