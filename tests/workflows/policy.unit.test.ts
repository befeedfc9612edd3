// The workflow policy (tests/workflows/policy.ts) holds for every workflow in .github/workflows, and
// catches every rule broken in a deliberately bad fixture.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/paths.js';
import { checkWorkflow } from './policy.js';

const WORKFLOWS = join(REPO_ROOT, '.github', 'workflows');
const ACTIONS = join(REPO_ROOT, 'actions');
const FILES = readdirSync(WORKFLOWS)
  .filter((f) => f.endsWith('.yml'))
  .sort();

describe('workflow policy', () => {
  it('covers the workflows the issue asks for', () => {
    expect(FILES).toEqual(['baseline.yml', 'ci.yml', 'hillclimb.yml', 'janitor.yml', 'pr-evidence.yml']);
  });

  it.each(FILES)('%s follows every rule', (file) => {
    expect(checkWorkflow(join(WORKFLOWS, file), ACTIONS)).toEqual([]);
  });

  it('reports every rule a bad workflow breaks', () => {
    expect(checkWorkflow(join(import.meta.dirname, 'fixtures', 'bad-loop.yml'), ACTIONS)).toEqual([
      'bad-loop.yml: top: permissions-top: must be {} (got "write-all")',
      'bad-loop.yml: on: trigger: pull_request_target is not allowed',
      'bad-loop.yml: top: concurrency: a concurrency group is required',
      'bad-loop.yml: jobs.agent.steps[0]: pinned: actions/checkout@v5 is not pinned to a commit SHA',
      'bad-loop.yml: jobs.agent.steps[0]: checkout-creds: persist-credentials: false is required',
      'bad-loop.yml: jobs.agent.steps[2]: expression-in-run: pass values through env: instead',
      'bad-loop.yml: jobs.agent.steps[2]: timeout-step: run steps need timeout-minutes',
      'bad-loop.yml: jobs.agent.steps[3]: local-action: ./actions/iterate has no input agnet',
      'bad-loop.yml: jobs.agent.steps[3]: local-action: ./actions/iterate needs input iteration',
      'bad-loop.yml: jobs.agent: agent-job: holds write permissions (contents)',
      'bad-loop.yml: jobs.agent: agent-job: holds id-token: write',
      'bad-loop.yml: jobs.agent: agent-job: authenticates to a cloud',
      'bad-loop.yml: jobs.agent: agent-job: holds secrets other than the model API key: HF_TOKEN',
      'bad-loop.yml: jobs.agent: sandbox: let the sandbox use user namespaces before untrusted code runs',
      'bad-loop.yml: jobs.agent: writer-job: write permissions (contents) in a job that runs candidate code',
      'bad-loop.yml: jobs.gate: permissions-job: explicit permissions are required (got "read-all")',
      'bad-loop.yml: jobs.gate: timeout-job: timeout-minutes is required',
      'bad-loop.yml: jobs.gate.steps[1]: timeout-step: ./actions/kernel-test needs timeout-minutes',
      'bad-loop.yml: jobs.gate.steps[2]: local-action: ./actions/no-such-action is not an action of this repository',
      'bad-loop.yml: jobs.gate.steps[3]: pinned: docker://alpine:3: docker actions are not allowed',
      'bad-loop.yml: jobs.gate: candidate-job: holds secrets: BOT_TOKEN',
      'bad-loop.yml: jobs.gate: sandbox: let the sandbox use user namespaces before untrusted code runs',
      'bad-loop.yml: jobs.gate.steps[1]: attested-handover: ./actions/kernel-test takes over a bundle: give it base',
      'bad-loop.yml: jobs.stray-oidc.steps[0]: timeout-step: run steps need timeout-minutes',
      'bad-loop.yml: jobs.stray-oidc: id-token: id-token: write without google-github-actions/auth',
      'bad-loop.yml: jobs.relay: agent-job: holds id-token: write',
      'bad-loop.yml: jobs.relay: agent-job: authenticates to a cloud',
      'bad-loop.yml: jobs.relay: relay-job: serves the tools relay beside propose: it holds the cloud login',
      'bad-loop.yml: jobs.relay: sandbox: let the sandbox use user namespaces before untrusted code runs',
      'bad-loop.yml: jobs.measure: relay-job: attaches the TPU without waiting for relay, which times on it',
    ]);
  });
});
