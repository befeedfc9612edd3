// The shell in hillclimb.yml that handles untrusted dispatch inputs, run as the runner runs it (bash,
// values in env, GITHUB_OUTPUT file): the setup job's allow-list validation and config overrides, and
// the continue job's dispatch of the next iteration (with a fake gh that records its arguments).
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { REPO_ROOT, tempDir } from '../helpers/paths.js';
import type { Workflow } from './policy.js';

const execFileP = promisify(execFile);
const workflow = parse(
  readFileSync(join(REPO_ROOT, '.github', 'workflows', 'hillclimb.yml'), 'utf8'),
) as Workflow;
const script = (job: string, step: string): string => {
  const s = workflow.jobs?.[job]?.steps?.find((x) => x.id === step || x.name === step);
  if (!s?.run) throw new Error(`no run step ${step} in job ${job}`);
  return s.run;
};

const t = tempDir('hc-dispatch-');
afterAll(t.cleanup);
const RUNNER = {
  GITHUB_RUN_ID: '4242',
  GITHUB_RUN_ATTEMPT: '2',
  GITHUB_REPOSITORY: 'octo/kernels',
  GITHUB_API_URL: 'https://api.github.com',
};

let n = 0;
async function bash(
  run: string,
  env: Record<string, string>,
  cwd = REPO_ROOT,
): Promise<{ code: number; stdout: string; outputs: Record<string, string> }> {
  const output = join(t.dir, `output-${++n}`);
  writeFileSync(output, '');
  // The runner's shell for run steps: bash --noprofile --norc -eo pipefail {0}.
  const file = join(t.dir, `step-${n}.sh`);
  writeFileSync(file, run);
  const r = await execFileP('bash', ['--noprofile', '--norc', '-eo', 'pipefail', file], {
    cwd,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...RUNNER, GITHUB_OUTPUT: output, ...env },
  }).catch((e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }));
  const text = readFileSync(output, 'utf8');
  // Plain `name=value` lines (what the script writes), as the runner reads them.
  const outputs = Object.fromEntries(
    text
      .split('\n')
      .filter(Boolean)
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
  return { code: 'code' in r ? r.code : 0, stdout: r.stdout, outputs };
}

const validate = (env: Record<string, string>) => bash(script('setup', 'inputs'), env);

