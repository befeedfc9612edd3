/**
 * The evidence record of one iteration (`evidence.json` in its bundle). Written step by step by the
 * loop, read by reports, history and resume. Every number in it was computed by the harness from raw
 * artifacts (JUnit XML, metrics JSON, traces); the agent's words appear only in `agent.result`, as prose.
 */

import type { Comparison, Interval } from '../stats/index.js';
import type { ProfileAgreement, TraceDiff, TraceSummary } from '../trace/index.js';
import type { JUnitTotals } from './junit.js';
import type { KernelShare, LevelsEvidence, RunLevels } from './levels.js';
import type { Verdict } from './verdicts.js';

export const EVIDENCE_SCHEMA = 'hillclimb.evidence/v1';

/** The steps of an iteration, in order. Cheap gates first; record and publish always run. */
export const STEPS = [
  'prepare',
  'propose',
  'guard',
  'cpu-gate',
  'accelerator-gate',
  'measure',
  'profile',
  'decide',
  'record',
  'publish',
] as const;

export type StepName = (typeof STEPS)[number];

/**
 * How untrusted code (the agent's, the candidate's) was kept from the harness where it ran: `sandbox`
 * (this machine, in the namespace sandbox), `remote` (another machine: a TPU VM, a Ray worker), `none`
 * (this machine, unsandboxed: nothing it could reach can be trusted).
 */
export type Isolation = 'sandbox' | 'remote' | 'none';

/** Steps that run untrusted code. */
export type UntrustedStep = 'propose' | 'cpu-gate' | 'accelerator-gate' | 'measure' | 'profile';

export interface IsolationRecord {
  /** The weakest isolation of the step's processes. */
  mode: Isolation;
  /** Which job (process) ran them: CI run/attempt/job, or host/pid locally. */
  job: string;
}

export interface StepRecord {
  status: 'done' | 'skipped' | 'failed';
  startedAt: string;
  finishedAt: string;
  /** Why it was skipped or what failed, in one line. */
  note?: string;
}

/** One attempt of a step that failed for infrastructure reasons (the loop retried it, or gave up). */
export interface FailedAttempt {
  attempt: number;
  at: string;
  /** The failure, in one line. */
  message: string;
}

export interface AgentEvidence {
  kind: string;
  status: 'finished' | 'failed' | 'timeout' | 'not-run';
  exitCode: number | null;
  durationMs: number;
  /** Attempts made, this one included (earlier ones failed for infrastructure reasons). */
  attempts: number;
  infraError?: string;
  /** The agent's own words (prose only; never parsed for numbers). */
  result?: { hypothesis: string; summary: string; next_idea: string };
  resultProblem?: string;
  /** This attempt's log; each attempt keeps its own output folder in the bundle (`agent/attempt-N/`). */
  logFile: string;
  promptFile: string;
  /** The attempts before this one: how each ended. */
  earlier?: Array<{
    attempt: number;
    status: AgentEvidence['status'];
    exitCode: number | null;
    durationMs: number;
    infraError?: string;
    logFile: string;
  }>;
}

/** One call of an agent's tool (src/loop/steps/agent-tools.ts), as the harness answered it. */
export interface ToolCallEvidence {
  tool: string;
  /** The git tree of the agent's working tree that the call ran on (a snapshot the harness took). */
  tree?: string;
  /** Whether the answer was a failure (the tree failed the check, a budget was spent, bad arguments). */
  isError: boolean;
  /** The answer's text, cut at ANSWER_CHARS. */
  answer: string;
  /** Wall time the call took, queue excluded. */
  costMs: number;
  at: string;
}

export interface AgentToolsEvidence {
  /** `agent.tools` at the time: calls and machine seconds per iteration. */
  budget: { calls: number; seconds: number };
  /** Every call the budget admitted, in order. */
  calls: ToolCallEvidence[];
  /** Calls answered without running (a budget spent, busy, unknown tool): a count and a few examples. */
  refused: { count: number; sample: string[] };
}

