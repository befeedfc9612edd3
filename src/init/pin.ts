/**
 * Which hillclimb the workflows `hillclimb init` writes should run: `<owner>/<name>` on GitHub and the
 * full commit SHA their `uses:` lines pin (docs/security.md: pins are whole SHAs, never tags or
 * prefixes). Taken from the flags, else from the installed package: a git checkout of that commit, or
 * a package packed from a release commit (its `dist/release.json`, written by
 * scripts/stamp-release.mjs); anything else is refused with the flags to pass.
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { ExitCode, HillclimbError } from '../util/index.js';
import { Git } from '../workspace/index.js';

export interface HillclimbPin {
  /** `owner/name` of hillclimb on GitHub. */
  repository: string;
  /** The 40-hex commit every `uses: <repository>/actions/<name>@<commit>` names. */
  commit: string;
}

const FULL_SHA = /^[0-9a-f]{40}$/;
const REPOSITORY = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;
/** What the pinned commit must hold exactly as installed: the actions and the workflows init copies. */
const PINNED_PATHS = ['actions', '.github/workflows'];

export function checkRef(ref: string): string {
  if (!FULL_SHA.test(ref)) {
    throw new HillclimbError(`--hillclimb-ref: "${ref}" is not a full 40-character commit SHA`, {
      hint: 'pins are whole commit SHAs (a tag can be moved, a short SHA can be matched by a crafted commit): git rev-parse <tag>^{commit}',
      exitCode: ExitCode.badInput,
    });
  }
  return ref;
}

export function checkRepository(repo: string): string {
  if (!REPOSITORY.test(repo)) {
    throw new HillclimbError(`--hillclimb-repo: "${repo}" is not an owner/name`, {
      hint: 'e.g. --hillclimb-repo my-org/hillclimb',
      exitCode: ExitCode.badInput,
    });
  }
  return repo;
}

/** `owner/name` from a GitHub URL (https, ssh, git+https, as package.json `repository` or a remote). */
export function githubRepository(url: string): string | undefined {
  const m = /github\.com[:/]([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+?)(?:\.git)?\/?$/.exec(url.trim());
  return m ? `${m[1]}/${m[2]}` : undefined;
}

function packageRepository(packageDir: string): string | undefined {
  const file = join(packageDir, 'package.json');
  if (!existsSync(file)) return undefined;
  const pkg = JSON.parse(readFileSync(file, 'utf8')) as { repository?: string | { url?: string } };
  const url = typeof pkg.repository === 'string' ? pkg.repository : pkg.repository?.url;
  if (!url) return undefined;
  return (
    githubRepository(url) ??
    (REPOSITORY.test(url.replace(/^github:/, '')) ? url.replace(/^github:/, '') : undefined)
  );
}

/** Where `npm pack` of a release commit records its pin, inside the package. */
export const RELEASE_STAMP = join('dist', 'release.json');

/** The pin recorded in a packed release, checked as strictly as a flag; undefined when there is none. */
function releaseStamp(packageDir: string): { commit: string; repository?: string } | undefined {
  const file = join(packageDir, RELEASE_STAMP);
  if (!existsSync(file)) return undefined;
  const broken = (why: string) =>
    new HillclimbError(`${file}: ${why}`, {
      hint: 'reinstall hillclimb from its release, or pass --hillclimb-repo and --hillclimb-ref',
      exitCode: ExitCode.badInput,
    });
  let stamp: { commit?: unknown; repository?: unknown };
  try {
    stamp = JSON.parse(readFileSync(file, 'utf8')) as typeof stamp;
  } catch {
    throw broken('not valid JSON');
  }
  if (typeof stamp.commit !== 'string' || !FULL_SHA.test(stamp.commit)) {
    throw broken('"commit" is not a full 40-character commit SHA');
  }
  if (stamp.repository === undefined || stamp.repository === null) return { commit: stamp.commit };
  if (typeof stamp.repository !== 'string' || !REPOSITORY.test(stamp.repository)) {
    throw broken('"repository" is not an owner/name');
  }
  return { commit: stamp.commit, repository: stamp.repository };
}

/**
 * The pin for the installed hillclimb at `packageDir`. Flags win; otherwise the package must be a git
 * checkout whose actions and workflows are exactly its HEAD commit's, and its repository must be
 * known (package.json `repository`, else the `origin` remote on GitHub).
 */
export async function resolvePin(
  packageDir: string,
  flags: { repository?: string; ref?: string },
): Promise<HillclimbPin> {
  const repository = flags.repository === undefined ? undefined : checkRepository(flags.repository);
  const ref = flags.ref === undefined ? undefined : checkRef(flags.ref);
  if (repository && ref) return { repository, commit: ref };

  const passBoth =
    'pass --hillclimb-repo <owner>/<name> and --hillclimb-ref <40-hex commit> of the hillclimb release to pin';
  // Only a checkout of hillclimb itself: under node_modules, the work tree around it is the user's.
  const git = await Git.create(packageDir).catch(() => undefined);
  if (!git || realpathSync(git.root) !== realpathSync(packageDir)) {
    const stamp = releaseStamp(packageDir);
    if (stamp) {
      const stamped = repository ?? stamp.repository ?? packageRepository(packageDir);
      if (!stamped) throw unknownRepository();
      return { repository: stamped, commit: ref ?? stamp.commit };
    }
    throw new HillclimbError(
      `cannot tell which hillclimb commit to pin: the installed hillclimb (${packageDir}) is not a git checkout of its own`,
      { hint: passBoth, exitCode: ExitCode.badInput },
    );
  }
  let commit = ref;
  if (!commit) {
    const changed = (await git.status()).filter((e) =>
      PINNED_PATHS.some((p) => e.path === p || e.path.startsWith(`${p}/`)),
    );
    if (changed.length > 0) {
      throw new HillclimbError(
        `the installed hillclimb (${packageDir}) has uncommitted changes in ${changed.map((e) => e.path).join(', ')}: no commit holds the actions the workflows would pin`,
        { hint: `commit and push them, or ${passBoth}`, exitCode: ExitCode.badInput },
      );
    }
    commit = await git.head();
  }
  const origin =
    repository ??
    packageRepository(packageDir) ??
    (await git.remoteUrl('origin').then((u) => (u ? githubRepository(u) : undefined)));
  if (!origin) throw unknownRepository();
  return { repository: origin, commit };
}

/** Nothing names the GitHub repository the workflows should take hillclimb's actions from. */
export class UnknownHillclimbRepository extends HillclimbError {
  override name = 'UnknownHillclimbRepository';

  constructor() {
    super('cannot tell which GitHub repository hillclimb is published from', {
      hint: "pass --hillclimb-repo <owner>/<name> (or set repository in hillclimb's package.json)",
      exitCode: ExitCode.badInput,
    });
  }
}

function unknownRepository(): HillclimbError {
  return new UnknownHillclimbRepository();
}
