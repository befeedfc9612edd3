/**
 * hillclimb's workflow policy, as checks over a parsed workflow (what zizmor-style linters check, plus
 * our own least-privilege rules). Each violation is one line: `<file>: <where>: <rule>: <detail>`.
 *
 *  permissions-top     top-level `permissions: {}`
 *  permissions-job     every job states its permissions (read/write/none values, no read-all/write-all)
 *  timeout-job         every job has timeout-minutes
 *  timeout-step        every `run:` step and every local action step has timeout-minutes
 *  expression-in-run   no `${{ }}` at all inside `run:` (values reach scripts through `env:`)
 *  pinned              every remote `uses:` is pinned to a 40-character commit SHA (actions/* too)
 *  checkout-creds      every actions/checkout sets persist-credentials: false
 *  trigger             no pull_request_target, no workflow_run
 *  concurrency         loop workflows (not ci.yml) have a concurrency group with cancel-in-progress false;
 *                      pr-evidence.yml none at the top (every comment starts it, and a newer pending run
 *                      replaces an older one) but one on each job that measures
 *  sandbox             a job that runs untrusted code on its runner (iterate's agent, kernel-test, profile
 *                      without cloud auth) first lets the sandbox use user namespaces
 *  attested-handover   a step that takes over a bundle from another job (kernel-test without head, profile,
 *                      report) is given the trusted champion (base)
 *  local-action        `uses: ./actions/x` names an existing action; `with:` keys are declared inputs
 *                      and required inputs are given
 *  agent-job           the job running ./actions/iterate has no write permission, no id-token, no cloud
 *                      auth step, and no secret but an agent's model API key (the tools relay's mode aside)
 *  relay-job           the job serving the agent tools relay (iterate mode tools-relay) holds the cloud
 *                      login: it runs no agent, no other iterate mode, no kernel-test and no profile; a
 *                      job that attaches the TPU (./actions/tpu mode attach) needs every such job
 *  candidate-job       jobs that run candidate code on the runner (kernel-test gate cpu) hold no secrets,
 *                      no write permission and no id-token
 *  writer-job          write permissions on contents, pull-requests or issues only in jobs that run no
 *                      candidate code (no iterate, kernel-test or profile step)
 *  id-token            id-token: write only in jobs that authenticate to GCP with google-github-actions/auth
 *
 * Workflows `hillclimb init` writes name hillclimb's actions as `<owner>/<name>/actions/x@<sha>`: given
 * that repository (`hillclimbRepository`), each such step is checked as the `./actions/x` it stands for,
 * after its pin is checked.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parse } from 'yaml';

type Map = Record<string, unknown>;

export interface Step {
  name?: string;
  id?: string;
  uses?: string;
  run?: string;
  with?: Map;
  env?: Map;
  if?: string;
  'timeout-minutes'?: number;
}

export interface Job {
  permissions?: Map | string;
  'timeout-minutes'?: number;
  steps?: Step[];
  env?: Map;
  if?: string;
  [key: string]: unknown;
}

export interface Workflow {
  on?: unknown;
  permissions?: unknown;
  concurrency?: { group?: string; 'cancel-in-progress'?: boolean } | string;
  jobs?: Record<string, Job>;
}

/** Model API keys the agent job may hold. */
export const AGENT_SECRETS = ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY'];
const WRITE_SCOPES = ['contents', 'pull-requests', 'issues'];
const CANDIDATE_ACTIONS = ['./actions/iterate', './actions/kernel-test', './actions/profile'];
/** Workflows exempt from the concurrency rule (CI may cancel superseded runs). */
const NOT_LOOP = ['ci.yml'];
/** Workflows that serialize per job instead (a top-level group would let any comment cancel a measurement). */
const JOB_LEVEL_CONCURRENCY = ['pr-evidence.yml'];
const SANDBOX_STEP = /apparmor_restrict_unprivileged_userns/;

function triggers(on: unknown): string[] {
  if (typeof on === 'string') return [on];
  if (Array.isArray(on)) return on.map(String);
  if (on && typeof on === 'object') return Object.keys(on);
  return [];
}