export interface GuardEvidence {
  allowed: boolean;
  changedPaths: string[];
  /**
   * The change's fingerprint (workspace/change-fingerprint.ts): its added and removed lines, whitespace
   * ignored. The novelty check refuses a candidate whose fingerprint an earlier iteration had on the
   * same champion.
   */
  change?: string;
  /**
   * The novelty check refused the change (then `allowed` is false): what it repeats, e.g. `iteration 3
   * of run 20261121-2340-ab12` or `candidate 1 of this iteration`.
   */
  repeatOf?: string;
  protectedTouched: string[];
  outsideEditable: string[];
  /** Static-scan findings over the added lines; `block` findings make the iteration invalid. */
  findings: Array<{
    file: string;
    line: number | null;
    rule: string;
    reason: string;
    severity: 'block' | 'warn';
    excerpt: string;
  }>;
}

export interface GateEvidence {
  status: 'passed' | 'failed' | 'error' | 'skipped';
  /** One line: why it failed or was skipped. */
  reason?: string;
  /** The test suite's exit code (the candidate's process: shown, never enough to pass). */
  exitCode: number | null;
  durationMs: number;
  /** The suite's JUnit counts: shown; a failure counts against the candidate, a pass decides nothing. */
  junit?: JUnitTotals & { failing: string[] };
  junitFile?: string;
  logFile?: string;
  /** The export of the candidate's programs for this gate's platform. */
  export?: ExportEvidence;
  /** The verifier's verdict over the matrix: the only way this gate passes. */
  verifier?: GateVerification;
  /** Whether the suite's process built the programs the export wrote (hillclimb_bench's witness). */
  witness?: WitnessEvidence;
}

/**
 * The witness of a gate: the programs the test suite's own process built from the same request file,
 * by hash, against the programs the verifier read. `matched`: the same bytes; `differs`: the suite ran
 * another program than the one that would be timed (the gate fails); `missing`: a pytest suite whose
 * report carries no witness (the gate fails); `not-pytest`: a suite hillclimb cannot ask (recorded).
 */
export interface WitnessEvidence {
  status: 'matched' | 'differs' | 'missing' | 'not-pytest';
  /** Keys whose hashes differ, or the suite could not build (at most 20). */
  differing?: string[];
}

/** One export of an arm's programs (the only process that ran its code), as the harness saw it. */
export interface ExportEvidence {
  status: 'passed' | 'failed';
  reason?: string;
  platform: string;
  /** Bundle folder holding the export's files (manifest and programs). */
  dir: string;
  logFile: string;
  durationMs: number;
}

/** What the verifier found over a gate's matrix (the candidate's exported programs). */
export interface GateVerification {
  passed: boolean;
  total: number;
  failed: number;
  /** `key: error` of the failing programs (at most 20). */
  failing: string[];
  /** sha256 of every program the verifier read, keyed measurement@case. */
  programs: Record<string, string>;
  platform: string;
  /** The draw of this run's matrix shapes. */
  draw: number;
  sessionFile: string;
  logFile: string;
  durationMs: number;
}

/** One verifier session of a measurement: both arms, call by call, in one process. */
export interface SessionRecord {
  /** 1-based. */
  index: number;
  rounds: number;
  durationMs: number;
  file: string;
  logFile: string;
  /** How busy this machine was during the session (the local backend only: compute/machine-load.ts). */
  machine?: MachineLoad;
}

/** The machine's load over a verifier session that ran on it. */
export interface MachineLoad {
  /** Mean 1-minute load average at the session's start and end. */
  load: number;
  cpus: number;
  loadPerCore: number;
  /** Share of CPU time the hypervisor took (steal); null where the kernel does not say. */
  stealShare: number | null;
}

