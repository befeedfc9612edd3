/**
 * One iteration split into phases, so CI can run each in its own job with only the privileges it needs:
 *
 *   prepare            prepare                      agent job, before the agent: reads history (token)
 *   propose            prepare, propose, guard      agent job: no write token, no cloud credentials
 *   cpu-gate           cpu-gate                     runs candidate code: no secrets at all
 *   accelerator-gate   accelerator-gate             cloud credentials (candidate code runs on the TPU VM)
 *   measure            measure, profile, decide     cloud credentials
 *   publish            record, publish              write token; runs no candidate code
 *
 * Phases hand over through the iteration's evidence bundle (uploaded and downloaded as an artifact) and
 * the store (history). `all` runs the whole iteration in one process, as `hillclimb loop` does.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { RelayStore } from '../../compute/index.js';
import {
  type ConfigOverrides,
  type HillclimbConfig,
  loadConfig,
  selectTarget,
  type TargetConfig,
} from '../../config/index.js';
import { type IterationEvidence, type KeptPrograms, STEPS, type StepName } from '../../evidence/index.js';
import { buildStore, type Store } from '../../store/index.js';
import { ExitCode, errorMessage, HillclimbError, isHillclimbError, type Logger } from '../../util/index.js';
import { Git } from '../../workspace/index.js';
import { type LoopContext, runDirOf, stateDirOf } from '../context.js';
import { type OpenLoopContext, openLoopContext, type ToolsRelay } from '../open-context.js';
import { markRelayDone } from '../relay/index.js';
import {
  type Attestation,
  attestBundle,
  localAttestationFile,
  parseAttestation,
  readLocalAttestation,
  writeLocalAttestation,
} from '../state/attestation.js';
import { Bundle, BundleFiles, type IterationKey, iterationDirName } from '../state/bundle.js';
import { historyFile, readHistory } from '../state/history.js';
import {
  codeIdentity,
  fetchKeptPrograms,
  importKeptPrograms,
  installRecords,
  recordsInHistory,
} from '../steps/champion-programs.js';
import { newEvidence, runIterationSteps } from '../steps/iteration.js';
import { candidateRef } from '../steps/naming.js';
import { preflight } from './preflight.js';
import { acceptBundle, quarantineBundle } from './trust.js';

export const PHASES = [
  'prepare',
  'propose',
  'cpu-gate',
  'accelerator-gate',
  'measure',
  'publish',
  'all',
] as const;
export type Phase = (typeof PHASES)[number];

/**
 * Phases that start an iteration's bundle on this machine; every other phase takes one over (trust.ts).
 * `select` is a search's: it takes over every candidate's bundle at once (search-phases.ts).
 */
export type TakeoverPhase = Exclude<Phase, 'prepare' | 'propose' | 'all'> | 'select';

function takesOver(phase: Phase): phase is Exclude<TakeoverPhase, 'select'> {
  return phase !== 'prepare' && phase !== 'propose' && phase !== 'all';
}

export const PHASE_STEPS: Readonly<Record<Phase, readonly StepName[]>> = {
  prepare: ['prepare'],
  propose: ['prepare', 'propose', 'guard'],
  'cpu-gate': ['cpu-gate'],
  'accelerator-gate': ['accelerator-gate'],
  measure: ['measure', 'profile', 'decide'],
  publish: ['record', 'publish'],
  all: STEPS,
};

/** Where the history lives in the store, per target. */
export function historyKey(target: string): string {
  return `history/${target}.jsonl`;
}

