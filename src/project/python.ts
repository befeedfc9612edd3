/**
 * The project's Python environment: a venv at `<root>/.venv` holding the pinned kernel requirements.
 * Setup is idempotent: a stamp file records a hash of the requirement files and the interpreter, and a
 * second setup with nothing changed runs no pip at all.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { run } from '../exec/index.js';
import { HillclimbError, type Logger } from '../util/index.js';
import { parseRequirementsSpec, requirementLines } from './requirements.js';
import { packageRoot } from './root.js';

/**
 * The requirement files `hillclimb setup` installs, relative to the project root: `paths.requirements`
 * and (with --dev) `paths.dev_requirements` of hillclimb.yml.
 */
export interface RequirementPaths {
  runtime: string;
  dev: string;
}

/** The schema's defaults (hillclimb's own layout), for a project without hillclimb.yml. */
export const DEFAULT_REQUIREMENTS: RequirementPaths = {
  runtime: 'kernels/requirements.txt',
  dev: 'kernels/requirements-dev.txt',
};

const VENV_DIR = '.venv';
const STAMP_FILE = '.hillclimb-setup.json';
const MIN_PYTHON: [number, number] = [3, 10];

export interface SetupStamp {
  /**
   * sha256 over the requirement files' paths and contents, the files of the local packages they install
   * (with what those packages' wheels take from elsewhere: the peak table), and the interpreter version.
   */
  hash: string;
  files: string[];
  python: string;
  at: string;
}

/** The venv interpreter hillclimb uses: $HILLCLIMB_PYTHON, else `<root>/.venv/bin/python`. */
export function venvPython(root: string): string {
  return process.env.HILLCLIMB_PYTHON || join(root, VENV_DIR, 'bin', 'python');
}

/** Candidates for the base interpreter that creates the venv, in order of preference. */
export function baseInterpreters(): string[] {
  return process.env.HILLCLIMB_BASE_PYTHON ? [process.env.HILLCLIMB_BASE_PYTHON] : ['python3', 'python'];
}