export interface MeasuredRun {
  arm: 'A' | 'B';
  /** 1-based index within the arm. */
  index: number;
  /** The metric value this run reported (its per-run statistic, e.g. median ms); null when it failed. */
  value: number | null;
  /** The same statistic on the wall clock, when the metric was timed on another (CPU time). */
  wall?: number;
  /** MFU (fraction) reported by the same run; null when unknown (CPU). */
  mfu: number | null;
  exitCode: number | null;
  /** Its timed calls on the wall clock (metrics.ts timedWallMs): this run's own time, not its session's. */
  durationMs: number;
  metricsFile: string;
  logFile: string;
  /** Why the run produced no value. */
  problem?: string;
  /** The run's kernel and model-step numbers (levels.ts); absent when it failed. */
  levels?: RunLevels;
  /** The verifier session (1-based) this run is a round of; absent in bundles of older versions. */
  session?: number;
}

export interface MeasurementEvidence {
  metric: { path: string; direction: 'higher' | 'lower'; label: string; unit: string };
  /** Runs in the order they ran (interleaved, random first arm). */
  runs: MeasuredRun[];
  /**
   * Runs kept as evidence but not used: rounds a verifier session measured after the look that stopped
   * (each says so in `problem`); in bundles of older versions, champion runs that failed and were re-run.
   */
  discarded?: MeasuredRun[];
  firstArm: 'A' | 'B';
  comparison?: Comparison;
  /** Median MFU per arm, when the device has a peak entry. */
  mfu: { a: number | null; b: number | null };
  /** Where the noise floor came from: this run's A/A pool of champion runs. */
  noise: { cv: number | null; champion_runs: number };
  /** Sequential-stopping looks: how many runs per arm at each look and the decision. */
  looks: Array<{ n: number; action: 'stop' | 'more'; reason: string }>;
  /**
   * The clock the metric was timed on, as the metrics name it; and, when that is not the wall clock,
   * the wall clock's name and what it says of the same calls (the arms' ratio of medians, as `ratio`).
   */
  clock?: { name: string; wall?: { name: string; ratio: number | null } };
  /**
   * The busiest verifier session's machine load, when the sessions ran on this machine (the local
   * backend): a busy machine is named in the report beside the clock that decided.
   */
  machine?: MachineLoad;
  /** Device and library versions from the candidate's metrics files. */
  device?: { backend: string; kind: string; count: number; interpret: boolean };
  versions?: Record<string, string>;
  preset?: string;
  impl?: string;
  /** Kernel and model-step numbers of both arms with intervals, the peak and the kernels' share. */
  levels?: LevelsEvidence;
  /** The programs timed: platform and each arm's sha256 per program, as the verifier hashed them. */
  programs?: { platform: string; A: Record<string, string>; B: Record<string, string> };
  /** The verifier sessions, in order (each times both arms call by call). */
  sessions?: SessionRecord[];
}

export interface ProfileEvidence {
  status: 'done' | 'failed' | 'skipped';
  reason?: string;
  candidateTrace?: string;
  championTrace?: string;
  /** The champion's trace came from the cache (same commit, config and device). */
  championCached?: boolean;
  summary?: TraceSummary;
  championSummary?: TraceSummary;
  diff?: TraceDiff;
  /** Whether the traced step times agree with the measured medians (trace/agreement.ts). */
  agreement?: ProfileAgreement;
  /** The GDN kernels' share of the training step, from the traces when they can say (levels.ts). */
  kernelShare?: KernelShare;
}

export interface PublishEvidence {
  branch?: string;
  prNumber?: number;
  prUrl?: string;
  prOperation?: string;
  commentId?: number;
  commentOperation?: string;
  /** Store URLs of the bundle and its trace. */
  bundleUrl?: string;
  traceUrl?: string;
  perfettoUrl?: string;
  warnings: string[];
}

/**
 * One candidate's screen: paired rounds of champion (a) and candidate (b), from one verifier session or,
 * when the race (src/search/race.ts) gave the contenders more rounds, from several, concatenated in
 * order. They rank the candidates; the winner's verdict comes from fresh rounds only.
 */