export interface PhaseOptions {
  configFile: string;
  overrides?: ConfigOverrides;
  target?: string;
  runId: string;
  iteration: number;
  /**
   * The candidate of a search iteration (loop.candidates = k > 1) this job works on, 1 to k: bundle
   * `i003-c2`, branch `…/i003-c2`. Given by the trusted workflow (its matrix), never by a bundle. With
   * k = 1 only 1, which names nothing.
   */
  slot?: number;
  /** Iterations the run was asked for (shown in the prompt). Default: loop.iterations. */
  totalIterations?: number;
  /**
   * The champion. For propose: where to start (default: the champion after the target's last history
   * row, else HEAD). For later phases: what the bundle's champion must be (a bundle from another job is
   * checked against it; see trust.ts).
   */
  base?: string;
  /** For a person's change (pr-evidence): the commit (the PR's merge commit) the trusted workflow pinned. */
  pinnedSource?: string;
  /** When the run started (orders sticky comments); default now, for the first phase. */
  runStartedAt?: string;
  /**
   * The attestation of the job that made the bundle (its `attestation` output, JSON). Without it, or
   * when it does not match, the bundle is re-derived and its results dropped (trust.ts).
   */
  attestation?: string;
  /**
   * The digest of the champion's kept programs the setup job fetched from the store (its
   * `kept-programs` output): the artifact's copy in KEPT_HANDOVER_DIR is used only when it matches.
   */
  keptPrograms?: string;
  /**
   * The records of what the champion won with (JSON array, the setup job's `kept-records` output, read
   * from the history): a champion exported again here is checked against them.
   */
  keptRecords?: string;
  dryRun?: boolean;
  /**
   * This job holds cloud credentials (the workflow's measure-cloud): the local backend, which would run
   * candidate code here beside them, is refused before anything runs.
   */
  remoteOnly?: boolean;
  /** Names this job in attestations; default currentJobId() from the environment. */
  jobId?: string;
  /**
   * propose in a job without cloud credentials: a credentialed job of the run (the workflow's
   * tools-relay) serves the agent's tools on the measuring machine through this store (loop/relay).
   */
  toolsRelay?: RelayStore;
  /** The repository's web page for evidence links; default from the environment or forge.github. */
  repositoryUrl?: string;
  logger: Logger;
  progress?: (line: string) => void;
  signal?: AbortSignal;
}

export interface PhaseResult {
  phase: Phase | 'select';
  evidence: IterationEvidence;
  bundleDir: string;
  stateDir: string;
  /** What this job vouches for: hand it to the next job with the bundle (see attestation.ts). */
  attestation?: Attestation;
}

/** A phase's context: the loop context, the iteration's bundle, and what opens and closes it. */
export interface OpenPhase extends OpenLoopContext {
  bundle: Bundle;
  /** The bundle's evidence as it was when the phase opened (undefined: no bundle yet). */
  existing: IterationEvidence | undefined;
  /** What quarantining a bundle made elsewhere left out ("path: why"). */
  refused: string[];
  /** The candidate this job works on, in a search iteration (from the workflow, checked). */
  slot?: { index: number; of: number };
  /** The iteration, and the candidate where the job has a slot: names the bundle, refs, trust file. */
  key: IterationKey;
  /** propose's place in the run's tools relay, when a serving job times its agent's tools. */
  relay?: ToolsRelay;
}

/**
 * Everything a phase of one iteration works with, built once from the config: the loop context for the
 * phase's steps (an agent only for propose), the store's history pulled in, and the iteration's bundle —
 * one made elsewhere copied to plain files before anything in it is read (trust.ts).
 */
export async function openPhase(phase: Phase, opts: PhaseOptions): Promise<OpenPhase> {
  const { config, target, store, stateDir } = await phaseSetup(phase, opts);
  const steps = PHASE_STEPS[phase];
  const slot = trustedSlot(config.loop.candidates, opts.slot);
  const key: IterationKey = { iteration: opts.iteration, ...(slot ? { slot } : {}) };
  const bundle = new Bundle(join(runDirOf(stateDir, opts.runId), iterationDirName(key)));
  const refused = takesOver(phase) && existsSync(bundle.dir) ? quarantineBundle(bundle) : [];
  for (const r of refused) opts.logger.warn(`bundle ${bundle.dir}: left out ${r}`);
  const existing = bundle.exists() ? bundle.load() : undefined;
  // Only where an agent would propose without a candidate of its own: a search's propose jobs are each
  // given their slot by the workflow, and a person's change (a PR's `/hillclimb measure`) is one
  // candidate whatever loop.candidates says.
  if (config.loop.candidates > 1 && !slot && steps.includes('propose') && !existing?.steps.propose) {
    throw new HillclimbError(
      `loop.candidates is ${config.loop.candidates}: an agent's proposal needs the candidate it is (slot 1 to ${config.loop.candidates})`,
      {
        hint: "the workflow gives each propose job its slot (setup's matrix); on one machine, search with hillclimb loop -k N",
        exitCode: ExitCode.badInput,
      },
    );
  }
  const relay =
    opts.toolsRelay && phase === 'propose'
      ? { store: opts.toolsRelay, client: slot ? `c${slot.index}` : 'main' }
      : undefined;
  const opened = await openPhaseContext(phase, opts, { config, target, store, existing, relay });
  return {
    ...opened,
    bundle,
    existing,
    refused,
    key,
    ...(slot ? { slot } : {}),
    ...(relay ? { relay } : {}),
  };
}

