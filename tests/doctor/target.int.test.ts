/**
 * doctor's checks of what a first run needs in the repository (src/doctor/target.ts): the target
 * module, hillclimb-bench in the venv, editable globs that match committed files, the replay folder;
 * and where the agent's key goes. On a real git repository, as a newcomer has it right after `init`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/index.js';
import { keyRouteCheck, runChecks } from '../../src/doctor/doctor.js';
import { targetChecks } from '../../src/doctor/target.js';
import { MINIMAL_CONFIG } from '../helpers/config.js';
import { REPO_ROOT, tempDir } from '../helpers/paths.js';
import { git, writeFiles } from '../workspace/repo.js';

const t = tempDir('hc-doctor-target-');
afterAll(t.cleanup);
const savedPython = process.env.HILLCLIMB_PYTHON;
afterEach(() => {
  if (savedPython === undefined) delete process.env.HILLCLIMB_PYTHON;
  else process.env.HILLCLIMB_PYTHON = savedPython;
});

const CONFIG = `${MINIMAL_CONFIG}agent:\n  kind: replay\n  replay: {dir: hillclimb/replay}\npaths:\n  requirements: requirements.txt\n`;

function freshRepo(name: string): string {
  const root = join(t.dir, name);
  mkdirSync(root);
  git(root, 'init', '-q', '-b', 'main');
  writeFiles(root, { 'hillclimb.yml': CONFIG, 'README.md': 'mine\n' });
  git(root, 'add', '-A');
  git(root, 'commit', '-q', '-m', 'init');
  return root;
}

const check = async (root: string) => {
  const results = await runChecks(targetChecks(parseConfig(CONFIG, join(root, 'hillclimb.yml'))));
  return Object.fromEntries(results.map((r) => [r.name, r]));
};

describe('doctor: what the target needs', () => {
  it('right after init: no bench, no hillclimb-bench, a kernel not committed, no replay folder — each named with its key and fix', async () => {
    const root = freshRepo('after-init');
    process.env.HILLCLIMB_PYTHON = join(root, '.venv', 'bin', 'python'); // none yet
    const r = await check(root);
    expect(r['target module']).toMatchObject({
      ok: false,
      required: true,
      detail: expect.stringContaining('bench (targets.k.programs.module): no bench.py'),
      hint: expect.stringContaining('hillclimb_bench.cli(TARGET)'),
    });
    expect(r['hillclimb-bench']).toMatchObject({
      ok: false,
      hint: expect.stringContaining('add it to requirements.txt and run: hillclimb setup'),
    });
    expect(r['editable paths']).toMatchObject({
      ok: false,
      detail: 'targets.k.editable: kernels/k/** match(es) no file committed at HEAD',
    });
    expect(r['replay folder']).toMatchObject({
      ok: false,
      detail: 'hillclimb/replay (agent.replay.dir) does not exist',
    });
  });

  it('once the bench is written, the kernel committed and the venv has hillclimb-bench, every check passes', async () => {
    const root = freshRepo('ready');
    writeFiles(root, { 'bench.py': '# the target module\n', 'kernels/k/op.py': 'X = 1\n' });
    mkdirSync(join(root, 'hillclimb', 'replay'), { recursive: true });
    git(root, 'add', '-A');
    git(root, 'commit', '-q', '-m', 'kernel and bench');
    process.env.HILLCLIMB_PYTHON = join(REPO_ROOT, '.venv', 'bin', 'python'); // has hillclimb-bench
    const r = await check(root);
    expect(Object.values(r).filter((c) => !c.ok)).toEqual([]);
    expect(r['target module']!.detail).toBe('bench (bench.py)');
    expect(r['hillclimb-bench']!.detail).toMatch(/^hillclimb-bench \d+\.\d+\.\d+ in \.venv$/);
  });

  it('finds hillclimb-bench from a source folder on a .pth too (no installed metadata)', async () => {
    const root = freshRepo('bench-from-source');
    const venv = join(root, '.venv');
    execFileSync(join(REPO_ROOT, '.venv', 'bin', 'python'), ['-m', 'venv', '--without-pip', venv]);
    const pyDir = readdirSync(join(venv, 'lib')).find((d) => d.startsWith('python'))!;
    writeFileSync(
      join(venv, 'lib', pyDir, 'site-packages', 'bench.pth'),
      `${join(REPO_ROOT, 'packages', 'hillclimb-bench', 'src')}\n`,
    );
    process.env.HILLCLIMB_PYTHON = join(venv, 'bin', 'python');
    const r = await check(root);
    expect(r['hillclimb-bench']).toMatchObject({
      ok: true,
      detail: 'hillclimb-bench (from source) in .venv',
    });
  });

  it('finds a target module under src/ (a src layout)', async () => {
    const root = freshRepo('src-layout');
    writeFiles(root, { 'src/bench/__init__.py': '' });
    const r = await check(root);
    expect(r['target module']).toMatchObject({ ok: true, detail: 'bench (src/bench/__init__.py)' });
  });
});

describe("doctor: where the agent's key goes", () => {
  it('an API key is held by the proxy; without one the CLI would hold its own login and the network', async () => {
    const [held] = await runChecks([keyRouteCheck('codex', { OPENAI_API_KEY: 'sk-x' })]);
    expect(held).toMatchObject({ ok: true, required: false });
    expect(held!.detail).toContain("held by the harness's key proxy, forwarded to https://api.openai.com/v1");
    const [login] = await runChecks([keyRouteCheck('claude', {})]);
    expect(login).toMatchObject({ ok: false, required: false });
    expect(login!.detail).toContain('no ANTHROPIC_API_KEY here: claude would sign in with its own login');
  });
});