/** Parse "Python 3.11.7" into [3, 11, 7]. */
export function parsePythonVersion(text: string): [number, number, number] | undefined {
  const m = /Python (\d+)\.(\d+)\.(\d+)/.exec(text);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

async function findBaseInterpreter(): Promise<{ path: string; version: string }> {
  const tried: string[] = [];
  for (const candidate of baseInterpreters()) {
    try {
      const r = await run(candidate, ['--version'], { allowedExitCodes: 'any', timeoutMs: 20_000 });
      const v = parsePythonVersion(r.stdout + r.stderr);
      if (
        r.exitCode === 0 &&
        v &&
        (v[0] > MIN_PYTHON[0] || (v[0] === MIN_PYTHON[0] && v[1] >= MIN_PYTHON[1]))
      ) {
        return { path: candidate, version: v.join('.') };
      }
      tried.push(`${candidate} (${v ? v.join('.') : 'no version'})`);
    } catch {
      tried.push(`${candidate} (not found)`);
    }
  }
  throw new HillclimbError(`no Python ≥ ${MIN_PYTHON.join('.')} found; tried ${tried.join(', ')}`, {
    hint: 'install Python 3.10+ (e.g. apt install python3 python3-venv) or set HILLCLIMB_BASE_PYTHON',
  });
}

/**
 * The requirement specs setup installs (`paths.requirements`, and `paths.dev_requirements` with `dev`):
 * each a requirements file or a pyproject.toml with extras (requirements.ts); throws for a missing file.
 */
export function requirementFiles(root: string, dev: boolean, paths: RequirementPaths): string[] {
  const files = dev ? [paths.runtime, paths.dev] : [paths.runtime];
  for (const spec of files) {
    const f = parseRequirementsSpec(
      spec,
      spec === paths.runtime ? 'paths.requirements' : 'paths.dev_requirements',
    ).file;
    if (!existsSync(join(root, f))) {
      const key = spec === paths.runtime ? 'paths.requirements' : 'paths.dev_requirements';
      throw new HillclimbError(`requirements file missing: ${join(root, f)} (${key} in hillclimb.yml)`, {
        hint:
          spec === paths.runtime
            ? `write it (JAX, pytest, hillclimb-bench and what your kernel imports), or set ${key} in ` +
              'hillclimb.yml to the file you have (pyproject.toml[<extra>] installs its dependencies); ' +
              'run hillclimb from the folder with hillclimb.yml'
            : `write it, set ${key} in hillclimb.yml, or run setup without --dev`,
      });
    }
  }
  return files;
}

/**
 * `bundled` is bundledBenchSource(root, files) (null: none), when the caller has it already: setup
 * computes it once for the hash, pip's arguments and the stamp.
 */
export function requirementsHash(
  root: string,
  files: readonly string[],
  pythonVersion: string,
  bundled: string | null = bundledBenchSource(root, files) ?? null,
): string {
  const h = createHash('sha256');
  h.update(`python ${pythonVersion}\n`);
  const hashFilesBelow = (dir: string) => {
    for (const file of filesBelow(dir)) {
      h.update(`${relative(root, file)}\n`);
      h.update(readFileSync(file));
    }
  };
  // A package's wheel can take files from outside its folder (hillclimb-bench takes the peak table,
  // schemas/device-peaks.json): the venv keeps the copy it installed, so they count too.
  const hashPackage = (dir: string) => {
    hashFilesBelow(dir);
    for (const file of forceIncluded(dir)) {
      h.update(`included ${relative(root, file)}\n`);
      for (const f of statSync(file).isDirectory() ? filesBelow(file) : [file]) h.update(readFileSync(f));
    }
  };
  for (const f of files) {
    h.update(`${f}\n`);
    // What pip is given: a pyproject.toml's other tables (tool settings) change nothing installed.
    const text = requirementLines(root, f).join('\n');
    h.update(text);
    // A local package (`./packages/hillclimb-bench`) is installed as a copy: hash its files too, so
    // a change to it reinstalls it instead of leaving a stale copy in the venv.
    for (const dir of localPackages(text)) hashPackage(join(root, dir));
  }
  // So is the hillclimb-bench a bare requirement line takes from this hillclimb: another release's
  // copy reinstalls it.
  if (bundled) {
    h.update(`bundled ${bundled}\n`);
    hashPackage(bundled);
  }
  return h.digest('hex');
}

/**
 * Files a package's pyproject.toml brings into its wheel from elsewhere (hatch's
 * `[tool.hatch.build.targets.wheel.force-include]`, `"<source>" = "<destination>"`), resolved against
 * the package; only those that exist outside the package folder (files below it are hashed anyway).
 */
export function forceIncluded(dir: string): string[] {
  const pyproject = join(dir, 'pyproject.toml');
  if (!existsSync(pyproject)) return [];
  const out: string[] = [];
  let inTable = false;
  for (const raw of readFileSync(pyproject, 'utf8').split('\n')) {
    const line = raw.replace(/(^|\s)#.*$/, '').trim();
    if (line.startsWith('[')) {
      inTable = line === '[tool.hatch.build.targets.wheel.force-include]';
      continue;
    }
    const entry = inTable ? /^"([^"]+)"\s*=/.exec(line) : null;
    if (!entry) continue;
    const source = resolve(dir, entry[1]!);
    const below = relative(dir, source);
    if (existsSync(source) && (below.startsWith('..') || isAbsolute(below))) out.push(source);
  }
  return out.sort();
}

/** hillclimb-bench inside hillclimb's own package (a checkout, the action's download, or the npm package). */
export const BUNDLED_BENCH_DIR = join('packages', 'hillclimb-bench');