/** What every phase needs before its bundle: the config, the target, preflight, the store's history. */
export async function phaseSetup(
  phase: Phase | 'select',
  opts: PhaseOptions,
): Promise<{ config: HillclimbConfig; target: TargetConfig; store: Store; stateDir: string }> {
  const config = loadConfig(opts.configFile, opts.overrides);
  const target = selectTarget(config, opts.target);
  const steps = stepsOf(phase);
  if (opts.remoteOnly && config.compute.backend === 'local') {
    throw new HillclimbError(
      'this job holds cloud credentials, and compute.backend is local: candidate code would run here, beside them',
      {
        hint: "the workflow routes a local backend to measure-local; pass the same backend to every job (the setup job's overrides carry compute.backend)",
        exitCode: ExitCode.badInput,
      },
    );
  }
  preflight(config, target, {
    agent: steps.includes('propose'),
    cpuGate: steps.includes('cpu-gate'),
    dryRun: opts.dryRun,
  });
  const stateDir = stateDirOf(config);
  const store = buildStore(config, {
    root: config.root,
    logger: opts.logger,
    ...(opts.repositoryUrl ? { repositoryUrl: opts.repositoryUrl } : {}),
  });
  await pullHistory(store, stateDir, target.name);
  if (opts.keptRecords) installRecords(stateDir, opts.logger, opts.keptRecords);
  if (opts.keptPrograms) {
    const keys = importKeptPrograms(
      stateDir,
      opts.logger,
      join(config.root, KEPT_HANDOVER_DIR),
      opts.keptPrograms,
    );
    if (keys.length > 0)
      opts.logger.info(`the champion's kept programs, handed over: ${keys.length} folder(s)`);
  }
  return { config, target, store, stateDir };
}

/** Where a job that may read the store leaves the champion's kept programs for the measuring job. */
export const KEPT_HANDOVER_DIR = '.hillclimb/kept-programs';

/**
 * The loop context for a phase's steps (an agent only where it proposes), started as the bundle says
 * (`existing`: when the run started, how many iterations it has), within what can be believed of it.
 */
export async function openPhaseContext(
  phase: Phase | 'select',
  opts: PhaseOptions,
  {
    config,
    target,
    store,
    existing,
    relay,
  }: {
    config: HillclimbConfig;
    target: TargetConfig;
    store: Store;
    existing: IterationEvidence | undefined;
    relay?: ToolsRelay | undefined;
  },
): Promise<OpenLoopContext> {
  return openLoopContext(config, {
    target,
    runId: opts.runId,
    steps: stepsOf(phase),
    runStartedAt: trustedStart(opts.runStartedAt ?? existing?.runStartedAt),
    totalIterations:
      opts.totalIterations ?? plausibleCount(existing?.totalIterations) ?? config.loop.iterations,
    // The agent's job holds no cloud credentials: it reads the champion's profile from the store.
    prepareMayProfile: phase === 'all',
    logger: opts.logger,
    progress: (line) =>
      (opts.progress ?? opts.logger.info)(`[${iterationDirName(opts.iteration)} ${target.name}] ${line}`),
    ...(opts.signal ? { signal: opts.signal } : {}),
    dryRun: Boolean(opts.dryRun),
    store,
    ...(opts.jobId ? { jobId: opts.jobId } : {}),
    ...(relay ? { toolsRelay: relay } : {}),
  });
}

