/**
 * The target-module mistakes a newcomer makes, told from a failed process's log, each with a hint that
 * names what to change. They fail the same way on every try, so they are never retried: the requests
 * and verify steps run the harness without the kernel's code, and a champion's export runs no
 * candidate, so a failure of theirs is the target module's (docs/setup.md, packages/hillclimb-bench).
 *
 * - the kernel imported at the module's top: the requests step (or the verifier) cannot import it, or
 *   the verifier finds it loaded → import the kernel only inside kernel();
 * - the kernel under a folder the export does not put on sys.path → the target's `source_roots`;
 * - a package neither in the tree nor installed → paths.requirements;
 * - an entry point Python cannot find (`programs.module` names no module of the tree), or a module that
 *   runs no step (no `hb.cli(TARGET)` at its end) → programs.module, or the module's last lines;
 * - a verifier that refuses a flag this hillclimb sends (a hillclimb-bench older than it) → hillclimb
 *   setup, or the requirement line's pin.
 */

/** The target module's documented shape, quoted by every hint. */
const README = 'packages/hillclimb-bench/README.md, "A target in thirty lines"';

/** The verifier's refusal when the code under test is loaded in its process (hillclimb_bench.isolation). */
const KERNEL_LOADED = 'the code under test is loaded in the verifier';

/** Which process of the target module failed: its requests or verify step, or an export. */
export type TargetProcess = 'requests' | 'verify' | 'export';

export interface TargetFacts {
  /** The target's name (`targets.<name>`). */
  target: string;
  /** The target module (`targets.<name>.programs.module`), e.g. `bench.softmax_target`. */
  module: string;
  /** Every file of the commit the process ran (its tree). */
  files: readonly string[];
  /** `paths.requirements` of hillclimb.yml. */
  requirements: string;
}

/** The last module Python could not find in `log` (`No module named 'a.b'`), if any. */
export function missingModule(log: string): string | undefined {
  const names = [...log.matchAll(/No module named '([\w.]+)'/g)];
  return names.at(-1)?.[1];
}

/**
 * The folder of the tree holding `module` (`a.b` as `<folder>/a/b.py` or `<folder>/a/b/…`; `.` for the
 * root), the shallowest when there are several; undefined when the tree has none.
 */
export function folderHolding(module: string, files: readonly string[]): string | undefined {
  const names = module.split('.');
  const last = names.length - 1;
  let best: string[] | undefined;
  for (const file of files) {
    const parts = file.split('/');
    for (let at = 0; at + last < parts.length; at++) {
      const end = parts[at + last]!;
      const holds =
        names.slice(0, last).every((n, i) => parts[at + i] === n) &&
        (end === `${names[last]}.py` || (end === names[last] && at + last < parts.length - 1));
      if (holds && (best === undefined || at < best.length)) best = parts.slice(0, at);
    }
  }
  return best === undefined ? undefined : best.join('/') || '.';
}

/** The target module's file in the tree (`bench/x_target.py`), as its module path names it. */
export function moduleFile(module: string, files: readonly string[]): string {
  const path = module.replace(/\./g, '/');
  const candidates = [`${path}.py`, `${path}/__main__.py`];
  return files.find((f) => candidates.some((c) => f === c || f.endsWith(`/${c}`))) ?? candidates[0]!;
}

/**
 * What to change when `process` failed with `log` because of a mistake in the target module or its
 * environment; undefined when the log shows none of the known mistakes.
 */
export function targetModuleHint(
  process: TargetProcess,
  log: string,
  facts: TargetFacts,
): string | undefined {
  const entry = entryPointHint(log, facts);
  if (entry !== undefined) return entry;
  const file = moduleFile(facts.module, facts.files);
  const insideKernel = `import the kernel only inside kernel(), which only the export step calls (${README})`;
  if (process === 'verify' && log.includes(KERNEL_LOADED)) {
    return `${file} imports the kernel where the verifier runs it (at the module's top): ${insideKernel}`;
  }
  const missing = missingModule(log);
  if (missing === undefined) return undefined;
  const folder = folderHolding(missing, facts.files);
  if (folder === undefined) {
    const top = missing.split('.')[0]!;
    if (top !== missing && folderHolding(top, facts.files) !== undefined) {
      return `${missing} is not in the committed tree, though ${top} is: commit its file (git add)`;
    }
    return `${missing} is neither in the tree nor installed in .venv: list the package that provides it in ${facts.requirements} (paths.requirements) and run hillclimb setup`;
  }
  if (process !== 'export') {
    return `${file} imports ${missing} at its top, but the ${process} step runs without the kernel's code (the editable paths) and its source_roots: ${insideKernel}`;
  }
  if (folder === '.') return undefined;
  return `${missing} is under ${folder}/, which the export does not put on sys.path: list that folder in the target's source_roots (hb.Kernel(..., source_roots=("${folder}",)) in ${file}; ${README})`;
}

