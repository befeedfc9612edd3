/**
 * The Octokit client, built once per forge: REST + pagination (from @octokit/rest) with the retry and
 * throttling plugins, as create-pull-request does.
 *
 * - Retry: 5xx and network failures are retried with quadratic backoff; statuses in
 *   DO_NOT_RETRY_STATUSES are not (they will not get better by asking again). 403/429 rate limits are
 *   the throttling plugin's job, which is why they sit in the list.
 * - Throttling: GitHub's primary limit (`x-ratelimit-remaining: 0`, wait until `x-ratelimit-reset`)
 *   and secondary limit (`retry-after`) are waited out and retried, up to RATE_LIMIT_RETRIES times per
 *   request, and all waits of one forge together never longer than its RateLimitBudget
 *   (RATE_LIMIT_WAIT_BUDGET_SECONDS): a wait that would overrun it is not started, the request fails
 *   with the reset time in its hint. Writes are spaced as GitHub asks.
 *
 * Every duration scales with `timing.secondMs`, so tests run the real plugins on a fast clock
 * instead of mocking them.
 */
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { Octokit } from '@octokit/rest';
import Bottleneck from 'bottleneck';
import type { Logger } from '../../util/index.js';

/** Statuses never retried by the retry plugin (rate-limited 403/429 are retried by throttling). */
export const DO_NOT_RETRY_STATUSES = [400, 401, 403, 404, 410, 422, 429, 451] as const;
/** How many times one request is retried after a 5xx or network failure. */
export const SERVER_ERROR_RETRIES = 3;
/** How many times one request is retried after hitting a rate limit. */
export const RATE_LIMIT_RETRIES = 2;
/**
 * All rate-limit waits of one forge (one job step) together stay under this; beyond it the request
 * fails with a hint instead of sleeping. The report steps that publish have timeouts of 10 minutes
 * (pr-evidence, baseline) and 20 (hillclimb): the budget leaves room for the work itself, so a job
 * fails with GitHub's reset time in its message rather than being killed mid-wait with none.
 */
export const RATE_LIMIT_WAIT_BUDGET_SECONDS = 4 * 60;

/** Seconds of rate-limit waiting left to one forge; shared by every request it makes. */
export class RateLimitBudget {
  private spentSeconds = 0;

  constructor(readonly totalSeconds: number = RATE_LIMIT_WAIT_BUDGET_SECONDS) {}

  get leftSeconds(): number {
    return Math.max(0, this.totalSeconds - this.spentSeconds);
  }

  /** Reserve `seconds` of waiting; false (and nothing reserved) when that would overrun the budget. */
  take(seconds: number): boolean {
    if (seconds > this.leftSeconds) return false;
    this.spentSeconds += seconds;
    return true;
  }
}

export interface GitHubClientTiming {
  /** Length of one "second" of backoff and rate-limit waits, in ms. Default 1000; tests use ~1-20. */
  secondMs?: number;
  /**
   * Minimum gap between content-creating requests, in ms. Default: the throttling plugin's own
   * process-wide spacing (1 s between writes, 3 s between notification-triggering writes, as
   * GitHub's best practices ask). Setting it gives this client its own queues.
   */
  writeSpacingMs?: number;
}

export interface GitHubClientOptions {
  token: string;
  /** REST API root, e.g. https://api.github.com or https://ghe.example.com/api/v3. */
  baseUrl: string;
  logger: Logger;
  timing?: GitHubClientTiming;
  serverErrorRetries?: number;
  rateLimitRetries?: number;
  /** Shared by every request (and by the forge's own 422 retries). Default: a fresh budget. */
  budget?: RateLimitBudget;
}

const GitHubOctokit = Octokit.plugin(retry, throttling);
export type GitHubClient = InstanceType<typeof GitHubOctokit>;

export function buildGitHubClient(opts: GitHubClientOptions): GitHubClient {
  const { logger } = opts;
  const secondMs = opts.timing?.secondMs ?? 1000;
  const rateLimitRetries = opts.rateLimitRetries ?? RATE_LIMIT_RETRIES;
  const budget = opts.budget ?? new RateLimitBudget();

  const onLimit =
    (kind: 'primary' | 'secondary') =>
    (retryAfter: number, options: { method?: string; url?: string }, _o: unknown, retryCount: number) => {
      const what = `${options.method ?? ''} ${options.url ?? ''}`.trim();
      if (retryCount >= rateLimitRetries) {
        logger.warn(`GitHub ${kind} rate limit on ${what}: giving up after ${retryCount} retries`);
        return false;
      }
      if (!budget.take(retryAfter)) {
        logger.warn(
          `GitHub ${kind} rate limit on ${what}: the wait of ${retryAfter} s is more than the ${budget.leftSeconds} s ` +
            `left of this job's ${budget.totalSeconds} s rate-limit budget; not waiting`,
        );
        return false;
      }
      logger.warn(
        `GitHub ${kind} rate limit on ${what}: retrying in ${retryAfter} s (retry ${retryCount + 1})`,
      );
      return true;
    };

  const spacing = opts.timing?.writeSpacingMs;
  const ownQueues =
    spacing === undefined
      ? {}
      : {
          write: new Bottleneck.Group({ maxConcurrent: 1, minTime: spacing }),
          notifications: new Bottleneck.Group({ maxConcurrent: 1, minTime: spacing }),
        };

  return new GitHubOctokit({
    auth: opts.token,
    baseUrl: opts.baseUrl.replace(/\/+$/, ''),
    userAgent: 'hillclimb',
    // Octokit's own console logging would print request details; our logger decides what is shown.
    log: {
      debug: (m: string) => logger.debug(m),
      info: (m: string) => logger.debug(m),
      warn: (m: string) => logger.debug(m),
      error: (m: string) => logger.debug(m),
    },
    retry: {
      doNotRetry: [...DO_NOT_RETRY_STATUSES],
      retries: opts.serverErrorRetries ?? SERVER_ERROR_RETRIES,
      retryAfterBaseValue: secondMs,
    },
    throttle: {
      retryAfterBaseValue: secondMs,
      fallbackSecondaryRateRetryAfter: 60,
      onRateLimit: onLimit('primary'),
      onSecondaryRateLimit: onLimit('secondary'),
      ...ownQueues,
    },
  });
}