/** A search's `select` phase: the accelerator gate of every candidate, the screen, the full comparison. */
export const SELECT_STEPS: readonly StepName[] = ['accelerator-gate', 'measure', 'profile', 'decide'];

function stepsOf(phase: Phase | 'select'): readonly StepName[] {
  return phase === 'select' ? SELECT_STEPS : PHASE_STEPS[phase];
}

/**
 * The slot a workflow gave a job, checked against loop.candidates: 1 to k; with k = 1 only 1, which
 * names no slot (the single candidate's bundle and branch have none).
 */
export function trustedSlot(k: number, slot: number | undefined): { index: number; of: number } | undefined {
  if (slot === undefined) return undefined;
  if (!Number.isInteger(slot) || slot < 1 || slot > k) {
    throw new HillclimbError(`slot ${slot} is not a candidate of this iteration: loop.candidates is ${k}`, {
      hint: 'give each job a slot from 1 to loop.candidates (the setup job outputs them), and the same loop.candidates to every job',
      exitCode: ExitCode.badInput,
    });
  }
  return k === 1 ? undefined : { index: slot, of: k };
}

/** Run one phase of one iteration. Idempotent: finished steps are skipped. */
export async function runPhase(phase: Phase, opts: PhaseOptions): Promise<PhaseResult> {
  const { ctx, bundle, existing, refused, slot, key, relay, openBackends, close } = await openPhase(
    phase,
    opts,
  );
  const { stateDir, target, git, store } = ctx;
  const steps = PHASE_STEPS[phase];
  const trustFile = localAttestationFile(stateDir, opts.runId, key);
  try {
    if (!existing) {
      if (takesOver(phase)) {
        throw new HillclimbError(`no evidence bundle at ${bundle.dir}`, {
          hint: `run the propose phase first, or download the iteration's bundle artifact into ${bundle.dir}`,
          exitCode: ExitCode.badInput,
        });
      }
      const fromHistory = championFromHistory(stateDir, target.name);
      const base = opts.base ?? fromHistory?.commit ?? (await git.head());
      const commit = await git.revParse(base);
      const branch = fromHistory?.commit === commit ? fromHistory.branch : undefined;
      bundle.save({
        ...newEvidence(ctx, { iteration: opts.iteration, base: { commit, ...(branch ? { branch } : {}) } }),
        ...(slot ? { slot } : {}),
      });
    }
    if (existing && takesOver(phase)) {
      // Made by another job, or by an earlier phase here: believed only as far as an attestation vouches.
      const local = readLocalAttestation(trustFile);
      const trustedBase = opts.base ?? local?.champion;
      const fromHistory = championFromHistory(stateDir, target.name);
      await acceptBundle(ctx, bundle, phase, {
        iteration: opts.iteration,
        refused,
        trustedBase,
        // The PR base of a stacked iteration: the champion's branch, from the shared history only.
        trustedBranch:
          fromHistory?.branch && trustedBase && fromHistory.commit === (await git.revParse(trustedBase))
            ? fromHistory.branch
            : undefined,
        attestations: [
          opts.attestation !== undefined
            ? parseAttestation(opts.attestation, 'input attestation')
            : undefined,
          local,
        ],
        ...(opts.pinnedSource ? { pinnedSource: fullSha(opts.pinnedSource, 'pinned source') } : {}),
        ...(slot ? { slot } : {}),
      });
    } else {
      await ensureCandidateCommits(git, bundle, ctx.runId, key);
    }

    // Only now, with the bundle accepted, open what the phase's steps use: a CPU-gate job allocates no TPU.
    await openBackends();
    const evidence = await runIterationSteps(ctx, bundle, undefined, { only: steps });
    if (steps.includes('record') && !ctx.dryRun) await pushHistory(store, stateDir, target.name);
    const attestation = attest(ctx, bundle, evidence, phase);
    writeLocalAttestation(trustFile, attestation);
    return { phase, evidence, bundleDir: bundle.dir, stateDir, attestation };
  } finally {
    // However propose ended: the serving job stops once every propose job of the iteration is done.
    if (relay) {
      await markRelayDone(relay.store, ctx.runId, relay.client).catch((e: unknown) =>
        opts.logger.warn(`tools relay: could not say this job is done: ${errorMessage(e)}`),
      );
    }
    await close();
  }
}