/** Whether a verifier's log shows the code under test loaded in its process (a target-module mistake). */
export function kernelLoadedInVerifier(log: string): boolean {
  return log.includes(KERNEL_LOADED);
}

/**
 * Whether `log` is Python's own refusal of `python -m <module>`: the module itself (or a package on its
 * path) not found, or a package without `__main__`. Printed without a traceback, so no program error.
 */
export function entryPointMissing(log: string, module: string): boolean {
  const name = module.replace(/\./g, '\\.');
  return new RegExp(
    `: (?:No module named ${name}(?:\\.__main__;|$)|Error while finding module specification for '${name}')`,
    'm',
  ).test(log);
}

/**
 * The first of the flags this hillclimb sent (`sent`: the verifier's own, before `--`) that a verifier
 * refused as unknown (argparse's `unrecognized arguments: --x 1 ...`, as hillclimb-bench prints it after
 * `verify:` and plain argparse after its usage line), if any. A target's own arguments (after `--`)
 * refused by its own parser are not this mistake. The refusal comes from parsing the command line,
 * before any program is loaded.
 */
export function refusedFlag(log: string, sent: readonly string[]): string | undefined {
  for (const m of log.matchAll(/unrecognized arguments: ([^\n]*)/g)) {
    const flag = m[1]!.split(' ').find((word) => word.startsWith('--') && sent.includes(word));
    if (flag !== undefined) return flag;
  }
  return undefined;
}

/** The hint for a verifier that does not know a flag this hillclimb sends: its hillclimb-bench is older. */
export function olderBenchHint(flag: string, facts: Pick<TargetFacts, 'target' | 'requirements'>): string {
  const keep =
    flag === '--min-time-ms'
      ? `, or set targets.${facts.target}.bench.min_time_ms: 0 in hillclimb.yml to keep that release for now`
      : '';
  return (
    `the target module's verifier does not take ${flag}, which this hillclimb sends: the hillclimb-bench in .venv is older than this hillclimb. ` +
    `Run hillclimb setup (a bare hillclimb-bench line in ${facts.requirements} installs the copy inside this hillclimb); ` +
    `a line with a source (@ git+…@<sha>, or a path) installs what it names: move it to this hillclimb's commit${keep}`
  );
}

/** The hint for an entry point Python cannot find, with the tree's nearest module when there is one. */
function entryPointHint(log: string, facts: TargetFacts): string | undefined {
  if (!entryPointMissing(log, facts.module)) return undefined;
  const key = `targets.${facts.target}.programs.module`;
  const near = nearestModule(facts.module, facts.files);
  const meant = near === undefined ? '' : ` (did you mean ${near}?)`;
  return `${facts.module} (${key}) is not a module Python finds from the repository's root: no ${facts.module.replace(/\./g, '/')}.py is committed${meant}; fix ${key} in hillclimb.yml, or commit the target module (${README})`;
}

/** The module of the tree's Python files nearest to `module` (a typo, a folder off), if near enough. */
function nearestModule(module: string, files: readonly string[]): string | undefined {
  const MAX_EDITS = 3;
  let best: { name: string; edits: number } | undefined;
  for (const file of files) {
    if (!file.endsWith('.py') || file.endsWith('__init__.py')) continue;
    const name = file.slice(0, -3).replace(/\//g, '.');
    const edits = editDistance(module, name);
    if (edits <= MAX_EDITS && (best === undefined || edits < best.edits)) best = { name, edits };
  }
  return best?.name;
}

/** Levenshtein distance between two strings. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length]!;
}

/**
 * The hint for a requests step that ended well but wrote no request file: the module ran, and ran no
 * step (it does not end in `hb.cli(TARGET)`, or calls it only under another name).
 */
export function noStepHint(facts: TargetFacts): string {
  const file = moduleFile(facts.module, facts.files);
  return `${file} ran but wrote no request file: a target module ends with \`if __name__ == "__main__": hb.cli(TARGET)\`, which runs the step hillclimb names (${README})`;
}

/** A verifier's refusal of an output off the reference (hillclimb_bench.target.compare). */
const OFF_REFERENCE = /rel_rms (\S+) > tolerance (\S+) \(max_abs (\S+)\)/;

/**
 * The hint for a program the verifier failed (`failing`: `<key>: <its error>`): for an output off the
 * reference, the program, its errors and the tolerance; else the verifier's own words.
 */
export function verificationHint(failing: string, facts: TargetFacts): string {
  const file = moduleFile(facts.module, facts.files);
  const key = failing.slice(0, failing.indexOf(': '));
  const off = OFF_REFERENCE.exec(failing);
  if (off === null) {
    return `the verifier refused ${key} (${failing.slice(key.length + 2)}): the exported program must be a pure computation of its arguments that matches the reference (${README})`;
  }
  const [, rel, tol, maxAbs] = off;
  return `the kernel and the reference disagree on ${key}: max error ${maxAbs}, relative RMS error ${rel} over its tolerance ${tol} (rel_rms_tol); fix the kernel, or the reference in ${file} if it is the one that is wrong`;
}