export interface ScreenEvidence {
  /** Rounds timed: the length of a and b. */
  rounds: number;
  a: number[];
  b: number[];
  /**
   * Geometric mean of the per-round improvement ratios (> 1 better); null when a value was unusable.
   * (Records written before the race hold the median.)
   */
  estimate: number | null;
  /**
   * The paired t interval of that estimate at the race's per-look confidence (`search.race`); null
   * under 2 rounds; absent in records written before the race.
   */
  interval?: Interval | null;
  /**
   * How the race dropped it by an interval: wholly below the bar, or behind the leader of that look
   * (its slot). Absent when no interval dropped it, and in records written before the race.
   */
  droppedBy?: { kind: 'below-bar' } | { kind: 'behind'; leader: number };
  survived: boolean;
  reason: string;
  /** The first session's document and its log, relative to the bundle. */
  sessionFile: string;
  logFile: string;
  /**
   * Every session whose rounds are in a and b, in order (the first is sessionFile); absent in records
   * written before the race, which had one.
   */
  sessions?: ScreenSession[];
  /** When the session's job was started, and how long it took (screens may run at once: parallelJobs). */
  startedAt: string;
  durationMs: number;
  /**
   * The slots screened in the same session (the champion and every candidate timed call by call, one
   * overhead for all), this one included; absent when the candidate had a session of its own.
   */
  sharedWith?: number[];
  /**
   * Why the race ended before its budget for good (a contender a later session found invalid): the
   * rounds it ended on and the reason, kept so that a resumed search does not race on.
   */
  raceCutShort?: { rounds: number; reason: string };
}

/** One screening session of a candidate's screen: its files, rounds and time. */
export interface ScreenSession {
  sessionFile: string;
  logFile: string;
  rounds: number;
  startedAt: string;
  durationMs: number;
  /** A later session of the race: the slots it timed (absent for the first, and in older records). */
  sharedWith?: number[];
}

/** One candidate of an iteration's search, as the winner's comment and every candidate's record show it. */
export interface SearchCandidateRow {
  slot: number;
  subject: string | null;
  /** How far it got: the step that stopped it, `screen`, or `measure` (the full comparison). */
  stage: StepName | 'screen';
  verdict: Verdict | null;
  /** Its screening estimate (null when it was not screened or a value was unusable). */
  estimate: number | null;
  /** Its screen's interval and rounds (ScreenEvidence); absent in records written before the race. */
  interval?: Interval | null;
  rounds?: number;
  /** How an interval dropped it from the screen (ScreenEvidence.droppedBy's kind); absent when none did. */
  dropped?: 'below-bar' | 'behind';
  reason: string;
}

/** How a screen's race ended (src/search/race.ts RaceEnding, restated: evidence ranks below search). */
export type RaceEnding = 'separated' | 'budget' | 'below-bar' | 'alone';

export interface SearchEvidence {
  /** `winner`: the candidate whose full comparison decides the iteration; `loser`: every other one. */
  role: 'winner' | 'loser';
  /** The slot of the winner, or null when no candidate survived its gates and the screen. */
  winner: number | null;
  /**
   * The slots measured in full, in order: the best survivor of the screen, then the next best when one
   * failed for a reason that says nothing about its effect (invalid, error, no-op, needs-human); the
   * winner is the last. Absent in records written before the fallback existed.
   */
  measured?: number[];
  /** 1 + search.screen_bar: the screening estimate a candidate needed. */
  threshold: number;
  /** search.screen_rounds: the rounds of each screening session. */
  screenRounds: number;
  /**
   * How the screen's race ended (src/search/race.ts): `separated` (every other candidate dropped by an
   * interval), `budget` (the leader chosen on its estimate after `maxRounds`), `below-bar` (no
   * contender's estimate at the bar at a look), `alone` (one candidate screened); the per-look
   * confidence of its intervals. Absent in a dry run, when nothing was screened,
   * and in records written before the race.
   */
  race?: {
    ending: RaceEnding;
    confidence: number;
    maxRounds: number;
    /** Why the race stopped before its budget (a session that failed or could not time every contender). */
    cutShort?: string;
  };
  candidates: SearchCandidateRow[];
}

