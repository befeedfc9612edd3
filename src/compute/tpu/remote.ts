/**
 * Shell strings run on a TPU VM through `gcloud … ssh --command`. The remote side is a login shell, so
 * every value in them (job folder, interpreter, runner spec, setup command) is single-quoted; the
 * rest is fixed text. Job folders live under ~/hillclimb/jobs/<job slug>.
 */
import { shellJoin, shellQuote } from '../shell.js';

export const JOBS_DIR = 'hillclimb/jobs';
/** Written by the runner inside the job folder; fetched with scp. */
export const OUTPUTS_FILE = '.hillclimb-outputs.tar.gz';
/** The job's process group id, recorded by the runner so a stop can reach the whole job. */
export const PGID_FILE = '.hillclimb-pgid';

export function jobDir(slug: string): string {
  return `${JOBS_DIR}/${slug}`;
}

/** Where the tree tarball is copied before the job folder exists (scp cannot create folders). */
export function uploadName(slug: string): string {
  return `hillclimb-job-${slug}.tar.gz`;
}

/**
 * Unpack the uploaded tree into a fresh job folder (earlier job folders are removed: jobs on one VM
 * run one at a time) and start the runner there. `runner` is the runner's argv.
 */
export function runScript(slug: string, runner: readonly string[]): string {
  const dir = shellQuote(jobDir(slug));
  const tarball = shellQuote(uploadName(slug));
  return [
    'cd "$HOME"',
    `rm -rf ${shellQuote(JOBS_DIR)}`,
    `mkdir -p ${dir}`,
    `tar -xzf ${tarball} -C ${dir}`,
    `rm -f ${tarball}`,
    `cd ${dir}`,
    `exec ${shellJoin(runner)}`,
  ].join(' && ');
}

/** Stop a job's process group: SIGTERM, then SIGKILL after a grace period. Succeeds when nothing runs. */
export function killScript(slug: string, graceSeconds = 5): string {
  const f = shellQuote(`${jobDir(slug)}/${PGID_FILE}`);
  const kill = (sig: string): string => `kill -${sig} -- "-$(cat ${f})" 2>/dev/null`;
  return (
    `cd "$HOME"; if [ -f ${f} ]; then ${kill('TERM')}; sleep ${graceSeconds}; ` +
    `if [ -f ${f} ]; then ${kill('KILL')}; fi; fi; true`
  );
}

/** Run the configured setup command from the home folder. */
export function setupScript(command: readonly string[]): string {
  return `cd "$HOME" && ${shellJoin(command)}`;
}