/** Every string inside a value (for finding `secrets.X` references anywhere in a job). */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value && typeof value === 'object') return Object.values(value).flatMap(strings);
  return [];
}

function actionInputs(
  actionsRoot: string,
  name: string,
): Record<string, { required?: boolean; default?: unknown }> | undefined {
  const file = join(actionsRoot, name, 'action.yml');
  if (!existsSync(file)) return undefined;
  return (
    (parse(readFileSync(file, 'utf8')) as { inputs?: Record<string, { required?: boolean }> }).inputs ?? {}
  );
}

export interface PolicyOptions {
  /** `owner/name` whose `actions/<x>@<sha>` steps are hillclimb's actions (workflows written by init). */
  hillclimbRepository?: string;
}

export function checkWorkflow(file: string, actionsRoot: string, opts: PolicyOptions = {}): string[] {
  const wf = parse(readFileSync(file, 'utf8')) as Workflow;
  return policyViolations(basename(file), wf, actionsRoot, opts);
}

/** `<repo>/actions/x@ref` → `./actions/x` (with a violation unless ref is a full SHA); others unchanged. */
function asLocalActions(
  wf: Workflow,
  repo: string,
  v: (where: string, rule: string, detail: string) => void,
) {
  const prefix = `${repo}/actions/`;
  const jobs: Record<string, Job> = {};
  for (const [jobName, job] of Object.entries(wf.jobs ?? {})) {
    const steps = (job.steps ?? []).map((step, i) => {
      if (!step.uses?.startsWith(prefix)) return step;
      const [path = '', ref = ''] = step.uses.slice(prefix.length).split('@');
      if (!/^[0-9a-f]{40}$/.test(ref))
        v(`jobs.${jobName}.steps[${i}]`, 'pinned', `${step.uses} is not pinned to a commit SHA`);
      return { ...step, uses: `./actions/${path}` };
    });
    jobs[jobName] = { ...job, steps };
  }
  return { ...wf, jobs };
}

