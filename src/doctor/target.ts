/**
 * What the loop's target needs in the repository before a first run: the target module (the bench)
 * where Python can import it, hillclimb-bench in the venv, editable globs that match committed files,
 * and the replay agent's folder. Each names the key in hillclimb.yml and what to do.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
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
  if (config.agent.kind === 'replay') {
    const dir = config.agent.replay.dir;
    checks.push({
      name: 'replay folder',
      required: true,
      async run() {
        return existsSync(join(config.root, dir))
          ? { ok: true, detail: dir }
          : {
              ok: false,
              detail: `${dir} (agent.replay.dir) does not exist`,
              hint: 'put NNNN-*.patch files there, or choose another agent.kind',
            };
      },
    });
  }
  return checks;
}

function perTarget(config: HillclimbConfig, target: TargetConfig, suffix: string, python: string): Check[] {
  const key = `targets.${target.name}`;
  return [
    {
      name: `target module${suffix}`,
      required: true,
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
  ];
}
