/**
 * The typed configuration, after validation against schemas/hillclimb.schema.json and with its defaults
 * filled in. Field names follow the YAML (snake_case) so an error's key path reads the same in both.
 */

/** An argument array; the first element is the program. */
export type CommandArgs = readonly string[];

export interface GateConfig {
  command: CommandArgs;
  timeout_minutes: number;
  idle_timeout_minutes: number;
}

export interface StaticCheck {
  pattern: string;
  reason: string;
  paths?: string[];
}

export type Direction = 'higher' | 'lower';

export interface TargetConfig {
  /** The target's key under `targets`. */
  name: string;
  description?: string;
  editable: string[];
  protected: string[];
  static_checks: StaticCheck[];
  correctness: { cpu: GateConfig; accelerator?: GateConfig };
  /**
   * The target's programs: `python -m <module> export` runs on the tree under test (the only step
   * that imports the candidate's code), `python -E -s -m <module> verify` in a tree without the
   * editable paths. Both get `args` after `--`.
   */
  programs: { module: string; args: string[]; timeout_minutes: number };
  bench: {
    metric: { path: string; direction: Direction; label?: string };
    mfu_path: string;
    /** Timed calls per round, per arm and program (at least; see min_time_ms). */
    repeats: number;
    /**
     * More calls per round for a program whose `repeats` calls take less than this, up to 10× `repeats`:
     * a round's per-call noise averages out over its calls. 0: `repeats` calls.
     */
    min_time_ms: number;
    /** Untimed calls per round, per arm and program. */
    warmup: number;
    /** Limit on one verifier session. */
    timeout_minutes: number;
  };
  profile?: { repeats: number; timeout_minutes: number };
}

export type DirtyTreePolicy = 'fail' | 'stash';
export type SyncMainPolicy = 'off' | 'once' | 'each-iteration';

export interface LoopConfig {
  target?: string;
  iterations: number;
  failure_budget: number;
  dirty_tree: DirtyTreePolicy;
  sync_main: SyncMainPolicy;
  branch_prefix: string;
  infra_retries: number;
  retry_backoff_seconds: number;
  stuck_after: number;
  log_entries_in_prompt: number;
  /** Candidates proposed per iteration (k); 1 is one proposal and one full comparison. */
  candidates: number;
}

/** How an iteration with several candidates picks the one that gets the full comparison. */
export interface SearchConfig {
  /** Rounds of the first screening session and of every later session of the race. */
  screen_rounds: number;
  /** The race's round budget: shared screens go on until the leader is separated or this many rounds. */
  screen_max_rounds: number;
  /** One screening session of the champion and every candidate, on a backend that runs one job at a time. */
  shared_screen: boolean;
  /** Absent: `measure.practical_delta`. */
  screen_bar?: number;
  slot_directives: string[];
  publish_losers: boolean;
  /** On one machine: how many of an iteration's agents run at once. */
  parallel_proposals: number;
}

export interface MeasureConfig {
  runs_per_arm: number;
  max_runs_per_arm: number;
  confidence: number;
  resamples: number;
  practical_delta: number;
  /** Absent: practical_delta (the schema has no default of its own for it). */
  regression_delta?: number;
  implausible_speedup: number;
  seed: number;
}

export interface AgentToolsConfig {
  enabled: boolean;
  max_calls: number;
  max_seconds: number;
  screen_rounds: number;
}

export type AgentKind = 'codex' | 'claude' | 'command' | 'replay';

export interface AgentConfig {
  kind: AgentKind;
  timeout_minutes: number;
  idle_timeout_minutes: number;
  /** How long a CLI may retry a model API that answers with errors before the attempt is stopped. */
  api_retry_limit_minutes: number;
  /** How long a CLI may fail to reach the model API at all before the attempt is stopped. */
  unreachable_limit_seconds: number;
  /** The harness's tools the agent may call (src/loop/steps/agent-tools.ts), and their budget per iteration. */
  tools: AgentToolsConfig;
  directives: string[];
  /** More variables passed to the agent; tokens and credentials are refused (src/agent/environment.ts). */
  pass_env: string[];
  codex: { binary: string; model?: string; reasoning_effort?: string; extra_args: string[] };
  claude: {
    binary: string;
    model?: string;
    max_turns?: number;
    /** `--allowedTools` rules; default DEFAULT_CLAUDE_ALLOWED_TOOLS in src/agent/agents/claude.ts. */
    allowed_tools?: string[];
    extra_args: string[];
  };
  /** `network`: what the command reaches in the sandbox (none, or the machine's network). */
  command?: { command: CommandArgs; network: 'none' | 'host' };
  replay: { dir: string };
}

