/**
 * Who hillclimb's commits are by: the harness itself, and each agent (set in src/agent). One place for
 * the identity environment, so the committer check below recognises every commit hillclimb makes.
 */
import { ExitCode, HillclimbError } from '../util/index.js';

export interface Identity {
  name: string;
  email: string;
}

/** The fixed identity of commits the harness itself makes (reverts, merges, data-branch commits). */
export const HARNESS_IDENTITY: Identity = { name: 'hillclimb', email: 'hillclimb@users.noreply.invalid' };

/** An agent's identity, so provenance shows who proposed what. */
export function agentIdentity(agent: string): Identity {
  return { name: `${agent} (hillclimb agent)`, email: `${agent}-agent@users.noreply.invalid` };
}

/** The committer addresses of HARNESS_IDENTITY and every agentIdentity. */
const OWN_COMMITTER = /^(?:hillclimb|[\w.-]+-agent)@users\.noreply\.invalid$/;

/** Whether a commit was made by hillclimb (the harness or an agent it ran), judged by its committer. */
export function isOwnCommit(c: { committerEmail: string }): boolean {
  return OWN_COMMITTER.test(c.committerEmail);
}

/** Author and committer variables for `id`; with `date`, also their dates (then the same SHA anywhere). */
export function identityEnv(id: Identity, date?: string): Record<string, string> {
  assertIdentity(id);
  return {
    GIT_AUTHOR_NAME: id.name,
    GIT_AUTHOR_EMAIL: id.email,
    GIT_COMMITTER_NAME: id.name,
    GIT_COMMITTER_EMAIL: id.email,
    ...(date !== undefined ? { GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date } : {}),
  };
}

/** A name or address git would mangle or misread (angle brackets, line breaks, NUL, empty). */
export function assertIdentity(id: Identity): void {
  for (const part of [id.name, id.email]) {
    if (part.trim() === '' || /[<>\n\r\0]/.test(part)) {
      throw new HillclimbError(`invalid git identity "${id.name} <${id.email}>"`, {
        exitCode: ExitCode.badInput,
      });
    }
  }
}