export interface IterationEvidence {
  schema: typeof EVIDENCE_SCHEMA;
  runId: string;
  /** When the run started (orders sticky-comment writes). */
  runStartedAt: string;
  iteration: number;
  totalIterations: number;
  target: string;
  startedAt: string;
  finishedAt?: string;
  /** A dry run: its steps printed their commands instead of running them; the verdict means nothing. */
  dryRun?: boolean;
  /** Set once, by the first step that decides; `decide` sets it for measured candidates. */
  verdict?: Verdict;
  verdictReasons: string[];
  /** The step that ended the evaluation early (guard, a gate, measure), if any. */
  stoppedAt?: StepName;
  /**
   * Which of the iteration's candidates this is, when it proposed several (loop.candidates > 1): each
   * candidate has a record of its own, and the names of its branch, worktrees and bundle carry `index`.
   */
  slot?: { index: number; of: number };
  /** A candidate's screening session (slots only): it ranked the candidates and is never evidence. */
  screen?: ScreenEvidence;
  /** What the iteration's search found, on every candidate's record (slots only). */
  search?: SearchEvidence;
  /** The champion this iteration started from. */
  base: { commit: string; iteration?: number; branch?: string };
  candidate?: {
    branch: string;
    /** The agent's last commit (what was tested and measured). */
    commit: string;
    commits: string[];
    subject: string;
    changedPaths: string[];
    patchFile: string;
    /** The harness's log-entry commit on top of the candidate, when made. */
    logCommit?: string;
    /** A person's change: the commit (a PR's merge commit) the candidate was made from. */
    from?: string;
  };
  agent?: AgentEvidence;
  /**
   * The tools the agent called while it worked (check, screen, profile, ledger): what it asked, of which
   * tree, what it was told and what it cost. Advisory: never a gate's or a measurement's evidence.
   */
  tools?: AgentToolsEvidence;
  guard?: GuardEvidence;
  gates: { cpu?: GateEvidence; accelerator?: GateEvidence };
  /** The draw of the correctness matrix's shapes for this iteration (made by the harness, per run). */
  draw?: number;
  /** Per platform: the draw and the JAX versions of the request file every export of it was given. */
  requests?: Partial<Record<string, { draw: number; versions: Record<string, string> }>>;
  /**
   * Per platform: where the champion's timed programs came from — `kept` or `stored` (the ones it won
   * with), `exported-checked` (exported again, the hashes it won with), `exported-unverified` (exported
   * again under other JAX versions than it won with: no improvement over it without a person),
   * `exported` (exported again: a champion with no record of having won).
   */
  championPrograms?: Partial<
    Record<string, 'kept' | 'stored' | 'exported-checked' | 'exported-unverified' | 'exported'>
  >;
  measurement?: MeasurementEvidence;
  profile?: ProfileEvidence;
  publish?: PublishEvidence;
  /** How each step that ran untrusted code isolated it (see isolation.ts for what that allows). */
  isolation?: Partial<Record<UntrustedStep, IsolationRecord>>;
  provenance: {
    hillclimbVersion: string;
    /** Hash of the protected paths at the base commit: a harness change re-baselines. */
    harnessHash?: string;
    configHash: string;
    backend?: { backend: string; description: string; hasAccelerator: boolean; acceleratorType?: string };
    host: string;
  };
  steps: Partial<Record<StepName, StepRecord>>;
  /**
   * Failed attempts per step, in order, saved as they happen: a resumed run continues counting from
   * them, so `loop.infra_retries` bounds the attempts of a step across interruptions.
   */
  failedAttempts?: Partial<Record<StepName | 'screen', FailedAttempt[]>>;
}