export type BackendKind = 'local' | 'ray' | 'tpu-vm';

export interface RayConfig {
  address: string;
  entrypoint_resources?: Record<string, number>;
  runtime_env?: Record<string, unknown>;
  poll_seconds: number;
  /** Independent verifier jobs submitted at once (an iteration's screens). */
  parallel_jobs?: number;
  /** Interpreter on the worker that starts the job runner; {python} is filled with it. */
  python: string;
  /** A job PENDING longer than this is stopped and reported as an infrastructure error. */
  pending_timeout_minutes: number;
  /** Cap on the compressed outputs a job returns through its log. */
  max_output_mb: number;
  /** Environment variable holding a Ray auth token (sent as a Bearer token). */
  token_env?: string;
}

export type TpuProvisioning = 'on-demand' | 'spot' | 'queued' | 'flex-start';
export type TpuQueuedTier = 'on-demand' | 'spot' | 'reserved' | 'guaranteed';

export interface TpuVmConfig {
  project: string;
  zones: string[];
  accelerator_type: string;
  runtime_version: string;
  provisioning: TpuProvisioning;
  ttl_hours: number;
  name_prefix: string;
  ready_timeout_minutes: number;
  /** The account the VM runs as (an email, or an id in `project`); candidate code can use its token. */
  service_account: string;
  /** OAuth scopes of the VM's token. */
  scopes: string[];
  setup_command?: CommandArgs;
  /** Interpreter on the VM that starts the job runner; {python} is filled with it. */
  python: string;
  /** Capacity tier of a queued resource (provisioning: queued). */
  queued_tier: TpuQueuedTier;
  /** Passes over the zones before allocation gives up. */
  allocate_attempts: number;
  /** Pause between passes over the zones. */
  retry_backoff_seconds: number;
  /** Interval between state polls while waiting for the TPU. */
  poll_seconds: number;
  /** Extra gcloud flags for tpu-vm ssh and scp (e.g. --tunnel-through-iap). */
  ssh_args: string[];
  /** Extra gcloud flags for create (e.g. --network=NET). */
  create_args: string[];
}

export interface ComputeConfig {
  backend: BackendKind;
  ray?: RayConfig;
  tpu_vm?: TpuVmConfig;
}

export interface SandboxConfig {
  /**
   * required (default): refuse to run untrusted code where the sandbox cannot be built.
   * allow-unsandboxed: the explicit opt-out; run it unsandboxed there and mark the iteration's numbers
   * unverified (no verdict can be improved).
   */
  mode: 'required' | 'allow-unsandboxed';
  /** Extra absolute paths untrusted code may read. */
  read_paths: string[];
}

export interface ForgeConfig {
  kind: 'local' | 'github';
  base: string;
  draft: boolean;
  github?: {
    repository: string;
    api_url: string;
    token_env: string;
    /** Push URL override (GitHub Enterprise, or a local bare repository in tests). */
    git_url?: string;
    /** Login owning the sticky comment, e.g. my-app[bot]; default: the token's identity. */
    comment_author?: string;
  };
}

export interface StoreConfig {
  kind: 'local' | 'hf' | 'branch';
  /** Used when kind is branch; loadConfig fills every key's default. */
  branch?: {
    /** The data branch, default hillclimb-data. */
    name: string;
    /** A remote of the repository (default origin), or a URL or path. */
    remote: string;
    /** Variable holding the token for https remotes, default GITHUB_TOKEN. */
    token_env: string;
  };
  hf?: {
    repo: string;
    endpoint: string;
    token_env: string;
    /** Visibility when hillclimb creates the dataset repository (default true). */
    private: boolean;
  };
}

export interface PathsConfig {
  state_dir: string;
  log_file: string;
  prompt: string;
  directives_dir: string;
  /** What `hillclimb setup` installs into .venv (a requirements file, or pyproject.toml[extras]); `dev_requirements` as well with --dev. */
  requirements: string;
  dev_requirements: string;
}

export interface HillclimbConfig {
  version: 1;
  /** Absolute path of the file this came from. */
  file: string;
  /** The folder holding the file; every relative path in the config is relative to it. */
  root: string;
  targets: Record<string, TargetConfig>;
  loop: LoopConfig;
  measure: MeasureConfig;
  search: SearchConfig;
  agent: AgentConfig;
  compute: ComputeConfig;
  sandbox: SandboxConfig;
  forge: ForgeConfig;
  store: StoreConfig;
  paths: PathsConfig;
}
