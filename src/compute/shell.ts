/**
 * POSIX shell quoting for the two places hillclimb must hand a remote side a shell string: the Ray
 * Jobs API entrypoint and `gcloud … ssh --command`. Every argument is single-quoted, so no character
 * in it (space, $, `, ;, newline, quote) is ever interpreted by the shell.
 */

/** Quote one argument: wrap in single quotes, and write each embedded ' as '\''. */
export function shellQuote(arg: string): string {
  if (arg.includes('\0')) throw new Error('a shell argument cannot contain a NUL byte');
  return `'${arg.replaceAll("'", "'\\''")}'`;
}

/** Join an argument array into one shell command line that the shell splits back into exactly these arguments. */
export function shellJoin(args: readonly string[]): string {
  if (args.length === 0) throw new Error('empty command');
  return args.map(shellQuote).join(' ');
}
