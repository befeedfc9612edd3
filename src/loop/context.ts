/**
 * What every step of an iteration gets: the configuration, the chosen target, the backends picked once
 * by config (compute, agent, forge, store), the repository, and where the run keeps its files — and
 * `openLoopContext`, the one place a driver (loop, phase, commits) builds it and releases it again.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import type { Agent } from '../agent/agent.js';
import { buildAgent } from '../agent/factory.js';
import type { Backend } from '../compute/backend.js';
import { buildBackend, buildCpuBackend } from '../compute/factory.js';
import type { HillclimbConfig, TargetConfig } from '../config/types.js';
import { packageVersion } from '../env/root.js';
import type { StepName } from '../evidence/iteration.js';
import { buildForge } from '../forge/factory.js';
import type { Forge } from '../forge/forge.js';
import { buildStore } from '../store/factory.js';
import type { Store } from '../store/store.js';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { Git } from '../workspace/git.js';

export interface LoopContext {
  config: HillclimbConfig;
  target: TargetConfig;
  /** The repository the loop works in (holds hillclimb.yml). */
  root: string;
  /** Absolute state directory (`paths.state_dir`). */
  stateDir: string;
  runId: string;
  runDir: string;
  /** When the run started (ISO 8601); orders sticky-comment writes across runs. */
  runStartedAt: string;
  totalIterations: number;
  git: Git;
  /** Where measurements, the accelerator gate and the profile run. */
  backend: Backend;
  /** Where the CPU gate runs: always this machine, before any accelerator time. */
  cpuBackend: Backend;
  agent: Agent;
  forge: Forge;
  store: Store;
  logger: Logger;
  /** Progress lines for the terminal (one per step). */
  progress: (line: string) => void;
  /** Cancels the running step (SIGINT/SIGTERM). */
  signal: AbortSignal;
  /** sha256 of the config file text: recorded as provenance, checked on resume. */
  configHash: string;
  hillclimbVersion: string;
  host: string;
  /** Sleep used between infrastructure retries (tests shorten it). */
  sleep: (ms: number) => Promise<void>;
  /**
   * Whether prepare may run the champion's profile when no stored one exists. False in the agent's CI
   * job, which holds no cloud credentials: there the prompt uses the profile a measuring job stored.
   */
  prepareMayProfile: boolean;
  /**
   * A dry run: compute commands are printed, not run, and nothing leaves this machine — no branch
   * pushed, no PR, comment or stored bundle, no history row. The evidence bundle still shows what the
   * iteration would have published.
   */
  dryRun: boolean;
  /** This process's job: which machine ran which step (see evidence/isolation.ts). */
  job: string;
}

/** For runs and phases that never propose: an agent that must not be called. */
export const NO_AGENT: Agent = {
  name: 'none',
  run: () => Promise.reject(new Error('this phase runs no agent')),
};

export function configHash(config: HillclimbConfig): string {
  return createHash('sha256').update(readFileSync(config.file)).digest('hex').slice(0, 16);
}

/**
 * The state folder (`paths.state_dir`), created on first use with a `.gitignore` of its own, so git
 * ignores it whatever the repository's .gitignore says: otherwise the loop's own files (runs, history,
 * the lock) would make the tree dirty, and `dirty_tree: stash` would stash them.
 */
export function stateDirOf(config: HillclimbConfig): string {
  const dir = resolve(config.root, config.paths.state_dir);
  const ignore = join(dir, '.gitignore');
  if (!existsSync(ignore)) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(ignore, '# hillclimb state: never committed\n*\n');
  }
  return dir;
}

export function runDirOf(stateDir: string, runId: string): string {
  return join(stateDir, 'runs', runId);
}

/**
 * Names the job this process is: in GitHub Actions the run, attempt and job id (one runner), elsewhere
 * host and process. Steps record it beside how they isolated untrusted code.
 */
export function currentJobId(env: NodeJS.ProcessEnv = process.env): string {
  if (env.GITHUB_ACTIONS === 'true' && env.GITHUB_RUN_ID && env.GITHUB_JOB) {
    return `gh-${env.GITHUB_RUN_ID}-${env.GITHUB_RUN_ATTEMPT ?? '1'}-${env.GITHUB_JOB}`;
  }
  return `${hostname()}-${process.pid}`;
}

export function defaultHost(): string {
  return hostname();
}

export const realSleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

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
  const backend = buildBackend(config, { root, logger, runId: role.runId, dryRun: role.dryRun });
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
    agent: role.steps.includes('propose') ? buildAgent(config, { root, logger }) : NO_AGENT,
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
    job: currentJobId(),
    dryRun: Boolean(role.dryRun),
  };

  const uses = (names: readonly StepName[]) => role.steps.some((s) => names.includes(s));
  const needed = [
    ...(uses(ACCELERATOR_STEPS) ? [backend] : []),
    ...(uses(['cpu-gate']) && !(uses(ACCELERATOR_STEPS) && cpuBackend === backend) ? [cpuBackend] : []),
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
