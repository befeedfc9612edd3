// What every action shares, through real bundles: strict inputs (failing with the input's name and no
// stack), config overrides validated like the file, secrets masked before anything is logged, the
// runner's output format, and a job summary that is written once or skipped with a reason.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FIXTURES, tempDir } from '../helpers/paths.js';
import { runActionBundle } from './harness.js';

const t = tempDir('hc-actions-inputs-');
afterAll(t.cleanup);

const CONFIG = `version: 1
targets:
  k:
    editable: [k/**]
    protected: [h/**]
    correctness: {cpu: {command: ["true"]}}
    programs: {module: h.programs}
    bench: {metric: {path: m, direction: lower}}
agent: {kind: command, command: {command: ["true"]}}
`;
writeFileSync(join(t.dir, 'hillclimb.yml'), CONFIG);
execFileSync('git', ['init', '-q', t.dir]);

const ITERATION = { 'run-id': 'r1', iteration: '1' };

describe('action inputs', () => {
  it.each([
    ['kernel-test', { ...ITERATION, gate: 'gpu' }, 'input gate: must be one of cpu, accelerator (got "gpu")'],
    ['iterate', { iteration: '1' }, 'input run-id: required and not supplied'],
    ['profile', { 'run-id': 'r1', iteration: '0' }, 'input iteration: expected a positive integer, got "0"'],
    [
      'iterate',
      { ...ITERATION, 'dry-run': 'yes' },
      'input dry-run: expected true | True | TRUE | false | False | FALSE, got "yes"',
    ],
    [
      'report',
      { ...ITERATION, 'config-overrides': '{"forge.kind": github}' },
      /^input config-overrides: not valid JSON: /,
    ],
    [
      'report',
      { ...ITERATION, 'config-overrides': '["forge.kind"]' },
      'input config-overrides: must be a JSON object',
    ],
    ['tpu', { mode: 'attach' }, /compute\.tpu_vm is not configured\nhint: add compute\.tpu_vm/],
  ] as const)('%s %j fails naming the problem', async (action, inputs, message) => {
    const r = await runActionBundle(action, { cwd: t.dir, inputs });
    expect(r.code).toBe(1);
    expect(r.errors).toHaveLength(1);
    if (typeof message === 'string') expect(r.errors[0]).toBe(message);
    else expect(r.errors[0]).toMatch(message);
    expect(r.errors[0]).not.toMatch(/\s+at .*\.js:\d+/);
    expect(r.outputs).toEqual({});
  });

  it('validates config overrides like the file, naming the key', async () => {
    const r = await runActionBundle('profile', { cwd: t.dir, inputs: { ...ITERATION, backend: 'gpu' } });
    expect(r.code).toBe(1);
    expect(r.errors[0]).toMatch(
      /hillclimb\.yml:\d+: compute\.backend: must be one of local, ray, tpu-vm \(got "gpu"\)/,
    );
    expect(r.errors[0]).toContain('\nhint: ');
  });

  it('masks secret-looking values from the environment before logging anything', async () => {
    const r = await runActionBundle('profile', {
      cwd: t.dir,
      inputs: ITERATION,
      env: {
        GITHUB_TOKEN: 'ghs_maskme0000000001',
        OPENAI_API_KEY: 'sk-maskme0000000002',
        PLAIN_SETTING: 'visible',
      },
    });
    expect(r.stdout.split('\n').slice(0, 2).sort()).toEqual([
      '::add-mask::ghs_maskme0000000001',
      '::add-mask::sk-maskme0000000002',
    ]);
    expect(r.masked).not.toContain('visible');
    // No bundle for this iteration: the phase says what to do next.
    expect(r.errors[0]).toMatch(
      /^no evidence bundle at .*\/\.hillclimb\/runs\/r1\/i001\nhint: run the propose phase first/,
    );
  });

  it('trace-diff analyses two traces by path; outputs use the runner delimiter format', async () => {
    const trace = join(FIXTURES, 'jax-cpu', 'steps', 'plugins', 'profile', 'run', 'cpu.trace.json.gz');
    const out = join(t.dir, 'analysis');
    const r = await runActionBundle('trace-diff', {
      cwd: t.dir,
      inputs: { before: trace, after: trace, 'output-dir': out, top: '5' },
    });
    expect(r.code, r.stdout).toBe(0);
    expect(r.outputs).toMatchObject({
      status: 'done',
      'summary-file': join(out, 'summary.json'),
      'diff-file': join(out, 'diff.json'),
    });
    expect(r.files.output).toMatch(/^status<<(ghadelimiter_[0-9a-f-]{36})\ndone\n\1\n/);
    expect(JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')).schema).toBe(
      'hillclimb.trace-summary/2',
    );
    expect(Number(r.outputs['step-ms-before'])).toBe(Number(r.outputs['step-ms-after']));
    expect(r.summary).toMatch(
      /^## hillclimb trace diff\n\n#### Hotspots \(time per step, top \d+ of \d+ ops by \|Δ\|\)/,
    );
    expect(r.summary).toContain('<details><summary>Trace diff (text)</summary>');
    expect(r.stdout).toContain('::group::hillclimb: trace summary and diff');
  });

  it('without a job summary file (not on a runner), says so instead of failing', async () => {
    const trace = join(FIXTURES, 'jax-cpu', 'steps', 'plugins', 'profile', 'run', 'cpu.trace.json.gz');
    const r = await runActionBundle('trace-diff', {
      cwd: t.dir,
      inputs: { after: trace, 'output-dir': join(t.dir, 'a2') },
      env: { GITHUB_STEP_SUMMARY: undefined },
    });
    expect(r.code).toBe(0);
    expect(r.outputs['diff-file']).toBe('');
    expect(r.stdout).toContain('job summary skipped: GITHUB_STEP_SUMMARY is not set');
  });
});
