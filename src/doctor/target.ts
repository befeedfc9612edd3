/**
 * What each target needs in the repository before a first run: the target module (the bench) where
 * Python can import it, editable globs that match committed files, the replay agent's folder, and the
 * workflows' path filters covering its editable paths; and hillclimb-bench in the venv. Each names the
 * key in hillclimb.yml (or the workflow) and what to do. With several targets, each check is per target.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { parse } from 'yaml';
import { replayDirFor } from '../agent/index.js';
import type { HillclimbConfig, TargetConfig } from '../config/index.js';
import { venvPython } from '../project/index.js';
import { Git, globsWithoutFiles } from '../workspace/index.js';
import { type Check, versionOf } from './doctor.js';

/** Exit 0 when the interpreter finds the module named in argv[1] (`find_spec` imports nothing). */
const FIND_MODULE = 'import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 1)';

const BENCH_PROBE = [
  'import importlib.metadata as m, importlib.util as u, sys',
  'if u.find_spec("hillclimb_bench") is None: sys.exit(1)',
  'try: print(m.version("hillclimb-bench"))',
  'except m.PackageNotFoundError: print("(from source)")',
].join('\n');

/** Where a module path can live as a file: at the root or under src/, as a module or a package. */
export function moduleFiles(module: string): string[] {
  const path = module.replaceAll('.', '/');
  return ['', 'src/'].flatMap((dir) => [`${dir}${path}.py`, `${dir}${path}/__init__.py`]);
}

export function targetChecks(config: HillclimbConfig): Check[] {
  const targets = Object.values(config.targets).sort((a, b) => a.name.localeCompare(b.name));
  const python = venvPython(config.root);
  const checks = targets.flatMap((t) =>
    perTarget(config, t, targets.length > 1 ? ` (${t.name})` : '', python),
  );
  checks.push({
    name: 'hillclimb-bench',
    required: true,
    async run() {
      const setup = `add it to ${config.paths.requirements} and run: hillclimb setup`;
      if (!existsSync(python)) return { ok: false, detail: 'no venv', hint: setup };
      // Found, not imported; its version when pip installed it (a source folder on a .pth has none).
      const version = await versionOf(python, ['-c', BENCH_PROBE], { cwd: config.root });
      return version !== undefined
        ? { ok: true, detail: `hillclimb-bench ${version} in .venv` }
        : {
            ok: false,
            detail: 'not installed in .venv (the target module builds on it)',
            hint: `hillclimb-bench[jax] (docs/setup.md names the line): ${setup}`,
          };
    },
  });
  if (config.agent.kind === 'replay') checks.push(...replayChecks(config, targets));
  return checks;
}

function perTarget(config: HillclimbConfig, target: TargetConfig, suffix: string, python: string): Check[] {
  const key = `targets.${target.name}`;
  return [
    {
      name: `target module${suffix}`,
      required: true,
      target: target.name,
      async run() {
        const module = target.programs.module;
        const file = moduleFiles(module).find((f) => existsSync(join(config.root, f)));
        if (file) return { ok: true, detail: `${module} (${file})` };
        // Installed instead (an editable install of the user's package): ask the venv, which finds a
        // top-level module without running it.
        if (
          existsSync(python) &&
          !module.includes('.') &&
          (await versionOf(python, ['-c', FIND_MODULE, module], { cwd: config.root })) !== undefined
        ) {
          return { ok: true, detail: `${module} (installed in .venv)` };
        }
        return {
          ok: false,
          detail: `${module} (${key}.programs.module): no ${moduleFiles(module).join(', ')}`,
          hint:
            `write it: a hillclimb_bench target ending in hillclimb_bench.cli(TARGET) ` +
            '(packages/hillclimb-bench/README.md in hillclimb), or fix programs.module in hillclimb.yml',
        };
      },
    },
    {
      name: `editable paths${suffix}`,
      required: true,
      target: target.name,
      async run() {
        const git = await Git.create(config.root).catch(() => undefined);
        if (!git)
          return { ok: false, detail: `${config.root} is not a git repository`, hint: 'run git init' };
        const empty = await globsWithoutFiles(git, target.editable);
        return empty.length === 0
          ? { ok: true, detail: `${target.editable.length} glob(s), each matching committed files` }
          : {
              ok: false,
              detail: `${key}.editable: ${empty.join(', ')} match(es) no file committed at HEAD`,
              hint: 'commit the kernel the agent is to change, or fix the glob in hillclimb.yml',
            };
      },
    },
    workflowFiltersCheck(config, target, suffix),
  ];
}