export interface ChampionOptions {
  configFile: string;
  overrides?: ConfigOverrides;
  target?: string;
  logger: Logger;
  /** Also fetch the champion's kept programs from the store into KEPT_HANDOVER_DIR (CI's setup job). */
  fetchKept?: boolean;
}

/**
 * The champion a new iteration starts from: the champion after the target's last history row (read
 * through the store, which CI shares between workflow runs), else HEAD. The workflow resolves it in a
 * trusted job and hands it to every phase, which checks the bundle against it.
 */
export async function resolveChampion(opts: ChampionOptions): Promise<{
  commit: string;
  branch?: string;
  source: 'history' | 'head';
  /** The digest of the kept programs fetched into KEPT_HANDOVER_DIR, when there were any. */
  kept?: string;
  /** The history's records of what the champion won with (for the measuring jobs). */
  records?: KeptPrograms[];
}> {
  const config = loadConfig(opts.configFile, opts.overrides);
  const target = selectTarget(config, opts.target);
  const stateDir = stateDirOf(config);
  const store = buildStore(config, { root: config.root, logger: opts.logger });
  await pullHistory(store, stateDir, target.name);
  const git = await Git.create(config.root, { logger: opts.logger });
  const fromHistory = championFromHistory(stateDir, target.name);
  const champion = fromHistory
    ? { ...fromHistory, source: 'history' as const }
    : { commit: await git.head(), source: 'head' as const };
  if (!opts.fetchKept) return champion;
  // What it won with: its promotion's rows say (and under which code); else its own code, where this
  // clone has the commit.
  const identity = (await git.tryRevParse(`${champion.commit}^{commit}`))
    ? await codeIdentity(git, target, config.paths.log_file, champion.commit)
    : undefined;
  const records = recordsInHistory(readHistory(stateDir, target.name), {
    champion: champion.commit,
    ...identity,
  });
  const tree = identity?.tree ?? records[records.length - 1]?.tree;
  const kept = tree
    ? await fetchKeptPrograms(store, opts.logger, {
        target: target.name,
        tree,
        dest: join(config.root, KEPT_HANDOVER_DIR),
      })
    : undefined;
  return { ...champion, ...(kept ? { kept } : {}), ...(records.length > 0 ? { records } : {}) };
}

/**
 * The kept programs of `commit`'s code (a PR's base: main, when it is a champion the loop promoted),
 * fetched from the store into KEPT_HANDOVER_DIR for a measuring job without a token (pr-evidence's
 * authorize job, the baseline's plan job), and the history's records of what that code won with.
 */
export async function fetchKeptProgramsOf(
  opts: ChampionOptions & { commit: string },
): Promise<{ kept?: string; records: KeptPrograms[] }> {
  const config = loadConfig(opts.configFile, opts.overrides);
  const target = selectTarget(config, opts.target);
  const git = await Git.create(config.root, { logger: opts.logger });
  if (!(await git.tryRevParse(`${opts.commit}^{commit}`))) {
    throw new HillclimbError(
      `commit ${opts.commit} is not in this clone: its kept programs cannot be fetched`,
      {
        hint: 'fetch it first (the job that pins the commit fetches it)',
        exitCode: ExitCode.badInput,
      },
    );
  }
  const store = buildStore(config, { root: config.root, logger: opts.logger });
  const stateDir = stateDirOf(config);
  await pullHistory(store, stateDir, target.name);
  const identity = await codeIdentity(git, target, config.paths.log_file, opts.commit);
  const records = recordsInHistory(readHistory(stateDir, target.name), identity);
  const kept = await fetchKeptPrograms(store, opts.logger, {
    target: target.name,
    tree: identity.tree,
    dest: join(config.root, KEPT_HANDOVER_DIR),
  });
  return { ...(kept ? { kept } : {}), records };
}

