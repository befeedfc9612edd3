/** Filling placeholders in configured argument arrays. No shell is ever involved. */
import type { CommandArgs } from './types.js';

export interface CommandVars {
  /** The project venv interpreter. */
  python?: string;
  /** Metrics JSON the bench must write. */
  metrics?: string;
  /** JUnit XML the tests must write. */
  junit?: string;
  /** Profiler trace directory to write. */
  trace?: string;
  /** Folder the export step writes the programs to (engine-built commands only). */
  programs?: string;
  /** Repository root (the working tree being tested). */
  root?: string;
  /**
   * A folder that persists across jobs on the machine the job runs on (e.g. a JAX compilation cache
   * shared by both A/B arms). Never part of the evidence.
   */
  cache?: string;
}

/**
 * Replace `{name}` placeholders in each argument. A placeholder without a value is an error, so a
 * command never runs with a literal `{metrics}` in it.
 */
export function fillCommand(args: CommandArgs, vars: CommandVars): [string, ...string[]] {
  const filled = args.map((arg) =>
    arg.replace(/\{(python|metrics|junit|trace|programs|root|cache)\}/g, (_, name: keyof CommandVars) => {
      const value = vars[name];
      if (value === undefined) throw new Error(`placeholder {${name}} has no value in: ${args.join(' ')}`);
      return value;
    }),
  );
  if (filled.length === 0) throw new Error('empty command');
  return filled as [string, ...string[]];
}

/** Whether a command names a placeholder (e.g. whether a test command writes JUnit XML). */
export function usesPlaceholder(args: CommandArgs, name: keyof CommandVars): boolean {
  return args.some((a) => a.includes(`{${name}}`));
}