export function policyViolations(
  name: string,
  workflow: Workflow,
  actionsRoot: string,
  opts: PolicyOptions = {},
): string[] {
  const out: string[] = [];
  const v = (where: string, rule: string, detail: string) =>
    out.push(`${name}: ${where}: ${rule}: ${detail}`);
  const wf = opts.hillclimbRepository ? asLocalActions(workflow, opts.hillclimbRepository, v) : workflow;

  const perms = wf.permissions;
  if (!(perms && typeof perms === 'object' && !Array.isArray(perms) && Object.keys(perms).length === 0)) {
    v('top', 'permissions-top', `must be {} (got ${JSON.stringify(perms)})`);
  }
  for (const t of triggers(wf.on)) {
    if (t === 'pull_request_target' || t === 'workflow_run') v('on', 'trigger', `${t} is not allowed`);
  }
  if (JOB_LEVEL_CONCURRENCY.includes(name)) {
    if (wf.concurrency !== undefined)
      v('top', 'concurrency', 'no top-level group: any comment would cancel a queued measurement');
  } else if (!NOT_LOOP.includes(name)) {
    const c = wf.concurrency;
    if (!c || typeof c === 'string' || !c.group) v('top', 'concurrency', 'a concurrency group is required');
    else if (c['cancel-in-progress'] !== false) v('top', 'concurrency', 'cancel-in-progress must be false');
  }

  // The jobs serving the tools relay: they time on the TPU a measuring job attaches, one job at a time.
  const relayJobs = Object.entries(wf.jobs ?? {})
    .filter(([, j]) =>
      (j.steps ?? []).some((s) => s.uses === './actions/iterate' && s.with?.mode === 'tools-relay'),
    )
    .map(([n]) => n);
  for (const [jobName, job] of Object.entries(wf.jobs ?? {})) {
    const where = `jobs.${jobName}`;
    const steps = job.steps ?? [];
    const attaches = steps.some((s) => s.uses === './actions/tpu' && s.with?.mode === 'attach');
    if (attaches && !relayJobs.includes(jobName)) {
      const needs = ([] as unknown[]).concat(job.needs ?? []).map(String);
      const missing = relayJobs.filter((r) => !needs.includes(r));
      if (missing.length > 0)
        v(
          where,
          'relay-job',
          `attaches the TPU without waiting for ${missing.join(', ')}, which times on it`,
        );
    }
    const p = job.permissions;
    const grants: Record<string, string> = {};
    if (!p || typeof p !== 'object' || Array.isArray(p)) {
      v(where, 'permissions-job', `explicit permissions are required (got ${JSON.stringify(p)})`);
    } else {
      for (const [scope, level] of Object.entries(p)) {
        if (!['read', 'write', 'none'].includes(String(level)))
          v(where, 'permissions-job', `${scope}: ${String(level)}`);
        grants[scope] = String(level);
      }
    }
    if (typeof job['timeout-minutes'] !== 'number') v(where, 'timeout-job', 'timeout-minutes is required');

    const uses = steps.map((s) => s.uses ?? '');
    // The tools relay's serving mode runs no candidate code and no agent: it holds the cloud login.
    const relayStep = (s: Step) => s.uses === './actions/iterate' && s.with?.mode === 'tools-relay';
    const local = (a: string) => steps.some((s) => s.uses === a && !relayStep(s));
    const runsCandidateCode = CANDIDATE_ACTIONS.some(local);
    const authenticatesToGcp = uses.some((u) => u.startsWith('google-github-actions/auth@'));
    const secrets = [
      ...new Set(strings(job).flatMap((s) => [...s.matchAll(/secrets\.([A-Za-z0-9_]+)/g)].map((m) => m[1]!))),
    ];
    const writes = Object.entries(grants)
      .filter(([, level]) => level === 'write')
      .map(([scope]) => scope);

    steps.forEach((step, i) => {
      const at = `${where}.steps[${i}]${step.id ? ` (${step.id})` : step.name ? ` (${step.name})` : ''}`;
      if (step.run !== undefined) {
        if (step.run.includes('${{')) v(at, 'expression-in-run', 'pass values through env: instead');
        if (typeof step['timeout-minutes'] !== 'number')
          v(at, 'timeout-step', 'run steps need timeout-minutes');
      }
      const u = step.uses;
      if (u === undefined) return;
      if (u.startsWith('./')) {
        if (typeof step['timeout-minutes'] !== 'number') v(at, 'timeout-step', `${u} needs timeout-minutes`);
        const m = /^\.\/actions\/([a-z0-9-]+)$/.exec(u);
        const inputs = m ? actionInputs(actionsRoot, m[1]!) : undefined;
        if (!inputs) {
          v(at, 'local-action', `${u} is not an action of this repository`);
          return;
        }
        for (const key of Object.keys(step.with ?? {})) {
          if (!(key in inputs)) v(at, 'local-action', `${u} has no input ${key}`);
        }
        for (const [key, spec] of Object.entries(inputs)) {
          if (spec.required && !(key in (step.with ?? {}))) v(at, 'local-action', `${u} needs input ${key}`);
        }
        return;
      }
      if (u.startsWith('docker://')) {
        v(at, 'pinned', `${u}: docker actions are not allowed`);
        return;
      }
      if (!/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_./-]+@[0-9a-f]{40}$/.test(u))
        v(at, 'pinned', `${u} is not pinned to a commit SHA`);
      if (/^actions\/checkout@/.test(u) && step.with?.['persist-credentials'] !== false) {
        v(at, 'checkout-creds', 'persist-credentials: false is required');
      }
    });

    if (local('./actions/iterate')) {
      const tokenWrites = writes.filter((s) => s !== 'id-token');
      if (tokenWrites.length > 0)
        v(where, 'agent-job', `holds write permissions (${tokenWrites.join(', ')})`);
      if (grants['id-token'] === 'write') v(where, 'agent-job', 'holds id-token: write');
      if (authenticatesToGcp) v(where, 'agent-job', 'authenticates to a cloud');
      const extra = secrets.filter((s) => !AGENT_SECRETS.includes(s));
      if (extra.length > 0)
        v(where, 'agent-job', `holds secrets other than the model API key: ${extra.join(', ')}`);
    }
    if (steps.some(relayStep)) {
      const others = steps.filter((s) => CANDIDATE_ACTIONS.includes(s.uses ?? '') && !relayStep(s));
      if (others.length > 0)
        v(
          where,
          'relay-job',
          `serves the tools relay beside ${others.map((s) => s.id ?? s.uses).join(', ')}: it holds the cloud login`,
        );
    }
    // A job with cloud credentials runs candidate code only remotely: each step that would run it must
    // refuse the local backend, whatever backend the engine resolves (issue: a dropped dispatch input).
    if (authenticatesToGcp || grants['id-token'] === 'write') {
      for (const s of steps) {
        if (
          CANDIDATE_ACTIONS.includes(s.uses ?? '') &&
          s.uses !== './actions/iterate' &&
          String(s.with?.['remote-only']) !== 'true'
        )
          v(
            where,
            'remote-only',
            `${s.id ?? s.uses}: a step running candidate code in a job with cloud credentials needs remote-only: true`,
          );
      }
    }
    const cpuGate = steps.some((s) => s.uses === './actions/kernel-test' && s.with?.gate === 'cpu');
    if (cpuGate) {
      if (secrets.length > 0) v(where, 'candidate-job', `holds secrets: ${secrets.join(', ')}`);
      const tokenWrites = writes.filter((s) => s !== 'id-token');
      if (tokenWrites.length > 0)
        v(where, 'candidate-job', `holds write permissions (${tokenWrites.join(', ')})`);
      if (grants['id-token'] === 'write') v(where, 'candidate-job', 'holds id-token: write');
    }
    const measures = steps.some(
      (s) =>
        s.uses === './actions/profile' ||
        (s.uses === './actions/kernel-test' && s.with?.gate === 'accelerator'),
    );
    if (JOB_LEVEL_CONCURRENCY.includes(name) && measures) {
      const c = job.concurrency as { group?: string; 'cancel-in-progress'?: boolean } | undefined;
      if (!c?.group || c['cancel-in-progress'] !== false)
        v(where, 'concurrency', 'a measuring job needs its own group with cancel-in-progress false');
    }
    // Untrusted code on this runner: the agent, or candidate code when no cloud runs it elsewhere.
    const untrustedHere =
      local('./actions/iterate') ||
      cpuGate ||
      (!authenticatesToGcp && (local('./actions/kernel-test') || local('./actions/profile')));
    if (untrustedHere) {
      const first = steps.findIndex(
        (s) =>
          CANDIDATE_ACTIONS.includes(s.uses ?? '') &&
          s.with?.mode !== 'prepare' &&
          s.with?.mode !== 'champion' &&
          s.with?.mode !== 'kept-programs' &&
          s.with?.mode !== 'check-agent',
      );
      const enabled = steps.findIndex((s) => SANDBOX_STEP.test(s.run ?? ''));
      if (first !== -1 && (enabled === -1 || enabled > first))
        v(where, 'sandbox', 'let the sandbox use user namespaces before untrusted code runs');
    }
    steps.forEach((step, i) => {
      const takesOver =
        step.uses === './actions/profile' ||
        step.uses === './actions/report' ||
        (step.uses === './actions/kernel-test' && step.with?.head === undefined);
      if (takesOver && step.with?.base === undefined)
        v(`${where}.steps[${i}]`, 'attested-handover', `${step.uses} takes over a bundle: give it base`);
    });
    const risky = writes.filter((s) => WRITE_SCOPES.includes(s));
    if (risky.length > 0 && runsCandidateCode) {
      v(where, 'writer-job', `write permissions (${risky.join(', ')}) in a job that runs candidate code`);
    }
    if (grants['id-token'] === 'write' && !authenticatesToGcp) {
      v(where, 'id-token', 'id-token: write without google-github-actions/auth');
    }
  }
  return out;
}
