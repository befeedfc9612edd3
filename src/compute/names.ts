/**
 * Deterministic names derived from ids: Ray submission ids, GCP resource names and label values,
 * remote job folders. The same input always gives the same name, so a retried submit or allocation
 * finds what the first attempt created instead of starting a second one.
 */
import { createHash } from 'node:crypto';

/** Short stable hash, appended when a name had to be altered, so two different inputs never collide. */
export function shortHash(text: string, length = 6): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length);
}

const SAFE_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;
const MAX_SUBMISSION_ID = 120;

/**
 * A Ray submission id for a job id: `hillclimb-<id>` when the id is already safe for URLs and file
 * names, else the id with unsafe characters replaced and a hash of the original appended.
 */
export function raySubmissionId(jobId: string): string {
  const base = `hillclimb-${jobId}`;
  if (SAFE_ID.test(jobId) && base.length <= MAX_SUBMISSION_ID) return base;
  const cleaned = `hillclimb-${jobId.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, MAX_SUBMISSION_ID - 9);
  return `${cleaned}-${shortHash(jobId, 8)}`;
}

/** A folder name for a job on a remote machine: only [A-Za-z0-9._-], never starting with a dot. */
export function jobSlug(jobId: string): string {
  if (SAFE_ID.test(jobId) && jobId.length <= 100) return jobId;
  return `${jobId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 90)}-${shortHash(jobId, 8)}`;
}

/** GCP resource names (TPU nodes, queued resources): lowercase letter first, [a-z0-9-], no trailing '-', ≤ 63. */
export const GCP_NAME = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const MAX_GCP_NAME = 63;

/** Lowercase, every run of other characters turned into one '-', no leading or trailing '-'. */
function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/**
 * `<prefix>-<run id>` as a valid GCP name. A run id that had to be changed (case, characters, length)
 * gets a hash of the original appended, so distinct run ids give distinct names.
 */
export function gcpResourceName(prefix: string, runId: string, suffix = ''): string {
  const cleanPrefix = slug(prefix) || 'hillclimb';
  const head = /^[a-z]/.test(cleanPrefix) ? cleanPrefix : `h-${cleanPrefix}`;
  const cleanRun = slug(runId);
  const tail = suffix ? `-${slug(suffix)}` : '';
  const exact = `${head}-${cleanRun}${tail}`;
  if (cleanRun === runId && exact.length <= MAX_GCP_NAME && GCP_NAME.test(exact)) return exact;
  const hash = shortHash(runId);
  const room = MAX_GCP_NAME - head.length - tail.length - hash.length - 2;
  const run = cleanRun.slice(0, Math.max(0, room)).replace(/-+$/g, '');
  return [head, run, hash].filter(Boolean).join('-') + tail;
}

/** A GCP label value: lowercase letters, digits, '_' and '-', at most 63 characters. */
export function labelValue(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .slice(0, 63);
}
