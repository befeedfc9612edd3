/**
 * openLoopContext: the one place a driver (the loop, a phase, a manual measurement) builds its loop
 * context from the config and gets back what opens its backends and what releases everything again.
 * Backends come through compute/factory.ts: no driver imports a backend implementation.
 */
import { buildAgent, TOOL_AGENT_KINDS } from '../agent/index.js';
import { type Backend, buildBackend, buildCpuBackend, type RelayStore } from '../compute/index.js';
import type { HillclimbConfig, TargetConfig } from '../config/index.js';
import type { StepName } from '../evidence/index.js';
import { buildForge } from '../forge/index.js';
import { packageVersion } from '../project/index.js';
import { buildStore, type Store } from '../store/index.js';
import { errorMessage, type Logger } from '../util/index.js';
import { Git } from '../workspace/index.js';
import {
  configHash,
  currentJobId,
  defaultHost,
  type LoopContext,
  NO_AGENT,
  realSleep,
  runDirOf,
  stateDirOf,
} from './context.js';
import { relayBackend } from './relay/index.js';

/** Who opens a loop context: the run it belongs to, the steps it will run, and where it reports. */
export interface LoopRole {
  target: TargetConfig;
  runId: string;
  /**
   * The steps this process runs. They decide what is built and opened: the configured agent only when
   * they include propose (else NO_AGENT), and only the backends they use (a job that runs the CPU gate
   * never allocates a TPU).
   */
  steps: readonly StepName[];
  /** When the run started; default now (a new run, or the first phase). */
  runStartedAt?: string;
  totalIterations: number;
  /** See LoopContext.prepareMayProfile. */
  prepareMayProfile: boolean;
  logger: Logger;
  /** Progress lines; default none (the loop sets one per iteration). */
  progress?: (line: string) => void;
  signal?: AbortSignal;
  sleep?: (ms: number) => Promise<void>;
  dryRun?: boolean;
  /** The repository when the driver opened it already (the loop stashes the user's changes first). */
  git?: Git;
  /** The store when the driver built it already (a phase pulls the history first). */
  store?: Store;
  /** Names this job in attestations; default currentJobId() (an action passes the toolkit's reading). */
  jobId?: string;
  /** The agent's tools time on the measuring machine through this relay (loop/relay), not on this one. */
  toolsRelay?: ToolsRelay;
  /** Use only a machine another job holds, allocating none (BuildBackendOptions.attachOnly). */
  attachOnly?: boolean;
}

/** A propose job's place in the run's tools relay. */
export interface ToolsRelay {
  store: RelayStore;
  /** This job's name there: main, or c<slot>. */
  client: string;
}

/** An open loop context: open the backends its steps use, then always close it. */
export interface OpenLoopContext {
  ctx: LoopContext;
  /**
   * Open the backends the role's steps use. Separate from building, so a phase checks the bundle it was
   * handed before any accelerator is allocated.
   */
  openBackends(): Promise<void>;
  /**
   * Release what was opened — the backends (also one whose open failed half-way: a TPU may be allocated)
   * and the repository's worktrees. Never throws: a problem is logged, and the rest is still released.
   */
  close(): Promise<void>;
}

const ACCELERATOR_STEPS: readonly StepName[] = ['accelerator-gate', 'measure', 'profile'];

/**
 * Build the loop context for `role` from the config: backends picked by config (a CPU backend beside
 * the compute one for the CPU gate), the agent only for propose, forge, store and the repository.
 */
export async function openLoopContext(config: HillclimbConfig, role: LoopRole): Promise<OpenLoopContext> {
  const { logger } = role;
  const root = config.root;
  const stateDir = stateDirOf(config);
  const backend = buildBackend(config, {
    root,
    logger,
    runId: role.runId,
    dryRun: role.dryRun,
    ...(role.attachOnly ? { attachOnly: true } : {}),
  });
  const cpuBackend = buildCpuBackend(config, { root, logger }, backend);
  const ctx: LoopContext = {
    config,
    target: role.target,
    root,
    stateDir,
    runId: role.runId,
    runDir: runDirOf(stateDir, role.runId),
    runStartedAt: role.runStartedAt ?? new Date().toISOString(),
    totalIterations: role.totalIterations,
    git: role.git ?? (await Git.create(root, { logger })),
    backend,
    cpuBackend,
    toolsBackend: role.steps.some((s) => ACCELERATOR_STEPS.includes(s))
      ? backend
      : role.toolsRelay
        ? // Built, never opened here: this job holds no credentials, the serving job opens the machine.
          relayBackend({ local: cpuBackend, ...role.toolsRelay, runId: role.runId, serving: backend.info() })
        : cpuBackend,
    agent: role.steps.includes('propose')
      ? buildAgent(config, { root, logger, target: role.target.name })
      : NO_AGENT,
    forge: buildForge(config, { root, logger }),
    store: role.store ?? buildStore(config, { root, logger }),
    logger,
    progress: role.progress ?? (() => undefined),
    signal: role.signal ?? new AbortController().signal,
    configHash: configHash(config),
    hillclimbVersion: packageVersion(),
    host: defaultHost(),
    sleep: role.sleep ?? realSleep,
    prepareMayProfile: role.prepareMayProfile,
    job: role.jobId ?? currentJobId(),
    proposes: role.steps.includes('propose'),
    dryRun: Boolean(role.dryRun),
  };

  const uses = (names: readonly StepName[]) => role.steps.some((s) => names.includes(s));
  // The agent's tools run the CPU gate's export and verifier (and time on the tools' backend).
  const toolsRun =
    uses(['propose']) && config.agent.tools.enabled && TOOL_AGENT_KINDS.includes(config.agent.kind);
  const needed = [
    ...(uses(ACCELERATOR_STEPS) ? [backend] : []),
    ...((uses(['cpu-gate']) || toolsRun) && !(uses(ACCELERATOR_STEPS) && cpuBackend === backend)
      ? [cpuBackend]
      : []),
  ];
  let opened: Backend[] = [];
  return {
    ctx,
    async openBackends() {
      opened = needed;
      for (const b of opened) await b.open();
    },
    async close() {
      for (const b of opened) {
        await b
          .close()
          .catch((e: unknown) => logger.warn(`cleanup: release ${b.name} compute: ${errorMessage(e)}`));
      }
      opened = [];
      await ctx.git
        .close()
        .catch((e: unknown) => logger.warn(`cleanup: remove worktrees: ${errorMessage(e)}`));
    },
  };
}