describe('setup: dispatch inputs', () => {
  it('a scheduled run (no inputs) takes the config defaults and gets the branch store', async () => {
    const r = await validate({});
    expect(r.code).toBe(0);
    expect(r.outputs).toMatchObject({
      'run-id': 'gh4242',
      iteration: '1',
      'iteration-dir': 'i001',
      iterations: '1',
      target: 'gdn',
      agent: 'replay',
      backend: 'local',
      'dry-run': 'false',
      'tpu-run-id': 'gh4242-i1-a2',
      more: 'false',
      next: 'gh4242/2',
    });
    expect(JSON.parse(r.outputs.overrides!)).toEqual({
      'forge.github.repository': 'octo/kernels',
      'forge.github.api_url': 'https://api.github.com',
      'compute.backend': 'local',
      'store.kind': 'branch',
      'loop.iterations': 1,
      'sandbox.mode': 'required',
    });
  });

  it('turns every dispatch input into validated config overrides', async () => {
    const r = await validate({
      IN_TARGET: 'gdn',
      IN_ITERATIONS: '3',
      IN_AGENT: 'codex',
      IN_MODEL: 'gpt-5-codex@high',
      IN_DIRECTIVES: 'measure-first, launch-count',
      IN_BACKEND: 'tpu-vm',
      IN_TPU_TYPE: 'v5p-8',
      IN_ZONES: 'us-east5-a us-central1-a',
      IN_DRY_RUN: 'true',
      IN_RESUME: '',
    });
    expect(r.code, r.stdout).toBe(0);
    expect(r.outputs).toMatchObject({
      agent: 'codex',
      backend: 'tpu-vm',
      // A dry run walks one iteration: no continuation is dispatched.
      more: 'false',
      next: 'gh4242/2',
      'dry-run': 'true',
    });
    expect((await validate({ IN_ITERATIONS: '3', IN_DRY_RUN: 'false' })).outputs.more).toBe('true');
    expect(JSON.parse(r.outputs.overrides!)).toEqual({
      'forge.github.repository': 'octo/kernels',
      'forge.github.api_url': 'https://api.github.com',
      // The backend the jobs are routed by is the one the engine runs on (it was dropped once).
      'compute.backend': 'tpu-vm',
      'store.kind': 'branch',
      'agent.kind': 'codex',
      'agent.codex.model': 'gpt-5-codex',
      'agent.codex.reasoning_effort': 'high',
      'agent.directives': ['measure-first', 'launch-count'],
      'compute.tpu_vm.accelerator_type': 'v5p-8',
      'compute.tpu_vm.zones': ['us-east5-a', 'us-central1-a'],
      'loop.iterations': 3,
      'sandbox.mode': 'required',
    });
    expect(JSON.parse(r.outputs.dispatch!)).toEqual({
      target: 'gdn',
      iterations: '3',
      agent: 'codex',
      model: 'gpt-5-codex@high',
      directives: 'measure-first, launch-count',
      backend: 'tpu-vm',
      'tpu-type': 'v5p-8',
      zones: 'us-east5-a us-central1-a',
      'dry-run': 'true',
    });
  });

  it('backend tpu-vm without the GCP variables fails in setup, naming each one missing', async () => {
    const tpu = { IN_BACKEND: 'tpu-vm' };
    const none = await validate(tpu);
    expect(none.code).toBe(1);
    expect(none.stdout).toContain(
      '::error title=hillclimb input::backend tpu-vm: the repository variable(s) GCP_WORKLOAD_IDENTITY_PROVIDER and GCP_SERVICE_ACCOUNT are not set',
    );
    const one = await validate({ ...tpu, GCP_WIP_SET: 'true', GCP_SA_SET: 'false' });
    expect(one.stdout).toMatch(/variable\(s\) GCP_SERVICE_ACCOUNT are not set/);
    expect((await validate({ ...tpu, GCP_WIP_SET: 'true', GCP_SA_SET: 'true' })).code).toBe(0);
    // A dry run runs no cloud command, and the local backend needs no cloud at all.
    expect((await validate({ ...tpu, IN_DRY_RUN: 'true' })).code).toBe(0);
    expect((await validate({ IN_BACKEND: 'local' })).code).toBe(0);
  });

  it("a search's candidates come from hillclimb.yml: one matrix slot each, none named with one", async () => {
    expect((await validate({})).outputs).toMatchObject({ candidates: '1', slots: '[""]' });
    const dir = join(t.dir, 'search-config');
    mkdirSync(dir, { recursive: true });
    const config = readFileSync(join(REPO_ROOT, 'hillclimb.yml'), 'utf8');
    const withK = (k: string) => {
      const text = config.replace(/^loop:\n/m, `loop:\n  candidates: ${k}\n`);
      if (text === config) throw new Error('hillclimb.yml has no loop: section');
      writeFileSync(join(dir, 'hillclimb.yml'), text);
    };
    withK('3');
    const r = await bash(script('setup', 'inputs'), {}, dir);
    expect(r.code, r.stdout).toBe(0);
    expect(r.outputs).toMatchObject({ candidates: '3', slots: '["1","2","3"]' });
    withK('9');
    const bad = await bash(script('setup', 'inputs'), {}, dir);
    expect(bad.code).toBe(1);
    expect(bad.stdout.trim()).toBe('::error title=hillclimb input::loop.candidates in hillclimb.yml: 1 to 8');
  });

  it('a continuation keeps its run id and takes the next iteration', async () => {
    const r = await validate({ IN_ITERATIONS: '3', IN_RESUME: 'gh99/2' });
    expect(r.outputs).toMatchObject({
      'run-id': 'gh99',
      iteration: '2',
      'iteration-dir': 'i002',
      more: 'true',
      next: 'gh99/3',
    });
    expect((await validate({ IN_ITERATIONS: '2', IN_RESUME: 'gh99/2' })).outputs.more).toBe('false');
  });

  it.each([
    [{ IN_TARGET: 'gdn; rm -rf /' }, 'target: letters, digits, - and _ only'],
    [{ IN_TARGET: 'nope' }, 'target: no target "nope" in hillclimb.yml'],
    [{ IN_ITERATIONS: '0' }, 'iterations: 1 to 100'],
    [{ IN_ITERATIONS: '$(id)' }, 'iterations: 1 to 100'],
    [{ IN_AGENT: 'bash' }, 'agent: config, codex, claude, command or replay'],
    [{ IN_AGENT: 'codex', IN_MODEL: 'gpt 5' }, 'model: a model name, optionally @minimal|low|medium|high'],
    [
      { IN_AGENT: 'claude', IN_MODEL: 'opus@high' },
      'model: a reasoning effort (@high) applies to codex only',
    ],
    [
      { IN_DIRECTIVES: 'measure-first ../../etc/passwd' },
      'directives: preset names separated by spaces or commas',
    ],
    [{ IN_DIRECTIVES: 'no-such-preset' }, 'directives: no preset session_directives/no-such-preset.md'],
    [{ IN_BACKEND: 'gpu' }, 'backend: config, local, ray or tpu-vm'],
    [{ IN_TPU_TYPE: 'v5p_8' }, 'tpu-type: e.g. v5p-8, v5litepod-8, v6e-8'],
    [{ IN_ZONES: 'us-east5-a;ls' }, 'zones: zone names such as us-east5-a, space or comma separated'],
    [{ IN_DRY_RUN: 'yes' }, 'dry-run: true or false'],
    [{ IN_RESUME: '../x/1' }, 'resume: <run-id>/<iteration>'],
    [{ IN_ITERATIONS: '2', IN_RESUME: 'gh1/3' }, 'resume: iteration 3 is past iterations (2)'],
  ])('refuses %j', async (env, message) => {
    const r = await validate(env);
    expect(r.code).toBe(1);
    expect(r.stdout.trim()).toBe(`::error title=hillclimb input::${message}`);
    expect(r.outputs).toEqual({});
  });
});

