/**
 * Runs a documented command as a user would type it: through bash, in the journey's scratch
 * repository, with this checkout's CLI on PATH as `hillclimb` (the README's `npm link`).
 */
import { spawn } from 'node:child_process';
import { accessSync, chmodSync, constants, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { CLI } from '../../helpers/paths.js';

export interface Ran {
  command: string;
  code: number | null;
  signal: string | null;
  /** stdout and stderr, interleaved as printed. */
  output: string;
  seconds: number;
}

export interface RunOptions {
  cwd: string;
  env: Record<string, string>;
  /** Send Ctrl-C (SIGINT to the command's process group) once the output matches this. */
  interruptWhen?: RegExp;
  timeoutMs?: number;
}

/** A folder holding `hillclimb`: this checkout's CLI, as `npm link` would put it on PATH. */
export function linkHillclimb(dir: string): string {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  const shim = join(bin, 'hillclimb');
  writeFileSync(shim, `#!/bin/sh\nexec '${process.execPath}' '${CLI}' "$@"\n`);
  chmodSync(shim, 0o755);
  return bin;
}

/**
 * PATH without the folders that hold any of `programs` (a machine may have codex installed). A folder
 * that also holds what the journeys need (bash, git) cannot go: that fails, naming it.
 */
export function pathWithout(programs: string[], path = process.env.PATH ?? ''): string {
  const holds = (dir: string) =>
    programs.some((p) => {
      try {
        accessSync(join(dir, p), constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  const kept = path.split(delimiter).filter((d) => d && !holds(d));
  for (const needed of ['bash', 'git'])
    if (!kept.some((d) => existsSync(join(d, needed))))
      throw new Error(
        `${needed} is only in a folder that also holds ${programs.join(' or ')}: the journeys cannot take those off PATH`,
      );
  return kept.join(delimiter);
}

/** Write an executable script `name` into `dir`. */
export function writeProgram(dir: string, name: string, text: string): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, name);
  writeFileSync(file, text);
  chmodSync(file, 0o755);
  return file;
}

/** Signal a process group that may have ended already. */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // gone: nothing to stop
  }
}

/** Run one command line in bash; stdin closed (not a terminal). */
export function runCommand(command: string, o: RunOptions): Promise<Ran> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', command], {
      cwd: o.cwd,
      env: { ...process.env, ...o.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group, as a terminal's foreground job is
    });
    let output = '';
    let interrupted = false;
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (o.interruptWhen && !interrupted && o.interruptWhen.test(output)) {
        interrupted = true;
        signalGroup(child.pid!, 'SIGINT');
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const timer = setTimeout(() => signalGroup(child.pid!, 'SIGKILL'), o.timeoutMs ?? 120_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ command, code, signal, output, seconds: (Date.now() - started) / 1000 });
    });
  });
}

/** Files under `dir` whose names end with `suffix`, depth first (for placeholders such as <trace>). */
export function findFiles(dir: string, suffix: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(suffix))
    .map((e) => join(e.parentPath, e.name))
    .sort();
}