/**
 * Each target's replay folder (replayDirFor): its own `<dir>/<target>`, else agent.replay.dir itself
 * (required: the replay agent reads it). That shared folder is the default target's (loop.target; the
 * single-target layout): another target reading it would replay the default target's patches, which an
 * optional check per such target says.
 */
function replayChecks(config: HillclimbConfig, targets: readonly TargetConfig[]): Check[] {
  const dir = config.agent.replay.dir;
  const abs = isAbsolute(dir) ? dir : resolve(config.root, dir);
  const several = targets.length > 1;
  const owner = several ? config.loop.target : targets[0]?.name;
  const suffix = (t: TargetConfig) => (several ? ` (${t.name})` : '');
  const present = (t: TargetConfig): Check => ({
    name: `replay folder${suffix(t)}`,
    required: true,
    target: t.name,
    async run() {
      const folder = replayDirFor(abs, t.name);
      if (existsSync(folder)) return { ok: true, detail: folder === abs ? dir : `${dir}/${t.name}` };
      return several
        ? {
            ok: false,
            detail: `neither ${dir}/${t.name} nor ${dir} (agent.replay.dir) exists`,
            hint: `put ${t.name}'s NNNN-*.patch files in ${dir}/${t.name}/, or choose another agent.kind`,
          }
        : {
            ok: false,
            detail: `${dir} (agent.replay.dir) does not exist`,
            hint: 'put NNNN-*.patch files there, or choose another agent.kind',
          };
    },
  });
  const own = (t: TargetConfig): Check => ({
    name: `own replay folder${suffix(t)}`,
    required: false,
    target: t.name,
    async run() {
      if (replayDirFor(abs, t.name) !== abs) return { ok: true, detail: `${dir}/${t.name}` };
      const whose =
        owner === undefined ? 'the one every target without a folder of its own reads' : `${owner}'s`;
      return {
        ok: false,
        detail: `no ${dir}/${t.name}: ${t.name} would replay ${dir}, ${whose}`,
        hint: `put ${t.name}'s NNNN-*.patch files in ${dir}/${t.name}/ (each target its own folder)`,
      };
    },
  });
  return targets.flatMap((t) => (several && t.name !== owner ? [present(t), own(t)] : [present(t)]));
}

/** The workflows init writes whose path filters decide when a change to a target gets evidence. */
const FILTERED_WORKFLOWS = [
  { file: 'pr-evidence.yml', event: 'pull_request' },
  { file: 'baseline.yml', event: 'push' },
] as const;

/** Whether a path filter list runs the workflow for a change under `glob` (absent list: every change). */
export function filterCovers(filters: readonly string[] | undefined, glob: string): boolean {
  if (filters === undefined) return true;
  return filters.some((f) => {
    if (f === glob || f === '**') return true;
    const folder = /^(.*)\/\*\*$/.exec(f)?.[1];
    return folder !== undefined && !/[*?[]/.test(folder) && glob.startsWith(`${folder}/`);
  });
}

/**
 * The target's editable globs in the `paths:` filters of pr-evidence.yml and baseline.yml, where they
 * exist: a target left out gets no PR evidence and no baseline. Optional: the loop runs without them.
 */
function workflowFiltersCheck(config: HillclimbConfig, target: TargetConfig, suffix: string): Check {
  return {
    name: `workflow filters${suffix}`,
    required: false,
    target: target.name,
    async run() {
      const missing: string[] = [];
      let read = 0;
      for (const { file, event } of FILTERED_WORKFLOWS) {
        const path = join(config.root, '.github', 'workflows', file);
        if (!existsSync(path)) continue;
        let filters: string[] | undefined;
        try {
          const on = (parse(readFileSync(path, 'utf8')) as { on?: Record<string, unknown> } | null)?.on;
          const paths = (on?.[event] as { paths?: unknown } | null | undefined)?.paths;
          filters = Array.isArray(paths) ? paths.map(String) : undefined;
        } catch {
          continue; // the workflows check and actionlint report a broken file
        }
        read++;
        const left = target.editable.filter((g) => !filterCovers(filters, g));
        if (left.length > 0) missing.push(`${file} on.${event}.paths lacks ${left.join(', ')}`);
      }
      if (read === 0) return { ok: true, detail: 'no pr-evidence.yml or baseline.yml to filter' };
      return missing.length === 0
        ? { ok: true, detail: `the workflows' path filters cover targets.${target.name}.editable` }
        : {
            ok: false,
            detail: missing.join('; '),
            hint: `add targets.${target.name}.editable to those paths: filters, or re-run hillclimb init --force with the first target's answers (with several targets it keeps hillclimb.yml and lists every target's)`,
          };
    },
  };
}