describe('continue: dispatch of the next iteration', () => {
  it('re-dispatches the workflow with the validated inputs and the next iteration', async () => {
    const bin = join(t.dir, 'bin');
    mkdirSync(bin);
    const argv = join(t.dir, 'gh-argv.json');
    writeFileSync(
      join(bin, 'gh'),
      `#!/usr/bin/env node\nrequire('fs').writeFileSync(${JSON.stringify(argv)}, JSON.stringify(process.argv.slice(2)));\n`,
    );
    chmodSync(join(bin, 'gh'), 0o755);
    const dispatch = JSON.stringify({
      target: 'gdn',
      iterations: '3',
      model: 'it\'s "odd" $(id)',
      'dry-run': 'false',
    });
    const r = await bash(script('continue', 'Dispatch the next iteration'), {
      PATH: `${bin}:${process.env.PATH}`,
      GH_TOKEN: 'ghs_x',
      REPO: 'octo/kernels',
      REF: 'main',
      DISPATCH: dispatch,
      NEXT: 'gh4242/2',
    });
    expect(r.code, r.stdout).toBe(0);
    expect(JSON.parse(readFileSync(argv, 'utf8'))).toEqual([
      'workflow',
      'run',
      'hillclimb.yml',
      '--repo',
      'octo/kernels',
      '--ref',
      'main',
      '-f',
      'target=gdn',
      '-f',
      'iterations=3',
      '-f',
      `model=it's "odd" $(id)`,
      '-f',
      'dry-run=false',
      '-f',
      'resume=gh4242/2',
    ]);
  });
});
