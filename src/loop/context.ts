/**
 * What every step of an iteration gets: the configuration, the chosen target, the backends picked once
 * by config (compute, agent, forge, store), the repository, and where the run keeps its files. Drivers
 * get one from openLoopContext (open-context.ts); this file stays light, so the paths can be read
 * without loading every backend.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import type { Agent } from '../agent/index.js';
import type { Backend } from '../compute/index.js';
import type { HillclimbConfig, TargetConfig } from '../config/index.js';
import type { Forge } from '../forge/index.js';
import type { Store } from '../store/index.js';
import type { Logger } from '../util/index.js';
import type { Git } from '../workspace/index.js';

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
  /**
   * Where the agent's tools time and profile (steps/agent-tools.ts): the measuring backend where this
   * process measures too, else this machine's CPU (a CI propose job holds no cloud credentials).
   */
  toolsBackend: Backend;
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
  /**
   * This job runs the propose step: a candidate in its bundle was made here (by the agent's propose
   * step, or by the driver that prepared a person's change), never taken over from another job's bundle.
   */
  proposes: boolean;
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
