import type { Git } from './git.js';
import { matchAny } from './glob.js';

/**
 * The globs that match no file committed at HEAD (all of them in a repository with no commit yet): an
 * editable glob like that is a typo, or a kernel not committed yet, and the agent could only add files
 * there.
 */
export async function globsWithoutFiles(git: Git, globs: readonly string[]): Promise<string[]> {
  if (!(await git.tryRevParse('HEAD'))) return [...globs];
  const paths = (await git.listFiles('HEAD')).map((f) => f.path);
  return globs.filter((g) => !paths.some((p) => matchAny([g], p)));
}
