import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fillCommand } from '../../src/config/command.js';
import { loadConfig, nearest, parseConfig, selectTarget } from '../../src/config/load.js';
import { ConfigError } from '../../src/util/errors.js';
import { MINIMAL_CONFIG } from '../helpers/config.js';
import { REPO_ROOT } from '../helpers/paths.js';

const MINIMAL = MINIMAL_CONFIG;

function configError(text: string, overrides = {}): ConfigError {
  try {
    parseConfig(text, '/repo/hillclimb.yml', overrides);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

describe('parseConfig', () => {
  it('fills every default from the schema', () => {
    const c = parseConfig(MINIMAL, '/repo/hillclimb.yml');
    expect(c.root).toBe('/repo');
    expect(c.loop.iterations).toBe(3);
    expect(c.loop.dirty_tree).toBe('fail');
    expect(c.measure).toMatchObject({
      runs_per_arm: 5,
      max_runs_per_arm: 15,
      confidence: 0.95,
      resamples: 2000,
    });
    expect(c.agent.kind).toBe('replay');
    expect(c.agent.replay.dir).toBe('examples/replay/gdn');
    expect(c.agent.codex.binary).toBe('codex');
    expect(c.compute.backend).toBe('local');
    expect(c.forge).toMatchObject({ kind: 'local', base: 'main', draft: true });
    expect(c.paths.state_dir).toBe('.hillclimb');
    const t = c.targets.k!;
    expect(t.name).toBe('k');
    expect(t.correctness.cpu.timeout_minutes).toBe(20);
    expect(t.bench.mfu_path).toBe('measurements.fwd_bwd.mfu');
    expect(t.static_checks).toEqual([]);
  });

  it('names the key path and line of an invalid enum value', () => {
    const e = configError(MINIMAL.replace('direction: lower', 'direction: down'));
    expect(e.keyPath).toBe('targets.k.bench.metric.direction');
    expect(e.line).toBe(14);
    expect(e.message).toContain('/repo/hillclimb.yml:14');
    expect(e.message).toContain('must be one of higher, lower (got "down")');
    expect(e.exitCode).toBe(2);
  });

  it('suggests the nearest key for a typo', () => {
    const e = configError(`${MINIMAL}loop:\n  iteratons: 4\n`);
    expect(e.keyPath).toBe('loop.iteratons');
    expect(e.line).toBe(16);
    expect(e.message).toContain('unknown key "iteratons" (did you mean "iterations"?)');
  });

  it('reports a missing required key at its parent', () => {
    const e = configError(MINIMAL.replace('    editable: [kernels/k/**]\n', ''));
    expect(e.keyPath).toBe('targets.k.editable');
    expect(e.message).toContain('missing required key');
    expect(e.line).toBe(3);
  });

  it('names what replaced a retired bench or profile command', () => {
    const bench = configError(
      MINIMAL.replace('    bench:\n', '    bench:\n      command: [python, bench.py]\n'),
    );
    expect(bench.keyPath).toBe('targets.k.bench.command');
    expect(bench.message).toContain(
      'is no longer read: a bench that imports the candidate cannot be believed',
    );
    expect(bench.message).toContain('targets.<target>.programs.module');
    const profile = configError(`${MINIMAL}    profile:\n      command: [python, bench.py]\n`);
    expect(profile.keyPath).toBe('targets.k.profile.command');
    expect(profile.message).toContain('the profile traces the verified programs');
  });

  it('rejects a shell string where a command array is expected', () => {
    const e = configError(
      MINIMAL.replace('command: ["{python}", "-m", "pytest", "kernels"]', 'command: "pytest kernels"'),
    );
    expect(e.keyPath).toBe('targets.k.correctness.cpu.command');
    expect(e.message).toContain('must be array');
  });

  it('lists several problems in one error', () => {
    const e = configError(`${MINIMAL}loop:\n  iterations: 0\n  dirty_tree: nuke\n`);
    expect(e.message).toContain('loop.iterations');
    expect(e.message).toContain('loop.dirty_tree');
  });

  it('reports invalid YAML with its line', () => {
    const e = configError('version: 1\ntargets:\n  k: [unclosed\n');
    expect(e.message).toContain('invalid YAML');
    expect(e.line).toBeGreaterThan(0);
  });

  it('applies cross-field rules and names the conflicting keys', () => {
    expect(configError(`${MINIMAL}loop:\n  target: nope\n`).message).toContain('names target "nope"');
    expect(configError(`${MINIMAL}compute:\n  backend: ray\n`).keyPath).toBe('compute.ray');
    expect(configError(`${MINIMAL}measure:\n  runs_per_arm: 9\n  max_runs_per_arm: 5\n`).message).toContain(
      'below measure.runs_per_arm',
    );
    expect(configError(`${MINIMAL}search:\n  screen_rounds: 4\n  screen_max_rounds: 3\n`)).toMatchObject({
      keyPath: 'search.screen_max_rounds',
      message: expect.stringContaining('below search.screen_rounds (4)'),
    });
    expect(configError(MINIMAL.replace('    programs:\n      module: bench\n', '')).keyPath).toBe(
      'targets.k.programs',
    );
    expect(configError(MINIMAL.replace('"kernels"]', '"{kernel}"]')).message).toContain(
      'unknown placeholder {kernel}',
    );
    expect(configError(`${MINIMAL}agent:\n  kind: command\n`).keyPath).toBe('agent.command');
  });

  it('validates command-line overrides like file values', () => {
    expect(parseConfig(MINIMAL, '/repo/hillclimb.yml', { 'loop.iterations': 7 }).loop.iterations).toBe(7);
    const e = configError(MINIMAL, { 'agent.kind': 'gpt' });
    expect(e.keyPath).toBe('agent.kind');
  });

  it('takes measure.regression_delta when given (absent, the statistics use practical_delta) and refuses too few resamples', () => {
    expect(parseConfig(MINIMAL, '/repo/hillclimb.yml').measure.regression_delta).toBeUndefined();
    const c = parseConfig(`${MINIMAL}measure:\n  regression_delta: 0.005\n`, '/repo/hillclimb.yml');
    expect(c.measure).toMatchObject({ regression_delta: 0.005, practical_delta: 0.02 });
    expect(configError(`${MINIMAL}measure:\n  regression_delta: 1\n`).keyPath).toBe(
      'measure.regression_delta',
    );
    // The statistics refuse fewer than 2000 resamples; the schema says so before a run starts.
    expect(configError(`${MINIMAL}measure:\n  resamples: 1500\n`).keyPath).toBe('measure.resamples');
  });
});

describe('selectTarget', () => {
  it('picks the only target, or the named one, and lists the known ones otherwise', () => {
    const c = parseConfig(MINIMAL, '/repo/hillclimb.yml');
    expect(selectTarget(c).name).toBe('k');
    expect(() => selectTarget(c, 'other')).toThrow('no target "other"; known: k');
  });
});

describe('the repository hillclimb.yml', () => {
  it('is valid and names the GDN target with its editable and protected paths', () => {
    const c = loadConfig(join(REPO_ROOT, 'hillclimb.yml'));
    const gdn = selectTarget(c);
    expect(gdn.name).toBe('gdn');
    expect(gdn.editable).toEqual(['kernels/gdn/**']);
    expect(gdn.protected).toEqual(
      expect.arrayContaining(['kernels/harness/**', 'hillclimb.yml', '.github/**']),
    );
  });

  it('names the matmul target: only its kernel editable, its harness and all that gdn protects protected', () => {
    const c = loadConfig(join(REPO_ROOT, 'hillclimb.yml'));
    const matmul = selectTarget(c, 'matmul');
    expect(matmul.editable).toEqual(['kernels/matmul/**']);
    expect(matmul.protected).toEqual(
      expect.arrayContaining([
        'kernels/matmul_harness/**',
        'packages/**', // hillclimb-bench, which its bench builds on
        ...selectTarget(c, 'gdn').protected,
      ]),
    );
    expect(matmul.bench.metric.path).toBe('measurements.fwd.median_ms');
  });

  it('a missing file gives a hint instead of a stack', () => {
    expect(() => loadConfig('/nonexistent/hillclimb.yml')).toThrow(/file not found/);
  });
});

describe('fillCommand and nearest', () => {
  it('fills placeholders inside arguments and refuses to run with one left unfilled', () => {
    expect(fillCommand(['{python}', '--junitxml={junit}'], { python: 'py', junit: '/t/j.xml' })).toEqual([
      'py',
      '--junitxml=/t/j.xml',
    ]);
    expect(() => fillCommand(['{python}', '{metrics}'], { python: 'py' })).toThrow('{metrics}');
  });

  it('suggests only plausible near misses', () => {
    expect(nearest('iteratons', ['iterations', 'target'])).toBe('iterations');
    expect(nearest('zzzzzz', ['iterations', 'target'])).toBeUndefined();
  });
});
