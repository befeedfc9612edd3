/**
 * What every action entry shares: secrets masked before anything is logged, an Actions logger, one
 * `setFailed` for whatever the body throws (message and hint for a HillclimbError, the stack only for
 * a bug), and a job summary written once through the buffered builder, capped below GitHub's limit.
 */
import * as core from '@actions/core';
import { JOB_SUMMARY_MAX_BYTES } from '../report/index.js';
import { actionsLogger, errorMessage, isHillclimbError, type Logger, secretsFromEnv } from '../util/index.js';

export interface ActionContext {
  logger: Logger;
}

/**
 * Run an action body. Failing sets the exit code (core.setFailed) rather than exiting, so a `post:`
 * step and the runner's own cleanup still run.
 */
export async function runAction(body: (ctx: ActionContext) => Promise<void>): Promise<void> {
  maskSecrets();
  const logger = actionsLogger();
  try {
    await body({ logger });
  } catch (e) {
    core.setFailed(failureText(e));
  }
}

/** What setFailed says: message and hint for our errors, the stack for a bug. */
export function failureText(e: unknown): string {
  if (isHillclimbError(e)) return e.hint ? `${e.message}\nhint: ${e.hint}` : e.message;
  const stack = e instanceof Error ? (e.stack ?? e.message) : errorMessage(e);
  return `internal error (a bug in hillclimb, please report it):\n${stack}`;
}

/**
 * Mask every secret-looking value the step can see (tokens and keys passed as inputs or through
 * `env:`) before the engine logs anything. The runner already masks `secrets.*`; tokens minted at
 * run time (a GitHub App token, a value derived from one) are not known to it.
 */
export function maskSecrets(env: NodeJS.ProcessEnv = process.env): void {
  for (const value of secretsFromEnv(env)) core.setSecret(value);
}

/** Cut markdown to `maxBytes` on a line boundary, saying where the rest is. */
export function capSummary(markdown: string, maxBytes = JOB_SUMMARY_MAX_BYTES): string {
  if (Buffer.byteLength(markdown, 'utf8') <= maxBytes) return markdown;
  const note = '\n\n_The job summary was cut to fit GitHub’s limit; the evidence bundle has everything._\n';
  const budget = maxBytes - Buffer.byteLength(note, 'utf8');
  const lines = markdown.split('\n');
  const kept: string[] = [];
  let used = 0;
  for (const line of lines) {
    const size = Buffer.byteLength(line, 'utf8') + 1;
    if (used + size > budget) break;
    kept.push(line);
    used += size;
  }
  return `${kept.join('\n')}${note}`;
}

/** Write the job summary once (buffered builder, then one write); a run without a summary file logs why. */
export async function writeSummary(markdown: string, logger: Logger): Promise<void> {
  if (!process.env.GITHUB_STEP_SUMMARY) {
    logger.info('job summary skipped: GITHUB_STEP_SUMMARY is not set (not running on an Actions runner)');
    return;
  }
  await core.summary.addRaw(capSummary(markdown), true).write();
}

/** Set outputs from a record; undefined values become empty strings, so every declared output is set. */
export function setOutputs(outputs: Record<string, string | number | boolean | undefined | null>): void {
  for (const [name, value] of Object.entries(outputs)) core.setOutput(name, value ?? '');
}
