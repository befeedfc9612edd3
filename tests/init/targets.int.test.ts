// Two kernels in one repository: `hillclimb init`, then `hillclimb init --add-target` for the second.
// The first target's lines stay as they were, the workflows' path filters cover both targets (and stay
// clean under actionlint and zizmor), a taken name or a repository-wide flag is refused, and doctor
// says what each target lacks.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config/load.js';
import { formatChecks, runChecks } from '../../src/doctor/doctor.js';
import { targetChecks } from '../../src/doctor/target.js';
import { REPO_ROOT, tempDir } from '../helpers/paths.js';
import { actionlint } from '../workflows/actionlint.js';
import { hillclimbIn, makeToyRepo, PIN, PIN_FLAGS, TOY_FLAGS } from './scratch.js';

const MM_FLAGS = [
  '--yes',
  '--target',
  'mm',
  '--editable',
  'src/mypkg/mm/**',
  '--programs',
  'bench.mm_target',
  ...PIN_FLAGS,
];

let repo: { dir: string; cleanup: () => void };
const read = (path: string) => readFileSync(join(repo.dir, path), 'utf8');
const workflowFiles = ['pr-evidence.yml', 'baseline.yml'].map((f) => `.github/workflows/${f}`);
let firstConfig: string;
let added: { code: number; stdout: string; stderr: string };

beforeAll(async () => {
  repo = tempDir('hc-init-targets-');
  makeToyRepo(repo.dir);
  mkdirSync(join(repo.dir, 'src/mypkg/mm'));
  writeFileSync(join(repo.dir, 'src/mypkg/mm/matmul.py'), 'def matmul(a, b):\n    return a @ b\n');
  execFileSync('git', ['add', '-A'], { cwd: repo.dir });
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', 'commit', '-qm', 'mm'], {
    cwd: repo.dir,
  });
  const first = await hillclimbIn(repo.dir, ['init', ...TOY_FLAGS]);
  expect(first.code, first.stderr).toBe(0);
  firstConfig = read('hillclimb.yml');
  added = await hillclimbIn(repo.dir, ['init', '--add-target', ...MM_FLAGS]);
});
afterAll(() => repo.cleanup());