/**
 * A requirement line that names hillclimb-bench without saying where it comes from: the name, maybe
 * extras and a version (`hillclimb-bench[jax]`), no `@ url` and no path. hillclimb-bench is not on
 * PyPI: such a line means "the copy in the hillclimb release that runs setup", so neither the local
 * setup nor the workflows need the hillclimb repository to be public at the pin.
 */
export function namesBenchWithoutSource(requirements: string): boolean {
  return requirements
    .split('\n')
    .map((l) => l.replace(/(^|\s)#.*/, '').trim())
    .some((l) => {
      // Options (`--hash=…`) and an environment marker (`; python_version…`) say nothing of the source.
      const spec = l.split(/\s--|;/)[0]!.trim();
      const name = /^[A-Za-z0-9][A-Za-z0-9._-]*/.exec(spec)?.[0];
      // pip's name normalisation (PEP 503): hillclimb__bench and Hillclimb.Bench are this package too.
      return (
        name !== undefined &&
        name.toLowerCase().replace(/[-_.]+/g, '-') === 'hillclimb-bench' &&
        !spec.includes('@')
      );
    });
}

/**
 * The folder a bare hillclimb-bench line installs from (hillclimb's own copy), or undefined when no
 * requirement file has such a line. Throws when this hillclimb has no copy to give.
 */
export function bundledBenchSource(root: string, files: readonly string[]): string | undefined {
  const bare = files.find((f) => namesBenchWithoutSource(requirementLines(root, f).join('\n')));
  if (!bare) return undefined;
  const dir = join(packageRoot(), BUNDLED_BENCH_DIR);
  if (!existsSync(join(dir, 'pyproject.toml'))) {
    throw new HillclimbError(
      `${bare} names hillclimb-bench without a source, and this hillclimb (${packageRoot()}) has no ${BUNDLED_BENCH_DIR} to install it from`,
      {
        hint:
          'run hillclimb from a checkout of its repository (or the release package), or give the line ' +
          'a source: hillclimb-bench[jax] @ git+https://github.com/<owner>/hillclimb@<sha>#subdirectory=packages/hillclimb-bench',
      },
    );
  }
  return dir;
}

/** Requirement lines that are local paths (pip resolves them against the working directory, root). */
export function localPackages(requirements: string): string[] {
  return requirements
    .split('\n')
    .map((l) => l.replace(/#.*/, '').trim())
    .filter((l) => l.startsWith('./') || l.startsWith('../'));
}

function filesBelow(dir: string): string[] {
  if (!existsSync(dir)) return [];
  // Sources only: no caches (__pycache__, .pytest_cache) that running the tests writes.
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .map((e) => ({ e, path: join(e.parentPath, e.name) }))
    .filter(({ e, path }) => e.isFile() && !relative(dir, path).split('/').some(isCache))
    .map(({ path }) => path)
    .sort();
}

function isCache(segment: string): boolean {
  return segment.startsWith('.') || segment === '__pycache__' || segment.endsWith('.egg-info');
}

export function readStamp(root: string): SetupStamp | undefined {
  const path = join(root, VENV_DIR, STAMP_FILE);
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as SetupStamp;
  } catch {
    return undefined;
  }
}

export interface SetupResult {
  python: string;
  /** false when the venv was already up to date and pip did not run. */
  installed: boolean;
  files: string[];
}

/**
 * Create `<root>/.venv` if needed and install the requirement files. Does nothing when the stamp shows
 * the same files were installed with the same contents; `dev` installs are a superset, so a dev venv
 * also satisfies a runtime setup.
 */
export async function setupPython(
  root: string,
  opts: { dev: boolean; logger: Logger; requirements?: RequirementPaths },
): Promise<SetupResult> {
  const { logger } = opts;
  const paths = opts.requirements ?? DEFAULT_REQUIREMENTS;
  const python = join(root, VENV_DIR, 'bin', 'python');
  const files = requirementFiles(root, opts.dev, paths);
  const stamp = readStamp(root);

  // Once: it reads the requirement files, and the hash, pip's arguments and the stamp all use it.
  const bundled = bundledBenchSource(root, files) ?? null;

  if (existsSync(python) && stamp) {
    const wanted = requirementsHash(root, files, stamp.python, bundled);
    const devFiles = [paths.runtime, paths.dev];
    const devInstalled =
      !opts.dev &&
      devFiles.every((f) => existsSync(join(root, f))) &&
      stamp.hash === requirementsHash(root, devFiles, stamp.python);
    if (stamp.hash === wanted || devInstalled) {
      logger.info(`python: ${join(VENV_DIR, 'bin', 'python')} is up to date (${stamp.files.join(', ')})`);
      return { python, installed: false, files };
    }
  }

  const base = await findBaseInterpreter();
  if (!existsSync(python)) {
    logger.info(`python: creating ${VENV_DIR} with ${base.path} ${base.version}`);
    await run(base.path, ['-m', 'venv', join(root, VENV_DIR)], {
      cwd: root,
      timeoutMs: 300_000,
    }).catch((e: unknown) => {
      throw new HillclimbError(`could not create ${join(root, VENV_DIR)}: ${(e as Error).message}`, {
        hint: 'on Debian/Ubuntu install the venv module: apt install python3-venv',
      });
    });
  }
  const args = ['-m', 'pip', 'install', '--disable-pip-version-check', '-q'];
  for (const f of files) {
    // A pyproject.toml's dependencies go to pip as requirements (pip reads no pyproject as -r).
    if (parseRequirementsSpec(f).pyproject) args.push(...pipArguments(requirementLines(root, f)));
    else args.push('-r', f);
  }
  // A named direct requirement beside the bare line: pip takes the source from it and the extras
  // ([jax]) from the line (pip ≥ 20.3; a URL *constraint* with extras needs pip ≥ 24).
  if (bundled) args.push(`hillclimb-bench @ ${pathToFileURL(bundled).href}`);
  logger.info(
    `python: installing ${files.join(', ')}${bundled ? ` (hillclimb-bench from ${bundled})` : ''} into ${VENV_DIR} (first run downloads JAX; a few minutes)`,
  );
  await run(python, args, { cwd: root, timeoutMs: 30 * 60_000, onLine: (l) => logger.debug(l) });

  const venvVersion = parsePythonVersion((await run(python, ['--version'])).stdout) ?? [0, 0, 0];
  const version = venvVersion.join('.');
  const newStamp: SetupStamp = {
    hash: requirementsHash(root, files, version, bundled),
    files,
    python: version,
    at: new Date().toISOString(),
  };
  writeFileSync(join(root, VENV_DIR, STAMP_FILE), `${JSON.stringify(newStamp, null, 2)}\n`);
  logger.info(`python: ready (${files.join(', ')})`);
  return { python, installed: true, files };
}

/** Requirement lines as pip's arguments: comments and blank lines dropped. */
function pipArguments(lines: readonly string[]): string[] {
  return lines.map((l) => l.replace(/(^|\s)#.*$/, '').trim()).filter((l) => l !== '');
}

/**
 * The folders an interpreter needs to be readable to run: its venv (or installation) and, for a venv,
 * the base installation its pyvenv.cfg names and its links resolve into. For the sandbox's read list.
 */
export function interpreterReadPaths(python: string): string[] {
  const paths = new Set<string>();
  const prefix = dirname(dirname(python));
  paths.add(prefix);
  const cfg = join(prefix, 'pyvenv.cfg');
  if (existsSync(cfg)) {
    const home = /^home\s*=\s*(.+)$/m.exec(readFileSync(cfg, 'utf8'))?.[1]?.trim();
    if (home) paths.add(dirname(home));
  }
  try {
    paths.add(dirname(dirname(realpathSync(python))));
  } catch {
    // a missing interpreter fails later, with a message of its own
  }
  return [...paths].filter((p) => p !== '/' && p !== '/usr');
}
