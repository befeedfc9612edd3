// The workflows `hillclimb init` writes into a repository that is not hillclimb: they lint clean, obey
// the workflow policy with hillclimb's actions pinned by full SHA, call only actions and inputs that
// exist here, and keep hillclimb's own jobs, permissions and trust split exactly.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { INIT_WORKFLOWS, rewriteWorkflow } from '../../src/init/workflows.js';
import { REPO_ROOT, tempDir } from '../helpers/paths.js';
import { actionlint } from '../workflows/actionlint.js';
import { checkWorkflow, type Job, policyViolations, type Workflow } from '../workflows/policy.js';
import { hillclimbIn, makeToyRepo, PIN, TOY_FLAGS } from './scratch.js';

const ACTIONS = join(REPO_ROOT, 'actions');
const SOURCE = join(REPO_ROOT, '.github', 'workflows');
const PINNED = new RegExp(`^${PIN.repository}/actions/([a-z0-9-]+)@([0-9a-f]{40})$`);

let repo: { dir: string; cleanup: () => void };
const written = (file: string) => join(repo.dir, '.github', 'workflows', file);
const workflow = (path: string) => parse(readFileSync(path, 'utf8')) as Workflow;

beforeAll(async () => {
  repo = tempDir('hc-init-wf-');
  makeToyRepo(repo.dir);
  const r = await hillclimbIn(repo.dir, ['init', ...TOY_FLAGS]);
  expect(r.code, r.stderr).toBe(0);
});
afterAll(() => repo.cleanup());

describe.each(INIT_WORKFLOWS)('the written %s', (file) => {
  it('passes actionlint', async () => {
    expect(await actionlint(written(file))).toEqual([]);
  });

  it('passes the workflow policy, reading hillclimb/actions/<name>@<sha> as ./actions/<name>', () => {
    expect(checkWorkflow(written(file), ACTIONS, { hillclimbRepository: PIN.repository })).toEqual([]);
  });

  it('names only actions that exist here, with inputs their action.yml declares, and all required ones', () => {
    const steps = Object.values(workflow(written(file)).jobs ?? {}).flatMap((j) => j.steps ?? []);
    const hillclimbSteps = steps.filter((s) => s.uses?.startsWith(`${PIN.repository}/`));
    expect(hillclimbSteps.length).toBeGreaterThan(0);
    for (const step of hillclimbSteps) {
      const m = PINNED.exec(step.uses!);
      expect(m, `${step.uses} is pinned to a full SHA`).not.toBeNull();
      expect(m![2]).toBe(PIN.commit);
      const meta = parse(readFileSync(join(ACTIONS, m![1]!, 'action.yml'), 'utf8')) as {
        inputs?: Record<string, { required?: boolean }>;
      };
      const inputs = meta.inputs ?? {};
      const given = Object.keys(step.with ?? {});
      expect(
        given.filter((k) => !(k in inputs)),
        `${step.uses}: undeclared inputs`,
      ).toEqual([]);
      const required = Object.entries(inputs)
        .filter(([, spec]) => spec.required)
        .map(([k]) => k);
      expect(
        required.filter((k) => !given.includes(k)),
        `${step.uses}: missing required inputs`,
      ).toEqual([]);
    }
  });

  it("keeps hillclimb's jobs, permissions, conditions, secrets and steps exactly", () => {
    const source = workflow(join(SOURCE, file));
    const text = readFileSync(written(file), 'utf8')
      // Undo the step-level rewrite (the pinned actions); everything else must already be identical.
      .replaceAll(/uses: acme\/hillclimb\/(actions\/[a-z0-9-]+)@[0-9a-f]{40} # hillclimb \S+/g, 'uses: ./$1');
    const ours = parse(text) as Workflow & { name?: string };
    expect(ours.jobs).toEqual(source.jobs);
    expect(ours.permissions).toEqual(source.permissions);
    expect(ours.concurrency).toEqual(source.concurrency);
    expect(ours.name).toEqual((source as { name?: string }).name);
    // The triggers differ only in the path and branch filters that name this repository.
    const triggers = (wf: Workflow) =>
      JSON.parse(JSON.stringify(wf.on), (k, v) =>
        k === 'paths' || k === 'branches' ? '<repo>' : v,
      ) as unknown;
    expect(triggers(ours)).toEqual(triggers(source));
  });
});

describe('the policy sees through the pins', () => {
  const loop = () => workflow(written('hillclimb.yml'));
  const propose = (wf: Workflow) => wf.jobs!.propose as Job;

  it('a secret beside the agent in the written workflow is a violation', () => {
    const wf = loop();
    const iterate = propose(wf).steps!.find((s) => s.id === 'iterate')!;
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub expression, not a template
    iterate.env = { ...iterate.env, HF_TOKEN: '${{ secrets.HF_TOKEN }}' };
    expect(policyViolations('hillclimb.yml', wf, ACTIONS, { hillclimbRepository: PIN.repository })).toEqual([
      'hillclimb.yml: jobs.propose: agent-job: holds secrets other than the model API key: HF_TOKEN',
    ]);
  });

  it('a hillclimb action pinned to a tag is a violation', () => {
    const wf = loop();
    const iterate = propose(wf).steps!.find((s) => s.id === 'iterate')!;
    iterate.uses = `${PIN.repository}/actions/iterate@v1`;
    expect(policyViolations('hillclimb.yml', wf, ACTIONS, { hillclimbRepository: PIN.repository })).toEqual([
      `hillclimb.yml: jobs.propose.steps[${propose(wf).steps!.indexOf(iterate)}]: pinned: ${PIN.repository}/actions/iterate@v1 is not pinned to a commit SHA`,
    ]);
  });

  it('an input the action does not declare is a violation', () => {
    const wf = loop();
    const iterate = propose(wf).steps!.find((s) => s.id === 'iterate')!;
    iterate.with = { ...iterate.with, 'skip-guard': 'true' };
    expect(policyViolations('hillclimb.yml', wf, ACTIONS, { hillclimbRepository: PIN.repository })).toEqual([
      expect.stringContaining('local-action: ./actions/iterate has no input skip-guard'),
    ]);
  });
});

describe('the packaged workflows', () => {
  it('ship with the npm package, so an installed hillclimb can init', () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { files: string[] };
    for (const f of INIT_WORKFLOWS) expect(pkg.files).toContain(`.github/workflows/${f}`);
  });

  it('a rewrite that no longer matches fails instead of writing a half-converted workflow', () => {
    const source = readFileSync(join(SOURCE, 'pr-evidence.yml'), 'utf8').replace(
      'paths: ["kernels/**"]',
      'paths: ["kernels/**", "docs/**"]',
    );
    const answers = {
      editable: ['src/x/**'],
      base: 'main',
      configFile: 'hillclimb.yml',
    };
    expect(() => rewriteWorkflow('pr-evidence.yml', source, PIN, '0.1.0', answers)).toThrow(
      /pr-evidence\.yml: no "pull_request paths: \["kernels\/\*\*"\]" to rewrite/,
    );
  });
});
