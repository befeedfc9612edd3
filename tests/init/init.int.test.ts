// `hillclimb init` in a repository that is not hillclimb: what it writes, that the engine accepts it,
// that it is idempotent and never overwrites a user's file without --force, and that bad answers are
// refused naming the flag.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig, selectTarget } from '../../src/config/load.js';
import { REPO_ROOT, tempDir } from '../helpers/paths.js';
import { hillclimbIn, makeToyRepo, PIN, PIN_FLAGS, TOY_FLAGS } from './scratch.js';

const WRITTEN = [
  'hillclimb.yml',
  '.github/workflows/hillclimb.yml',
  '.github/workflows/pr-evidence.yml',
  '.github/workflows/baseline.yml',
  '.github/workflows/janitor.yml',
  'hillclimb/prompt.md',
  'hillclimb/directives/measure-first.md',
];

let repo: { dir: string; cleanup: () => void };
beforeEach(() => {
  repo = tempDir('hc-init-');
  makeToyRepo(repo.dir);
});
afterEach(() => repo.cleanup());

const read = (path: string) => readFileSync(join(repo.dir, path), 'utf8');

describe('hillclimb init --yes', () => {
  it('writes the config, the pinned workflows and a starter prompt that the engine and doctor accept', async () => {
    const r = await hillclimbIn(repo.dir, ['init', ...TOY_FLAGS]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    for (const f of WRITTEN) expect(r.stdout).toContain(`created  ${f}`);
    expect(r.stdout).toContain(`actions pinned to ${PIN.repository}@${PIN.commit}`);
    expect(r.stdout).toContain('Next steps:');
    expect(r.stdout).toContain('dry-run=true');

    const config = loadConfig(join(repo.dir, 'hillclimb.yml'));
    const target = selectTarget(config);
    expect(target.name).toBe('scale');
    expect(target.editable).toEqual(['src/mypkg/ops/**']);
    // Defaults: CI, the config, init's folder, the tests, the requirements and the target module (as a
    // module and as a package: it need not exist yet).
    expect(target.protected).toEqual([
      '.github/**',
      'hillclimb.yml',
      'hillclimb/**',
      'tests/**',
      'requirements.txt',
      'bench/scale_target.py',
      'bench/scale_target/**',
    ]);
    expect(target.correctness.cpu.command).toEqual([
      '{python}',
      '-m',
      'pytest',
      'tests',
      '-q',
      '--junitxml={junit}',
    ]);
    expect(target.programs).toEqual({ module: 'bench.scale_target', args: [], timeout_minutes: 15 });
    expect(target.bench.metric).toEqual({ path: 'measurements.fwd.median_ms', direction: 'lower' });
    expect(target.bench.mfu_path).toBe('measurements.fwd.mfu');
    expect(target.profile).toEqual({ repeats: 3, timeout_minutes: 20 });
    expect(config.forge.base).toBe('main');
    expect(config.paths.prompt).toBe('hillclimb/prompt.md');
    expect(config.paths.directives_dir).toBe('hillclimb/directives');
    expect(config.paths.requirements).toBe('requirements.txt');

    // The starter prompt and directive are hillclimb's own.
    expect(read('hillclimb/prompt.md')).toBe(
      readFileSync(join(REPO_ROOT, 'prompts', 'iteration.md'), 'utf8'),
    );
    expect(read('hillclimb/directives/measure-first.md')).toBe(
      readFileSync(join(REPO_ROOT, 'session_directives', 'measure-first.md'), 'utf8'),
    );
    // Every hillclimb action pinned; nothing of this repository's layout left in the workflows' logic.
    for (const f of WRITTEN.filter((w) => w.startsWith('.github/'))) {
      const text = read(f);
      expect(text).not.toMatch(/uses:\s+\.\//);
      expect(text).toMatch(new RegExp(`uses: ${PIN.repository}/actions/[a-z-]+@${PIN.commit} # hillclimb`));
      expect(text).not.toContain('kernels/requirements.txt');
    }

    const env = { HILLCLIMB_PYTHON: join(REPO_ROOT, '.venv', 'bin', 'python') };
    const doctor = await hillclimbIn(repo.dir, ['doctor'], env);
    expect(doctor.stdout).toMatch(/ok\s+hillclimb\.yml\s+valid: target scale, agent replay, backend local/);
    expect(doctor.stdout).toMatch(/ok\s+prompt\s+hillclimb\/prompt\.md/);
    expect(doctor.stdout).toMatch(
      /ok\s+workflows\s+4 workflow\(s\) run acme\/hillclimb actions at aaaaaaaaaaaa/,
    );
    expect(doctor.stdout).toMatch(/ok\s+target module\s+bench\.scale_target \(bench\/scale_target\.py\)/);
    // What init cannot write is still to do, and doctor says so: the replay agent's patches.
    expect(doctor.stdout).toMatch(
      /MISSING\s+replay folder\s+hillclimb\/replay \(agent\.replay\.dir\) does not exist/,
    );
    expect(doctor.code).toBe(1);
    // The next steps done: doctor is content.
    mkdirSync(join(repo.dir, 'hillclimb', 'replay'));
    const after = await hillclimbIn(repo.dir, ['doctor'], env);
    expect(after.stdout).toContain('doctor: all required pieces present');
    expect(after.code).toBe(0);
  });

  it('offers the command agent: its command goes into hillclimb.yml as an argument array', async () => {
    const flags = [...TOY_FLAGS];
    flags[flags.indexOf('replay')] = 'command';
    const r = await hillclimbIn(repo.dir, [
      'init',
      ...flags,
      '--agent-command',
      'python tools/my_agent.py --fast',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const config = loadConfig(join(repo.dir, 'hillclimb.yml'));
    expect(config.agent.kind).toBe('command');
    expect(config.agent.command).toEqual({
      command: ['python', 'tools/my_agent.py', '--fast'],
      network: 'none',
    });
    expect(r.stdout).toContain('no model key for the command agent');
  });

  it('doctor reports mixed or movable pins in the workflows, and a missing prompt', async () => {
    expect((await hillclimbIn(repo.dir, ['init', ...TOY_FLAGS])).code).toBe(0);
    const baseline = join(repo.dir, '.github/workflows/baseline.yml');
    writeFileSync(
      baseline,
      read('.github/workflows/baseline.yml').replace(`kernel-test@${PIN.commit}`, 'kernel-test@v1'),
    );
    rmSync(join(repo.dir, 'hillclimb/prompt.md'));
    const env = { HILLCLIMB_PYTHON: join(REPO_ROOT, '.venv', 'bin', 'python') };
    const r = await hillclimbIn(repo.dir, ['doctor'], env);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/MISSING\s+prompt\s+missing: hillclimb\/prompt\.md/);
    expect(r.stdout).toContain(
      'baseline.yml pins acme/hillclimb/actions/kernel-test to "v1", not a full commit SHA',
    );
    expect(r.stdout).toContain(
      `mixed hillclimb releases: acme/hillclimb@${PIN.commit} (baseline.yml, hillclimb.yml, janitor.yml, pr-evidence.yml); acme/hillclimb@v1 (baseline.yml)`,
    );
    expect(r.stdout).toContain('re-run hillclimb init (with --force) to pin one release');
  });

  it('a second run with the same answers changes nothing and says so', async () => {
    expect((await hillclimbIn(repo.dir, ['init', ...TOY_FLAGS])).code).toBe(0);
    const before = Object.fromEntries(WRITTEN.map((f) => [f, read(f)]));
    const again = await hillclimbIn(repo.dir, ['init', ...TOY_FLAGS]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('hillclimb init: nothing to change');
    for (const f of WRITTEN) expect(again.stdout).toContain(`unchanged  ${f}`);
    expect(Object.fromEntries(WRITTEN.map((f) => [f, read(f)]))).toEqual(before);
  });

  it("keeps a user's edited file without --force, naming it, and replaces it with --force", async () => {
    expect((await hillclimbIn(repo.dir, ['init', ...TOY_FLAGS])).code).toBe(0);
    const edited = `${read('hillclimb/prompt.md')}\nOur own rule: never touch the dtype.\n`;
    writeFileSync(join(repo.dir, 'hillclimb/prompt.md'), edited);
    const workflow = read('.github/workflows/hillclimb.yml');

    const kept = await hillclimbIn(repo.dir, ['init', ...TOY_FLAGS]);
    expect(kept.code).toBe(1);
    expect(kept.stderr).toContain('differ from what init writes: hillclimb/prompt.md');
    expect(kept.stderr).toContain('--force');
    expect(kept.stdout).toContain('differs    hillclimb/prompt.md');
    expect(kept.stdout).not.toContain('nothing to change');
    expect(read('hillclimb/prompt.md')).toBe(edited);

    // A new answer (another default branch) changes the workflows: also kept until --force.
    const moved = await hillclimbIn(repo.dir, ['init', ...TOY_FLAGS, '--base', 'trunk']);
    expect(moved.code).toBe(1);
    expect(moved.stderr).toContain('.github/workflows/baseline.yml');
    expect(read('.github/workflows/hillclimb.yml')).toBe(workflow);

    const forced = await hillclimbIn(repo.dir, ['init', ...TOY_FLAGS, '--force']);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain('replaced   hillclimb/prompt.md');
    expect(read('hillclimb/prompt.md')).toBe(
      readFileSync(join(REPO_ROOT, 'prompts', 'iteration.md'), 'utf8'),
    );
  });
});

describe('hillclimb init answers', () => {
  it('--protected replaces the detected paths, but CI, the config and its own folder stay protected', async () => {
    const r = await hillclimbIn(repo.dir, [
      'init',
      ...TOY_FLAGS,
      '--protected',
      'tests/**,src/mypkg/ops/ref.py',
    ]);
    expect(r.code).toBe(0);
    expect(selectTarget(loadConfig(join(repo.dir, 'hillclimb.yml'))).protected).toEqual([
      '.github/**',
      'hillclimb.yml',
      'hillclimb/**',
      'tests/**',
      'src/mypkg/ops/ref.py',
    ]);
  });

  it('warns when an editable glob matches no committed file', async () => {
    const r = await hillclimbIn(repo.dir, ['init', ...TOY_FLAGS, '--editable', 'src/mypkg/kernels/**']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(
      'warning: --editable src/mypkg/kernels/** matches no file committed at HEAD: the agent could only add files there',
    );
    expect(r.stderr).not.toContain('src/mypkg/ops/**');
  });

  // A pyproject-only repository (issue 37): no requirements.txt, its dependencies in pyproject.toml.
  it('warns when the requirements file is missing, offering the pyproject.toml there is', async () => {
    rmSync(join(repo.dir, 'requirements.txt'));
    const r = await hillclimbIn(repo.dir, ['init', ...TOY_FLAGS]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(
      'warning: --requirements requirements.txt does not exist: hillclimb setup and the workflows install it, so write it before hillclimb setup (JAX, pytest, hillclimb-bench[jax] and what your kernel imports); or pass --requirements pyproject.toml[<extra>] to install the dependencies your pyproject.toml lists, and that extra\n',
    );
  });

  it('takes pyproject.toml[extra] as the requirements: written as given, the file protected, checked', async () => {
    writeFileSync(
      join(repo.dir, 'pyproject.toml'),
      '[project]\nname = "mypkg"\nversion = "0.0.1"\ndependencies = ["jax"]\n\n[project.optional-dependencies]\nhillclimb = ["pytest", "hillclimb-bench[jax]"]\n',
    );
    const r = await hillclimbIn(repo.dir, [
      'init',
      ...TOY_FLAGS,
      '--requirements',
      'pyproject.toml[hillclimb]',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const config = loadConfig(join(repo.dir, 'hillclimb.yml'));
    expect(config.paths.requirements).toBe('pyproject.toml[hillclimb]');
    expect(selectTarget(config).protected).toContain('pyproject.toml');
    expect(r.stdout).toContain("in pyproject.toml's [project.optional-dependencies] hillclimb");
    // An extra the file lacks is named at init, not first at setup.
    const again = await hillclimbIn(repo.dir, [
      'init',
      ...TOY_FLAGS,
      '--requirements',
      'pyproject.toml[test]',
    ]);
    expect(again.stderr).toContain(
      'warning: --requirements pyproject.toml[test]: pyproject.toml: has no optional-dependencies extra "test" (it has: hillclimb)',
    );
  });
});

describe('hillclimb init refuses', () => {
  it('to guess without a terminal: it names the flags to pass, and writes nothing', async () => {
    const r = await hillclimbIn(repo.dir, ['init', '--target', 'scale', ...PIN_FLAGS]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no terminal to ask on');
    expect(r.stderr).toContain('pass --yes with --target, --editable, --programs');
    expect(r.stderr).not.toMatch(/\s+at .*\.js:\d+/);
    expect((await hillclimbIn(repo.dir, ['init', ...TOY_FLAGS])).stdout).toContain('created  hillclimb.yml');
  });

  it.each([
    [
      ['--programs', 'bench/scale_target.py'],
      '--programs: "bench/scale_target.py" is not a Python module name (e.g. bench.my_op, as python -m takes it)',
    ],
    [['--target', 'Scale'], '--target: targets must match pattern'],
    [['--target', 'a: b\nc'], '--target: targets must match pattern'],
    [
      ['--test-command', '{python} -m pytest --junitxml={junitxml}'],
      '--test-command: targets.scale.correctness.cpu.command unknown placeholder {junitxml}',
    ],
    [['--direction', 'down'], '--direction: "down": one of lower, higher'],
    [['--agent', 'gpt'], '--agent: "gpt": one of codex, claude, command, replay'],
    [['--agent', 'command'], '--agent-command: required'],
    [
      ['--requirements', 'reqs.txt; curl evil'],
      '--requirements: "reqs.txt; curl evil" must be a plain relative path',
    ],
    [['--base', '-x'], '--base: "-x" is not a plain branch name'],
    [['--test-command', '"unclosed'], '--test-command: unclosed " quote'],
    [
      ['--hillclimb-ref', 'a'.repeat(12)],
      '--hillclimb-ref: "aaaaaaaaaaaa" is not a full 40-character commit SHA',
    ],
    [['--hillclimb-repo', 'not a repo'], '--hillclimb-repo: "not a repo" is not an owner/name'],
  ])('a bad answer (%j) with an error naming the flag, writing nothing', async (extra, message) => {
    const r = await hillclimbIn(repo.dir, ['init', ...TOY_FLAGS, ...extra]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stderr).not.toMatch(/\s+at .*\.js:\d+/);
    expect(r.stdout).not.toContain('created');
  });

  it('a required answer missing with --yes', async () => {
    const r = await hillclimbIn(repo.dir, [
      'init',
      '--yes',
      '--target',
      'scale',
      '--editable',
      'src/mypkg/ops/**',
      ...PIN_FLAGS,
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--programs: required');
  });

  it('outside a git repository', async () => {
    const t = tempDir('hc-init-nogit-');
    try {
      const r = await hillclimbIn(t.dir, ['init', ...TOY_FLAGS]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('is not inside a git work tree');
    } finally {
      t.cleanup();
    }
  });
});