describe('hillclimb init --add-target', () => {
  it("adds the second target to hillclimb.yml, leaving the first target's lines as they were", () => {
    expect(added.stderr).toBe('');
    expect(added.code).toBe(0);
    expect(added.stdout).toContain('updated    hillclimb.yml');
    expect(added.stdout).toContain('updated    .github/workflows/pr-evidence.yml');
    expect(added.stdout).toContain('unchanged  hillclimb/prompt.md');
    expect(added.stdout).toContain('hillclimb init: added target mm beside scale');
    // The next steps name the new target, and its own replay folder.
    expect(added.stdout).toContain('hillclimb loop --target mm -n 1');
    expect(added.stdout).toContain('put NNNN-*.patch files in hillclimb/replay/mm');

    const config = loadConfig(join(repo.dir, 'hillclimb.yml'));
    expect(Object.keys(config.targets)).toEqual(['scale', 'mm']);
    expect(config.loop.target).toBe('scale');
    expect(config.agent.kind).toBe('replay'); // the repository's, not asked again
    expect(config.targets.mm!.editable).toEqual(['src/mypkg/mm/**']);
    expect(config.targets.mm!.programs.module).toBe('bench.mm_target');
    expect(config.targets.mm!.protected).toContain('bench/mm_target.py');
    // Only lines were added: the first file is the new one without them.
    const firstLines = firstConfig.split('\n');
    const now = read('hillclimb.yml').split('\n');
    const at = now.indexOf('  mm:');
    const end = now.findIndex((l, i) => i > at && /^\S/.test(l)) - 1;
    expect([...now.slice(0, at), ...now.slice(end)]).toEqual(firstLines);
  });

  it("the workflows' path filters cover both targets, and stay clean under actionlint and zizmor", async () => {
    const on = (f: string) => (parse(read(f)) as { on: Record<string, { paths: string[] }> }).on;
    expect(on('.github/workflows/pr-evidence.yml').pull_request?.paths).toEqual([
      'src/mypkg/ops/**',
      'src/mypkg/mm/**',
    ]);
    expect(on('.github/workflows/baseline.yml').push?.paths).toEqual([
      'src/mypkg/ops/**',
      'src/mypkg/mm/**',
      'hillclimb.yml',
    ]);
    for (const f of workflowFiles) expect(await actionlint(join(repo.dir, f)), f).toEqual([]);
    const zizmor = execFileSync(
      join(REPO_ROOT, '.venv', 'bin', 'zizmor'),
      ['--offline', '--format', 'json', '--config', join(REPO_ROOT, '.github', 'zizmor.yml')].concat(
        workflowFiles.map((f) => join(repo.dir, f)),
      ),
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    expect((JSON.parse(zizmor) as Array<{ ident: string }>).map((x) => x.ident)).toEqual([]);
  });

  it('refuses a name already taken, and a flag that is the whole repository’s, writing nothing', async () => {
    const before = [read('hillclimb.yml'), ...workflowFiles.map(read)];
    const taken = await hillclimbIn(repo.dir, [
      'init',
      '--add-target',
      ...TOY_FLAGS.filter((f) => f !== 'replay' && f !== '--agent'),
    ]);
    expect(taken.code).toBe(2);
    expect(taken.stderr).toContain('--target: "scale" is already a target in hillclimb.yml (scale, mm)');
    const shared = await hillclimbIn(repo.dir, [
      'init',
      '--add-target',
      ...MM_FLAGS.map((f) => (f === 'mm' ? 'third' : f)),
      '--base',
      'trunk',
    ]);
    expect(shared.code).toBe(2);
    expect(shared.stderr).toContain("--base: with --add-target it is hillclimb.yml's forge.base");
    expect([read('hillclimb.yml'), ...workflowFiles.map(read)]).toEqual(before);
  });

  it('plain init for another target keeps the file and points to --add-target', async () => {
    const other = await hillclimbIn(repo.dir, ['init', ...MM_FLAGS.map((f) => (f === 'mm' ? 'third' : f))]);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain(
      'hillclimb.yml has target(s) scale, mm; to keep them and add third, run init --add-target',
    );
  });

  it('a plain re-run (a new release pinned with --force) keeps both targets and both filters', async () => {
    const config = read('hillclimb.yml');
    const flags = TOY_FLAGS.map((f) => (f === PIN.commit ? 'b'.repeat(40) : f));
    const r = await hillclimbIn(repo.dir, ['init', ...flags, '--force']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/kept\s+hillclimb\.yml \(targets scale, mm: a re-run leaves it as it is/);
    expect(r.stdout).toMatch(/replaced\s+\.github\/workflows\/pr-evidence\.yml/);
    expect(read('hillclimb.yml')).toBe(config);
    const pr = read('.github/workflows/pr-evidence.yml');
    expect(pr).toContain(`@${'b'.repeat(40)} # hillclimb`);
    expect((parse(pr) as { on: { pull_request: { paths: string[] } } }).on.pull_request.paths).toEqual([
      'src/mypkg/ops/**',
      'src/mypkg/mm/**',
    ]);
  });

  it('doctor says what each target lacks, on a line of its own', async () => {
    mkdirSync(join(repo.dir, 'hillclimb', 'replay'), { recursive: true });
    const env = { HILLCLIMB_PYTHON: join(REPO_ROOT, '.venv', 'bin', 'python') };
    const r = await hillclimbIn(repo.dir, ['doctor'], env);
    expect(r.stdout).toMatch(/ok\s+target module \(scale\)\s+bench\.scale_target/);
    expect(r.stdout).toMatch(
      /MISSING\s+target module \(mm\)\s+bench\.mm_target \(targets\.mm\.programs\.module\)/,
    );
    expect(r.stdout).toMatch(
      /ok\s+workflow filters \(mm\)\s+the workflows' path filters cover targets\.mm\.editable/,
    );
    // mm has no replay folder of its own: it would replay scale's patches.
    expect(r.stdout).toMatch(/ok\s+replay folder \(mm\)\s+hillclimb\/replay\n/);
    expect(r.stdout).toMatch(
      /-\s+own replay folder \(mm\)\s+no hillclimb\/replay\/mm: mm would replay hillclimb\/replay, scale's/,
    );
    expect(r.stdout).toMatch(/ok\s+replay folder \(scale\)\s+hillclimb\/replay\n/);
    expect(r.stdout).toContain(
      'Per target:\n  mm:    lacks target module; also (optional) own replay folder\n  scale: nothing missing\n',
    );
    expect(r.code).toBe(1);

    // A filter that leaves mm out (a target added by hand) is named too.
    const pr = '.github/workflows/pr-evidence.yml';
    const text = read(pr);
    writeFileSync(join(repo.dir, pr), text.replace(', "src/mypkg/mm/**"]', ']'));
    const saved = process.env.HILLCLIMB_PYTHON;
    process.env.HILLCLIMB_PYTHON = env.HILLCLIMB_PYTHON;
    let narrowed: string;
    try {
      narrowed = formatChecks(await runChecks(targetChecks(loadConfig(join(repo.dir, 'hillclimb.yml')))));
    } finally {
      if (saved === undefined) delete process.env.HILLCLIMB_PYTHON;
      else process.env.HILLCLIMB_PYTHON = saved;
      writeFileSync(join(repo.dir, pr), text);
    }
    expect(narrowed).toMatch(
      /-\s+workflow filters \(mm\)\s+pr-evidence\.yml on\.pull_request\.paths lacks src\/mypkg\/mm\/\*\*/,
    );
    expect(narrowed).toContain(
      '  mm:    lacks target module; also (optional) workflow filters, own replay folder\n',
    );
    expect(narrowed).toContain("re-run hillclimb init --force with the first target's answers");
  });
});
