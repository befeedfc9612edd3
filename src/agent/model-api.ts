/**
 * One cheap request to the agent's model API before a run spends anything (the champion's profile
 * takes minutes on a fresh checkout): a refused key or an endpoint that is not there is found in
 * seconds, with the variable to fix named. The request is each API's documented model list:
 *
 *   codex   GET {OPENAI_BASE_URL or https://api.openai.com/v1}/models   Authorization: Bearer <key>
 *   claude  GET {ANTHROPIC_BASE_URL or https://api.anthropic.com}/v1/models
 *           x-api-key: <key>, anthropic-version: 2023-06-01
 *
 * 401 and 403 stop the run (no retry fixes a key). No answer at all (refused, unresolvable, timed out),
 * after a second try, stops it too. Any other answer — 200, a proxy without the list (404), 429, 5xx —
 * means the endpoint is there and did not refuse the key: the run goes on and the agent's own retries
 * and the loop's handle the rest. Where the CLI logs in another way (codex's ChatGPT login, a Claude
 * OAuth token) there is no key to send, and nothing is checked.
 */
import { ExitCode, HillclimbError, type Logger } from '../util/index.js';
import { claudeCredentials, claudeKeyHint } from './agents/claude.js';
import { codexCredentials, codexKeyHint } from './agents/codex.js';

export interface ModelApiCheck {
  /** The request to make, or why nothing is checked. */
  url: string;
  headers: Record<string, string>;
  /** What to tell a user whose key was refused. */
  keyHint: string;
  /** The variable that points the CLI at the endpoint. */
  urlVariable: string;
}

const CHECK_TIMEOUT_MS = 10_000;
const RETRY_AFTER_MS = 2_000;

/** The check for this agent kind and environment; undefined when there is no key to check. */
export function modelApiCheck(kind: string, env: NodeJS.ProcessEnv): ModelApiCheck | undefined {
  if (kind === 'codex') {
    const { apiKey, baseUrl, url } = codexCredentials(env);
    if (!apiKey) return undefined;
    return {
      url: `${url.replace(/\/+$/, '')}/models`,
      headers: { authorization: `Bearer ${apiKey}` },
      keyHint: codexKeyHint(env, baseUrl),
      urlVariable: 'OPENAI_BASE_URL',
    };
  }
  if (kind === 'claude') {
    const { apiKey, url } = claudeCredentials(env);
    if (!apiKey) return undefined;
    return {
      url: `${url.replace(/\/+$/, '')}/v1/models`,
      headers: { 'x-api-key': apiKey, 'anthropic-version': '2023-06-01' },
      keyHint: claudeKeyHint(env),
      urlVariable: 'ANTHROPIC_BASE_URL',
    };
  }
  return undefined;
}

/**
 * @throws HillclimbError (exit 2) when the API refuses the key; (exit 1) when it cannot be reached.
 * Resolves when the endpoint answered anything else, or when there is nothing to check.
 */
export async function checkModelApi(
  kind: string,
  env: NodeJS.ProcessEnv,
  logger: Logger,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
): Promise<void> {
  const check = modelApiCheck(kind, env);
  if (!check) return;
  let failure = '';
  for (let attempt = 1; attempt <= 2; attempt++) {
    if (attempt > 1) await sleep(RETRY_AFTER_MS);
    let status: number;
    try {
      const res = await fetch(check.url, {
        headers: check.headers,
        redirect: 'manual',
        signal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
      });
      status = res.status;
      await res.body?.cancel();
    } catch (e) {
      failure = connectFailure(e);
      continue;
    }
    if (status === 401 || status === 403) {
      throw new HillclimbError(
        `agent ${kind}: the model API refused the credentials (${status} from ${check.url})`,
        {
          hint: check.keyHint,
          exitCode: ExitCode.badInput,
        },
      );
    }
    logger.debug(`agent ${kind}: the model API answered ${status} at ${check.url}`);
    return;
  }
  throw new HillclimbError(`agent ${kind}: cannot reach the model API at ${check.url}: ${failure}`, {
    // Node's fetch here, and the key proxy that carries the agent's requests, connect directly.
    hint:
      `check ${check.urlVariable}, and that this machine reaches it directly: hillclimb holds the key and ` +
      'connects without an HTTP proxy (HTTPS_PROXY is not used; one in agent.pass_env does not help)',
    exitCode: ExitCode.failure,
  });
}

/** `connection refused`, `getaddrinfo ENOTFOUND host`, `timed out after 10 s`: the cause, not fetch's wrapper. */
function connectFailure(e: unknown): string {
  if (e instanceof Error && e.name === 'TimeoutError') return `no answer in ${CHECK_TIMEOUT_MS / 1000} s`;
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code === 'ECONNREFUSED') return 'connection refused';
  return cause?.message ?? (e instanceof Error ? e.message : String(e));
}
