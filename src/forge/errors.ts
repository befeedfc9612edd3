/** The forge's error types: an API call (or push) that the forge could not complete; a branch it must not overwrite. */

import type { BranchCommit } from '../git/index.js';
import { ApiError, ExitCode, HillclimbError } from '../util/index.js';

export class ForgeApiError extends ApiError {
  override name = 'ForgeApiError';
}

/**
 * An iteration branch holds commits hillclimb did not make (a reviewer's fix-up, an "Update branch"
 * merge): publishing would overwrite them, so it stops. Exit code 2: not an infrastructure failure,
 * the loop does not retry it.
 */
export class ForeignCommitsError extends HillclimbError {
  override name = 'ForeignCommitsError';

  constructor(
    readonly branch: string,
    remote: string,
    readonly commits: readonly BranchCommit[],
  ) {
    const shown = commits
      .slice(0, 5)
      .map((c) => `${c.sha.slice(0, 12)} "${c.subject}" by ${c.author}`)
      .join('; ');
    const more = commits.length > 5 ? ` and ${commits.length - 5} more` : '';
    super(
      `${branch} on ${remote.replace(/\/\/[^/@]*@/, '//')} has ${commits.length} commit(s) hillclimb did not make (${shown}${more}); not overwriting them`,
      {
        hint:
          `a person has worked on this iteration's branch: merge or close its PR, or move that work to another ` +
          `branch, then publish again (hillclimb never force-pushes over commits it did not make)`,
        exitCode: ExitCode.badInput,
      },
    );
  }
}
