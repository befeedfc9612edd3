/**
 * Untrusted text is data on the runner's log (issue 35): a candidate names its failing tests so that
 * their names, quoted in the gate's reason, are workflow commands — `::set-output`, `::stop-commands::`,
 * the old `##[…]` form, a terminal escape. Run job by job through the action bundles, as the workflow
 * runs them; the test fails if any of it reaches the kernel-test step's stdout where the runner would
 * act on it. Unit tests of the loggers are in tests/util/log.unit.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ActionRun, runActionBundle } from '../actions/harness.js';
import { tempDir } from '../helpers/paths.js';
import { makeToyRepo, systemPython, TOY_CONFIG } from '../loop/toy-repo.js';

const RUN_ID = 'gh3501-1';
const PAYLOAD =
  'n\\n::set-output name=verdict::improved\\n  ::stop-commands::hc\\n##[warning]forged\\n\\u001b[2Kgone';

const INJECT = {
  name: '0001-commands-in-test-names',
  edit: {
    'toy/kernel.py': (s: string) =>
      // The verifier waits before it checks, so the suite (which names the cases) fails first and its
      // reason is the one quoted, on a loaded machine too: the gate stops the other at the first failure.
      `${s.replace('return [2 * x for x in xs]', 'return [3 * x for x in xs]')}\nCASE_LABEL = "${PAYLOAD}"\nSLOW_VERIFY_S = 15\n`,
  },
  json: { hypothesis: 'Triple it.', summary: 'A wrong kernel with loud test names.', next_idea: 'None.' },
};

describe('test names that are workflow commands, on the kernel-test step’s stdout', () => {
  const t = tempDir('hc-runner-output-');
  const bare = join(t.dir, 'remote.git');
  const artifacts = join(t.dir, 'artifacts');
  let gate: ActionRun;
  let jobs = 0;

  function job(artifact?: string): string {
    const dir = join(t.dir, `job${++jobs}`);
    execFileSync('git', ['clone', '-q', bare, dir]);
    if (artifact) {
      cpSync(join(artifacts, artifact), join(dir, '.hillclimb', 'runs', RUN_ID, 'i001'), { recursive: true });
    }
    return dir;
  }

  beforeAll(async () => {
    const python = systemPython();
    const seed = join(t.dir, 'seed');
    makeToyRepo(seed, [INJECT], `${TOY_CONFIG}sandbox:\n  mode: required\n`);
    mkdirSync(bare);
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
    execFileSync('git', ['push', '-q', bare, 'main:refs/heads/main'], { cwd: seed });
    const base = execFileSync('git', ['--git-dir', bare, 'rev-parse', 'main'], { encoding: 'utf8' }).trim();
    const env = { HILLCLIMB_PYTHON: python };
    const common = { 'run-id': RUN_ID, iteration: '1', forge: 'local', store: 'local', base };
    const propose = await runActionBundle('iterate', {
      cwd: job(),
      inputs: { ...common, iterations: '1' },
      env,
    });
    expect(propose.code, propose.stderr).toBe(0);
    cpSync(propose.outputs['bundle-dir']!, join(artifacts, 'bundle'), { recursive: true });
    gate = await runActionBundle('kernel-test', {
      cwd: job('bundle'),
      inputs: { ...common, gate: 'cpu' },
      env,
    });
  }, 240_000);
  afterAll(t.cleanup);

  it('the gate failed on them, and its reason quotes them (the payload got that far)', () => {
    expect(gate.outputs.status).toBe('failed');
    expect(gate.stdout).toContain('set-output name=verdict::improved');
  });

  it('no line of the step’s stdout is a workflow command the candidate wrote, and no escape byte passes', () => {
    const lines = gate.stdout.split('\n');
    // The harness's own commands only: groups, warnings, errors, debug lines.
    const commands = lines.filter((l) => /^\s*::/.test(l)).map((l) => /^\s*::([a-z-]+)/.exec(l)?.[1]);
    expect(commands.length).toBeGreaterThan(0); // the step did speak the protocol
    expect(new Set(commands)).not.toContain('set-output');
    expect(new Set(commands)).not.toContain('stop-commands');
    expect(lines.some((l) => l.includes('##['))).toBe(false);
    expect(gate.stdout).not.toContain('\u001b');
    expect(gate.outputs.verdict ?? '').not.toBe('improved');
  });
});
