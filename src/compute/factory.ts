/**
 * Backend factory: a map from `compute.backend` to a constructor closure (release-please style). The
 * CLI and the loop call buildBackend once and see only the Backend interface.
 */
import { resolve } from 'node:path';
import type { HillclimbConfig } from '../config/index.js';
import { ConfigError, type Logger, Registry } from '../util/index.js';
import type { Backend } from './backend.js';
import { LocalBackend } from './backends/local.js';
import { RayBackend } from './backends/ray.js';
import { TpuVmBackend } from './backends/tpu-vm.js';
import { type Gcloud, gcloudCli } from './tpu/gcloud.js';
import { defaultRunId } from './tpu/lifecycle.js';
import { tpuStateDir } from './tpu/state.js';

export interface BuildBackendOptions {
  /** Project root (holds the venv used by the local backend). */
  root: string;
  logger: Logger;
  /** Print what would run (gcloud commands, Ray submissions, local commands) instead of running it. */
  dryRun?: boolean;
  /** Names cloud resources (TPU VMs). Default: defaultRunId() (HILLCLIMB_RUN_ID, GitHub run id + attempt, or a timestamp). */
  runId?: string;
  /** gcloud to use; default the gcloud CLI on PATH (dry-run aware). */
  gcloud?: Gcloud;
  /**
   * Use only a machine another job holds (a TPU `hillclimb tpu allocate` recorded), never allocate or
   * replace one. Ray always attaches to its cluster; the local backend is this machine. A registered
   * backend that can allocate machines must honour it (the tools relay relies on it).
   */
  attachOnly?: boolean;
}

export type BackendBuilder = (config: HillclimbConfig, opts: BuildBackendOptions) => Backend;

/** Folder of the TPU allocation records for a config. */
export function tpuStateDirFor(config: HillclimbConfig): string {
  return tpuStateDir(resolve(config.root, config.paths.state_dir));
}

function missingSection(config: HillclimbConfig, key: string): ConfigError {
  return new ConfigError(
    config.file,
    key,
    `compute.backend is ${config.compute.backend}, so ${key} is required`,
  );
}

/** The backends known by name: register one for an out-of-tree extension or a test. */
export const backends = new Registry<BackendBuilder>('compute backend', [
  [
    'local',
    (config, opts) =>
      new LocalBackend({
        root: opts.root,
        logger: opts.logger,
        dryRun: opts.dryRun,
        cacheDir: resolve(config.root, config.paths.state_dir, 'cache', 'jobs'),
        sandbox: config.sandbox,
      }),
  ],
  [
    'ray',
    (config, opts) => {
      if (!config.compute.ray) throw missingSection(config, 'compute.ray');
      return new RayBackend({ config: config.compute.ray, logger: opts.logger, dryRun: opts.dryRun });
    },
  ],
  [
    'tpu-vm',
    (config, opts) => {
      if (!config.compute.tpu_vm) throw missingSection(config, 'compute.tpu_vm');
      return new TpuVmBackend({
        config: config.compute.tpu_vm,
        logger: opts.logger,
        gcloud:
          opts.gcloud ??
          gcloudCli({ dryRun: opts.dryRun, print: (line) => opts.logger.info(`dry run: ${line}`) }),
        stateDir: tpuStateDirFor(config),
        runId: opts.runId ?? defaultRunId(),
        ...(opts.attachOnly ? { attachOnly: true } : {}),
      });
    },
  ],
]);

/** Build the backend named by `compute.backend`. Throws UnknownNameError for a name with no builder. */
export function buildBackend(config: HillclimbConfig, opts: BuildBackendOptions): Backend {
  const name = config.compute.backend;
  return backends.get(name)(config, opts);
}

/**
 * Where the CPU gate runs: always this machine (Pallas in interpret mode), before any accelerator time.
 * The compute backend itself when that is `local` (one backend, one sandbox probe), else a local one.
 */
export function buildCpuBackend(
  config: HillclimbConfig,
  opts: BuildBackendOptions,
  backend?: Backend,
): Backend {
  if (backend && config.compute.backend === 'local') return backend;
  return backends.get('local')(config, opts);
}
