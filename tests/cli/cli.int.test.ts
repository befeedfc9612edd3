import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { MINIMAL_CONFIG } from '../helpers/config.js';
import { REPO_ROOT, tempDir } from '../helpers/paths.js';
import { makeToyRepo } from '../loop/toy-repo.js';

const hillclimb = runCli;

describe('hillclimb CLI', () => {
  it('--help lists the verbs', async () => {
    const r = await hillclimb(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Usage: hillclimb');
    expect(r.stdout).toContain('doctor');
    expect(r.stdout).toContain('setup');
    expect(r.stdout).toContain('init');
  });

  it('--version prints the package version', async () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    const r = await hillclimb(['--version']);
    expect(r.stdout.trim()).toBe(pkg.version);
  });

  it('an unknown verb exits 2 with a usage hint, no stack', async () => {
    const r = await hillclimb(['frobnicate']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown command 'frobnicate'");
    expect(r.stderr).not.toMatch(/\s+at .*\.js:\d+/);
  });

  it("iterate --slot names a search's candidate: a bad value or one past loop.candidates exits 2 naming it", async () => {
    const t = tempDir('hc-cli-slot-');
    try {
      makeToyRepo(join(t.dir, 'repo'), []);
      const base = [
        'iterate',
        'propose',
        '--run-id',
        'r1',
        '-i',
        '1',
        '-c',
        join(t.dir, 'repo', 'hillclimb.yml'),
      ];
      const bad = await hillclimb([...base, '--slot', 'two']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--slot must be a positive integer, got "two"');
      const past = await hillclimb([...base, '--slot', '2']);
      expect(past.code).toBe(2);
      expect(past.stderr).toContain('slot 2 is not a candidate of this iteration: loop.candidates is 1');
      expect(past.stderr).not.toMatch(/\s+at .*\.js:\d+/);
    } finally {
      t.cleanup();
    }
  });

  it('doctor passes on this machine (the test command sets up the venv first)', async () => {
    const r = await hillclimb(['doctor']);
    expect(r.stdout).toContain('all required pieces present');
    expect(r.code).toBe(0);
  });

  it('doctor names the missing piece and how to get it, with exit code 1', async () => {
    const t = tempDir();
    try {
      // A project root without a venv, and a git that is not on PATH.
      const r = await hillclimb(['doctor', '--root', t.dir], { PATH: '/nonexistent', HILLCLIMB_PYTHON: '' });
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/MISSING\s+git/);
      expect(r.stdout).toMatch(/MISSING\s+python venv/);
      expect(r.stdout).toContain('git: install git');
      expect(r.stdout).toContain(
        'run: hillclimb setup   (creates .venv and installs kernels/requirements.txt)',
      );
      // No unshare on that PATH: no sandbox, said plainly (optional unless sandbox.mode is required).
      expect(r.stdout).toMatch(/-\s+sandbox\s+cannot build the sandbox/);
      expect(r.stdout).toContain('without it, numbers are unverified and no iteration can be improved');
    } finally {
      t.cleanup();
    }
  });

  it('setup installs the requirements file hillclimb.yml names; doctor and its errors name it too', async () => {
    const t = tempDir();
    try {
      // An adopter's layout: requirements.txt at the root, no kernels/ folder at all.
      writeFileSync(
        join(t.dir, 'hillclimb.yml'),
        `${MINIMAL_CONFIG}paths:\n  requirements: requirements.txt\n`,
      );
      const before = await hillclimb(['doctor', '--root', t.dir], { HILLCLIMB_PYTHON: '' });
      expect(before.stdout).toContain('run: hillclimb setup   (creates .venv and installs requirements.txt)');
      const missing = await hillclimb(['setup', '--root', t.dir]);
      expect(missing.code).not.toBe(0);
      expect(missing.stderr).toContain(
        `requirements file missing: ${join(t.dir, 'requirements.txt')} (paths.requirements in hillclimb.yml)`,
      );
      expect(missing.stderr).not.toMatch(/\n\s+at /); // no stack trace
      // No packages: pip runs for real but needs no network.
      writeFileSync(join(t.dir, 'requirements.txt'), '# nothing to install\n');
      const r = await hillclimb(['setup', '--root', t.dir]);
      expect(r.code, r.stderr).toBe(0);
      expect(existsSync(join(t.dir, '.venv', 'bin', 'python'))).toBe(true);
      expect(JSON.parse(readFileSync(join(t.dir, '.venv', '.hillclimb-setup.json'), 'utf8')).files).toEqual([
        'requirements.txt',
      ]);
    } finally {
      t.cleanup();
    }
  }, 180_000);

  it('doctor makes the sandbox required when hillclimb.yml does', async () => {
    const t = tempDir();
    try {
      writeFileSync(join(t.dir, 'hillclimb.yml'), `${MINIMAL_CONFIG}sandbox:\n  mode: required\n`);
      // A PATH with node on it and no unshare.
      mkdirSync(join(t.dir, 'bin'));
      symlinkSync(process.execPath, join(t.dir, 'bin', 'node'));
      const r = await hillclimb(['doctor', '--root', t.dir], { PATH: join(t.dir, 'bin') });
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/MISSING\s+sandbox/);
      expect(r.stdout).toContain('sandbox.mode is required');
    } finally {
      t.cleanup();
    }
  });

  it('doctor makes what hillclimb.yml names required, and reports an invalid hillclimb.yml', async () => {
    const t = tempDir();
    try {
      const file = join(t.dir, 'hillclimb.yml');
      writeFileSync(file, `${MINIMAL_CONFIG}agent:\n  kind: codex\n  codex: {binary: hc-no-such-codex}\n`);
      const needsCodex = await hillclimb(['doctor', '--root', t.dir]);
      expect(needsCodex.code).toBe(1);
      expect(needsCodex.stdout).toMatch(/ok\s+hillclimb\.yml\s+valid: target k, agent codex, backend local/);
      expect(needsCodex.stdout).toMatch(/MISSING\s+codex\s+hc-no-such-codex not found/);
      expect(needsCodex.stdout).toContain(`codex: agent.kind in ${file} is codex — npm i -g @openai/codex`);

      writeFileSync(file, `${MINIMAL_CONFIG}loop:\n  iterations: many\n`);
      const broken = await hillclimb(['doctor', '--root', t.dir]);
      expect(broken.code).toBe(1);
      expect(broken.stdout).toMatch(
        new RegExp(`MISSING\\s+hillclimb\\.yml\\s+${file}:\\d+: loop\\.iterations: `),
      );
    } finally {
      t.cleanup();
    }
  });

  it('doctor --json returns one result per check', async () => {
    const r = await hillclimb(['doctor', '--json']);
    const results = JSON.parse(r.stdout) as Array<{ name: string; ok: boolean; required: boolean }>;
    expect(results.map((x) => x.name)).toEqual(
      expect.arrayContaining([
        'node',
        'git',
        'python venv',
        'jax',
        'pytest',
        'gcloud',
        'codex',
        'claude',
        'gh',
      ]),
    );
  });
});