/**
 * What this job vouches for. Verified only when no agent ran in this phase and no untrusted code ran
 * unsandboxed in this job: anything else may have touched the bundle.
 */
export function attest(ctx: LoopContext, bundle: Bundle, ev: IterationEvidence, phase: Phase): Attestation {
  const agentHere = PHASE_STEPS[phase].includes('propose') && ev.steps.propose?.status === 'done';
  return attestBundle(bundle, ev, phase, !agentHere && !ranUnsandboxedIn(ctx.job, ev));
}

/** Whether untrusted code of this record ran unsandboxed in job `job`. */
export function ranUnsandboxedIn(job: string, ev: Pick<IterationEvidence, 'isolation'>): boolean {
  return Object.values(ev.isolation ?? {}).some((r) => r.mode === 'none' && r.job === job);
}

/** The champion after the target's last history row (with its PR branch when an iteration made it), if any. */
export function championFromHistory(
  stateDir: string,
  target: string,
): { commit: string; branch?: string } | undefined {
  const last = readHistory(stateDir, target).at(-1);
  if (!last) return undefined;
  const promoted = readHistory(stateDir, target)
    .reverse()
    .find((r) => r.verdict === 'improved' && r.championAfter === last.championAfter);
  return { commit: last.championAfter, ...(promoted?.branch ? { branch: promoted.branch } : {}) };
}

/** A bundle made in another job carries the candidate's commits; fetch them if this clone lacks them. */
async function ensureCandidateCommits(
  git: Git,
  bundle: Bundle,
  runId: string,
  key: IterationKey,
): Promise<void> {
  const ev = bundle.load();
  if (!ev.candidate) return;
  if ((await git.tryRevParse(`${ev.candidate.commit}^{commit}`)) !== undefined) return;
  const file = bundle.path(BundleFiles.gitBundle);
  if (!existsSync(file)) {
    throw new HillclimbError(`commit ${ev.candidate.commit} is missing and ${file} does not exist`, {
      exitCode: ExitCode.badInput,
    });
  }
  await git.fetchBundle(file, candidateRef(runId, key));
}

/**
 * Bring the store's history for the target into the state dir (the store is the shared copy). A store
 * that cannot be read stops the phase with its reason and hint: carrying on would silently start every
 * iteration from HEAD instead of the champion, and publish over the real history.
 */
export async function pullHistory(store: Store, stateDir: string, target: string): Promise<void> {
  if (store.name === 'local') return;
  try {
    const keys = await store.list('history/');
    if (keys.includes(historyKey(target))) await store.get(historyKey(target), historyFile(stateDir));
  } catch (e) {
    throw new HillclimbError(`could not read the history from the ${store.name} store: ${errorMessage(e)}`, {
      hint: isHillclimbError(e) && e.hint ? e.hint : `check the ${store.name} store's settings and token`,
      exitCode: ExitCode.infra,
    });
  }
}

/** Write the state dir's history back to the store. */
export async function pushHistory(store: Store, stateDir: string, target: string): Promise<void> {
  if (store.name === 'local' || !existsSync(historyFile(stateDir))) return;
  await store.put(historyKey(target), historyFile(stateDir));
}

/** When the run started, never later than now (a bundle's clock could hold a comment's stamp hostage). */
function trustedStart(value: string | undefined): string {
  const now = new Date().toISOString();
  return value && !Number.isNaN(Date.parse(value)) && value <= now ? value : now;
}

/** An iteration count a bundle claims, when it is a plausible one. */
function plausibleCount(n: unknown): number | undefined {
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 1000 ? n : undefined;
}

/** A full commit SHA given by a workflow (compared as text: the commit need not be in this clone). */
export function fullSha(value: string, what: string): string {
  if (!/^[0-9a-f]{40}$/.test(value)) {
    throw new HillclimbError(`${what} must be a full 40-character commit SHA, got "${value}"`, {
      exitCode: ExitCode.badInput,
    });
  }
  return value;
}
