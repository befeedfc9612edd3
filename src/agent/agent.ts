/**
 * Who proposes changes: the `Agent` interface. Adapters in ./agents/ (`codex`, `claude`, `command`,
 * `replay`), chosen by `agent.kind` through ./factory.ts.
 *
 * An agent gets a prompt and a working tree, may edit files and must commit its one change. It writes a
 * small structured result (hypothesis, change summary, next idea) to `resultFile`. The harness never
 * reads a number from the agent: the result is prose for the PR and the log.
 */
import type { Isolation } from '../evidence/index.js';
import { ExitCode, HillclimbError } from '../util/index.js';
import type { AgentTools } from './tools.js';

export interface AgentRequest {
  iteration: number;
  /** Which of the iteration's candidates this run proposes, when it proposes several (loop.candidates > 1). */
  slot?: { index: number; of: number };
  /** The working tree the agent edits and commits in. */
  workdir: string;
  /** The rendered prompt (template + directives + harness-computed context). */
  prompt: string;
  /** Where the agent must write its structured result (JSON, see AgentResult). */
  resultFile: string;
  /** Local file receiving the agent's transcript / output. */
  logFile: string;
  timeoutMs: number;
  idleTimeoutMs: number;
  /**
   * The only environment the agent process gets (plus PATH, HOME, LANG/LC_*, TMPDIR, the adapter's model
   * API key and `agent.pass_env`; see environment.ts). Never write tokens or cloud credentials: the agent
   * must not be able to push, publish or spend (adapters drop such names and warn).
   */
  env: Record<string, string>;
  /**
   * The project's Python, by absolute path: the prompt's test command names it, so it runs in a login
   * shell that resets PATH; an adapter whose CLI allows commands by prefix (Claude Code) allows it.
   */
  interpreter?: string;
  signal?: AbortSignal;
  /**
   * How the agent process is isolated: in the sandbox with these paths (plus its binary, Node.js and its
   * own config folder), or unsandboxed with the reason. Absent: unsandboxed (a harness-internal agent, or a test).
   */
  isolation?: AgentIsolation;
  /**
   * The harness's tools for this run (tools.ts), which the adapter serves over MCP on its key proxy and
   * names in the CLI's configuration. Absent: no tools, and the agent runs exactly as without them.
   */
  tools?: AgentTools;
}

export type AgentIsolation =
  | {
      sandbox: {
        /** Visible read-only (the repository's objects its clone borrows, the Python environment). */
        readOnly: readonly string[];
        /** Visible and writable (its repository, its output folder, its HOME). */
        writable: readonly string[];
        /** HOME inside the sandbox: an empty folder of its own. */
        home: string;
      };
    }
  | { sandbox: false; why: string };

/** What the agent says about its change. Prose only; validated for shape and size. */
export interface AgentResult {
  hypothesis: string;
  summary: string;
  next_idea: string;
}

export type AgentStatus =
  /** The agent process finished normally (it may or may not have committed). */
  | 'finished'
  /** It exited non-zero. */
  | 'failed'
  /** It was killed for running too long or printing nothing for too long. */
  | 'timeout';

export interface AgentOutcome {
  status: AgentStatus;
  exitCode: number | null;
  /**
   * Set when the failure is the infrastructure's (binary missing, model API unreachable or rate-limited):
   * the loop may retry with backoff. Never set for a failure of the agent's own making.
   */
  infraError?: string;
  /** The validated result, when the agent wrote a valid one. */
  result?: AgentResult;
  /** Why the result file was rejected (missing, not JSON, wrong fields, too long). */
  resultProblem?: string;
  logFile: string;
  durationMs: number;
  /** How the agent process was isolated; absent when no process ran (or a harness-internal agent). */
  isolation?: Isolation;
}

export interface Agent {
  readonly name: string;
  /**
   * Run the agent once. Resolves with the outcome whatever the agent did (a failure of the agent's own
   * making, or an infrastructure failure the loop may retry). Rejects with AgentSetupError when the
   * model API refused the credentials: no retry can fix that, so the run stops and says what to set.
   */
  run(request: AgentRequest): Promise<AgentOutcome>;
}

/**
 * The model API refused the agent's credentials (401/403): a setup error. Exit code 2 (bad input), so
 * the loop does not retry it as infrastructure; the run stops with this message and hint.
 */
export class AgentSetupError extends HillclimbError {
  override name = 'AgentSetupError';

  constructor(
    readonly agent: string,
    problem: string,
    opts: { hint: string; logFile: string },
  ) {
    super(`agent ${agent}: ${problem}`, {
      hint: `${opts.hint} (the agent log is ${opts.logFile})`,
      exitCode: ExitCode.badInput,
    });
  }
}
