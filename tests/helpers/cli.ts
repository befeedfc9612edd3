/** The real CLI (bin/hillclimb.js → dist/cli.js, built by the global setup) as a process, its exit code kept. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { CLI, REPO_ROOT } from './paths.js';

const execFileP = promisify(execFile);

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `hillclimb <args>` in `cwd` (default this repository) with `env` added; stdin is not a terminal. */
export async function runCli(
  args: string[],
  env: Record<string, string> = {},
  cwd = REPO_ROOT,
): Promise<CliRun> {
  try {
    const r = await execFileP(process.execPath, [CLI, ...args], { cwd, env: { ...process.env, ...env } });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}
