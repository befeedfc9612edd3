/**
 * `hillclimb doctor`: what this machine has, what is missing, and how to get it.
 * Required pieces make the exit code 1 when missing; optional ones only say what they unlock.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_INSTALL_HINTS, claudeCredentials, codexCredentials } from '../agent/index.js';
import { serviceAccountEmail } from '../compute/index.js';
import { type HillclimbConfig, loadConfig } from '../config/index.js';
import { run, SANDBOX_HINT, sandboxAvailability } from '../exec/index.js';
import { DEFAULT_REQUIREMENTS, venvPython } from '../project/index.js';
import { errorMessage, isHillclimbError } from '../util/index.js';
import { targetChecks } from './target.js';

export interface CheckResult {
  name: string;
  required: boolean;
  ok: boolean;
  /** Version or what was found. */
  detail: string;
  /** How to get it, when missing. */
  hint?: string;
  /** The target the check is about, when it is one target's (hillclimb.yml's targets.<name>). */
  target?: string;
}

export interface Check {
  name: string;
  required: boolean;
  target?: string;
  run(): Promise<Omit<CheckResult, 'name' | 'required' | 'target'>>;
}

const MIN_NODE: [number, number] = [20, 10];
const CHECK_TIMEOUT_MS = 60_000;

/** Run a version command (or a probe); its first line, or undefined when the tool is missing or fails. */
export async function versionOf(
  command: string,
  args: string[],
  opts: { env?: Record<string, string>; cwd?: string } = {},
): Promise<string | undefined> {
  try {
    const r = await run(command, args, {
      allowedExitCodes: 'any',
      timeoutMs: CHECK_TIMEOUT_MS,
      env: opts.env,
      cwd: opts.cwd,
    });
    if (r.exitCode !== 0) return undefined;
    return (r.stdout.trim() || r.stderr.trim()).split('\n')[0];
  } catch {
    return undefined;
  }
}

function toolCheck(name: string, command: string, args: string[], required: boolean, hint: string): Check {
  return {
    name,
    required,
    async run() {
      const v = await versionOf(command, args);
      return v ? { ok: true, detail: v } : { ok: false, detail: `${command} not found`, hint };
    },
  };
}

export function nodeCheck(version: string = process.versions.node): Check {
  return {
    name: 'node',
    required: true,
    async run() {
      const [major = 0, minor = 0] = version.split('.').map(Number);
      const ok = major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1]);
      return ok
        ? { ok, detail: `v${version} (actions run on node24)` }
        : {
            ok,
            detail: `v${version}`,
            hint: `install Node ${MIN_NODE.join('.')} or newer (https://nodejs.org)`,
          };
    },
  };
}

export function pythonChecks(root: string, requirements: string): Check[] {
  const python = venvPython(root);
  const setupHint = `run: hillclimb setup   (creates .venv and installs ${requirements})`;
  return [
    {
      name: 'python venv',
      required: true,
      async run() {
        if (!existsSync(python)) return { ok: false, detail: `${python} missing`, hint: setupHint };
        const v = await versionOf(python, ['--version']);
        return v
          ? { ok: true, detail: `${v} at ${python}` }
          : { ok: false, detail: `${python} broken`, hint: setupHint };
      },
    },
    {
      name: 'jax',
      required: true,
      async run() {
        if (!existsSync(python)) return { ok: false, detail: 'no venv', hint: setupHint };
        const v = await versionOf(
          python,
          ['-c', 'import jax; print(jax.__version__, jax.default_backend())'],
          { env: { JAX_PLATFORMS: process.env.JAX_PLATFORMS ?? '' } },
        );
        return v
          ? { ok: true, detail: `jax ${v}` }
          : { ok: false, detail: 'import jax failed', hint: setupHint };
      },
    },
    {
      name: 'pytest',
      required: true,
      async run() {
        if (!existsSync(python)) return { ok: false, detail: 'no venv', hint: setupHint };
        const v = await versionOf(python, ['-m', 'pytest', '--version']);
        return v ? { ok: true, detail: v } : { ok: false, detail: 'pytest missing', hint: setupHint };
      },
    },
    {
      name: 'ray',
      required: false,
      async run() {
        const v = existsSync(python)
          ? await versionOf(python, ['-c', 'import ray; print(ray.__version__)'])
          : undefined;
        return v
          ? { ok: true, detail: `ray ${v} (backend: ray)` }
          : {
              ok: false,
              detail: 'not installed (needed only for compute.backend: ray)',
              hint: `${python} -m pip install "ray[default]"`,
            };
      },
    },
  ];
}

/** The project's hillclimb.yml, if there is one: valid, and what it asks of this machine. */
interface ProjectConfig {
  check: Check;
  config?: HillclimbConfig;
}

function projectConfig(root: string): ProjectConfig {
  const file = join(root, 'hillclimb.yml');
  if (!existsSync(file)) {
    return {
      check: {
        name: 'hillclimb.yml',
        required: false,
        run: async () => ({
          ok: false,
          detail: `none in ${root}`,
          hint: "the loop needs one: start from this repository's hillclimb.yml (docs/user-guide.md)",
        }),
      },
    };
  }
  try {
    const config = loadConfig(file);
    const targets = Object.keys(config.targets).join(', ');
    const detail = `valid: target ${targets}, agent ${config.agent.kind}, backend ${config.compute.backend}`;
    return {
      check: { name: 'hillclimb.yml', required: true, run: async () => ({ ok: true, detail }) },
      config,
    };
  } catch (e) {
    const detail = errorMessage(e);
    const hint = isHillclimbError(e) && e.hint ? e.hint : 'fix the file and run doctor again';
    return {
      check: { name: 'hillclimb.yml', required: true, run: async () => ({ ok: false, detail, hint }) },
    };
  }
}

/** The prompt template and the directive presets hillclimb.yml points at: the loop reads them. */
export function promptCheck(config: HillclimbConfig): Check {
  return {
    name: 'prompt',
    required: true,
    async run() {
      const missing = [
        config.paths.prompt,
        ...[...config.agent.directives, ...config.search.slot_directives].map(
          (d) => `${config.paths.directives_dir}/${d}.md`,
        ),
      ].filter((p) => !existsSync(join(config.root, p)));
      return missing.length === 0
        ? { ok: true, detail: `${config.paths.prompt}, ${config.agent.directives.length} directive(s)` }
        : {
            ok: false,
            detail: `missing: ${missing.join(', ')}`,
            hint: 'hillclimb init writes a starter prompt; or set paths.prompt / paths.directives_dir in hillclimb.yml',
          };
    },
  };
}

const ACTION_STEP =
  /^\s*(?:-\s+)?uses:\s+(\.|[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+)\/actions\/([a-z0-9-]+)(?:@(\S+))?/gm;

/**
 * Which hillclimb the repository's workflows run: its own ./actions, or one release pinned by full
 * commit SHA (what `hillclimb init` writes). Mixed releases or a movable pin are reported.
 */
export function workflowsCheck(root: string): Check {
  return {
    name: 'workflows',
    required: false,
    async run() {
      const dir = join(root, '.github', 'workflows');
      const files = existsSync(dir)
        ? readdirSync(dir)
            .filter((f) => /\.ya?ml$/.test(f))
            .sort()
        : [];
      const pins = new Map<string, string[]>();
      const problems: string[] = [];
      for (const f of files) {
        for (const m of readFileSync(join(dir, f), 'utf8').matchAll(ACTION_STEP)) {
          const [, repo, name, ref] = m;
          if (repo === '.') {
            if (!existsSync(join(root, 'actions', name!, 'action.yml')))
              problems.push(`${f} uses ./actions/${name}, which this repository does not have`);
            continue;
          }
          if (!ref || !/^[0-9a-f]{40}$/.test(ref))
            problems.push(`${f} pins ${repo}/actions/${name} to "${ref ?? ''}", not a full commit SHA`);
          const key = `${repo}@${ref ?? ''}`;
          pins.set(key, [...new Set([...(pins.get(key) ?? []), f])]);
        }
      }
      if (pins.size > 1) {
        problems.push(
          `mixed hillclimb releases: ${[...pins].map(([k, fs]) => `${k} (${fs.join(', ')})`).join('; ')}`,
        );
      }
      if (problems.length > 0) {
        return {
          ok: false,
          detail: problems.join('; '),
          hint: 're-run hillclimb init (with --force) to pin one release',
        };
      }
      if (pins.size === 1) {
        const [[key, fs]] = [...pins] as [[string, string[]]];
        const [repo, sha] = key.split('@') as [string, string];
        return { ok: true, detail: `${fs.length} workflow(s) run ${repo} actions at ${sha.slice(0, 12)}` };
      }
      return files.length > 0 && existsSync(join(root, 'actions'))
        ? { ok: true, detail: "this repository's own actions (./actions)" }
        : {
            ok: false,
            detail: "no workflow runs hillclimb's actions",
            hint: 'hillclimb init writes them (docs/setup.md)',
          };
    },
  };
}

/**
 * Whether this machine can build the sandbox untrusted code runs in. Required when hillclimb.yml says
 * `sandbox.mode: required`; otherwise its absence means unverified numbers and no champion moves.
 */
export function sandboxCheck(config: HillclimbConfig | undefined): Check {
  const required = config?.sandbox.mode === 'required';
  return {
    name: 'sandbox',
    required,
    async run() {
      const a = await sandboxAvailability();
      if (a.available && process.getuid?.() === 0) {
        // Inside, the sandbox's user is root outside too: files only root may read stay readable.
        return {
          ok: true,
          detail:
            'user namespaces available; hillclimb runs as root, so sandboxed code can read root-only files in the system folders: run it as an ordinary user (docs/security.md)',
        };
      }
      if (a.available)
        return { ok: true, detail: 'user namespaces available: agent and candidate code run sandboxed' };
      return {
        ok: false,
        detail: `cannot build the sandbox: ${a.reason}`,
        hint: `${required ? 'sandbox.mode is required' : 'without it, numbers are unverified and no iteration can be improved'} — ${SANDBOX_HINT}`,
      };
    },
  };
}

/**
 * The account a TPU VM runs as (compute.tpu_vm.service_account): candidate code on the VM can use its
 * token, so it must exist and hold no role in the project. Read with gcloud, as the user's login sees it.
 */
export function tpuAccountCheck(config: HillclimbConfig, gcloud = 'gcloud'): Check {
  const tpu = config.compute.tpu_vm!;
  const email = serviceAccountEmail(tpu);
  const fix = `give compute.tpu_vm.service_account in ${config.file} an account with no roles (docs/compute.md, "The VM's account")`;
  return {
    name: 'tpu account',
    required: true,
    async run() {
      const gc = (args: string[]) =>
        run(gcloud, args, { allowedExitCodes: 'any', timeoutMs: CHECK_TIMEOUT_MS }).catch(() => undefined);
      const described = await gc([
        'iam',
        'service-accounts',
        'describe',
        email,
        '--project',
        tpu.project,
        '--format=value(email)',
      ]);
      if (described?.exitCode !== 0) {
        const why = described?.stderr.trim().split('\n').at(-1) ?? `${gcloud} could not run`;
        return {
          ok: false,
          detail: `${email}: not found (${why})`,
          hint: `create it: gcloud iam service-accounts create ${email.split('@')[0]} --project ${tpu.project}; or ${fix}`,
        };
      }
      const policy = await gc([
        'projects',
        'get-iam-policy',
        tpu.project,
        '--flatten=bindings[].members',
        `--filter=bindings.members:serviceAccount:${email}`,
        '--format=value(bindings.role)',
      ]);
      if (policy?.exitCode !== 0) {
        return {
          ok: false,
          detail: `${email}: cannot read the project's IAM policy`,
          hint: 'run doctor as someone who can read it (roles/iam.securityReviewer)',
        };
      }
      const roles = policy.stdout
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean);
      if (roles.length > 0) {
        return {
          ok: false,
          detail: `${email} holds ${roles.join(', ')}: candidate code on the VM can use them`,
          hint: fix,
        };
      }
      return { ok: true, detail: `${email}, no roles in ${tpu.project}` };
    },
  };
}

/**
 * How the agent's model credential travels: an API key in this environment stays with the harness's key
 * proxy; without one the CLI uses its own login and gets the machine's network. Optional: in CI the
 * key is a secret of the propose job, not of this machine.
 */
export function keyRouteCheck(kind: 'codex' | 'claude', env: NodeJS.ProcessEnv = process.env): Check {
  const { apiKey, url } = kind === 'codex' ? codexCredentials(env) : claudeCredentials(env);
  const names = kind === 'codex' ? 'OPENAI_API_KEY (or CODEX_API_KEY)' : 'ANTHROPIC_API_KEY';
  return {
    name: 'agent key',
    required: false,
    async run() {
      return apiKey
        ? { ok: true, detail: `${names} set: held by the harness's key proxy, forwarded to ${url}` }
        : {
            ok: false,
            detail: `no ${names} here: ${kind} would sign in with its own login, hold it, and get the machine's network`,
            hint: `export ${names.split(' ')[0]} for a local loop; in CI it is the propose job's secret (docs/setup.md)`,
          };
    },
  };
}

export function defaultChecks(root: string): Check[] {
  const project = projectConfig(root);
  const config = project.config;
  // What hillclimb.yml names becomes required: its agent's CLI, gcloud for the tpu-vm backend.
  const agent = (kind: 'codex' | 'claude') => {
    const used = config?.agent.kind === kind;
    const binary = used ? config!.agent[kind].binary : kind;
    return toolCheck(
      kind,
      binary,
      ['--version'],
      used,
      `${used ? `agent.kind in ${config!.file} is ${kind}` : `needed only for agent: ${kind}`} — ${AGENT_INSTALL_HINTS[kind]}`,
    );
  };
  const tpu = config?.compute.backend === 'tpu-vm';
  return [
    nodeCheck(),
    toolCheck('git', 'git', ['--version'], true, 'install git (apt install git)'),
    ...pythonChecks(root, config?.paths.requirements ?? DEFAULT_REQUIREMENTS.runtime),
    project.check,
    ...(config ? [promptCheck(config), ...targetChecks(config)] : []),
    workflowsCheck(root),
    sandboxCheck(config),
    toolCheck(
      'gcloud',
      'gcloud',
      ['--version'],
      tpu,
      `${tpu ? `compute.backend in ${config!.file} is tpu-vm` : 'needed only for compute.backend: tpu-vm'} — https://cloud.google.com/sdk/docs/install`,
    ),
    ...(tpu && config?.compute.tpu_vm ? [tpuAccountCheck(config)] : []),
    agent('codex'),
    agent('claude'),
    ...(config?.agent.kind === 'codex' || config?.agent.kind === 'claude'
      ? [keyRouteCheck(config.agent.kind)]
      : []),
    toolCheck('gh', 'gh', ['--version'], false, 'optional, for inspecting loop PRs — https://cli.github.com'),
  ];
}

/**
 * With several targets, one line each: what that target lacks (required pieces, then optional ones),
 * so a second target's gaps are not lost among the first's.
 */
function perTargetLines(results: readonly CheckResult[]): string[] {
  const targets = [...new Set(results.flatMap((r) => (r.target === undefined ? [] : [r.target])))];
  if (targets.length < 2) return [];
  const width = Math.max(...targets.map((t) => t.length));
  return [
    '',
    'Per target:',
    ...targets.map((t) => {
      const own = results.filter((r) => r.target === t && !r.ok);
      const name = (r: CheckResult) => r.name.replace(` (${t})`, '');
      const required = own.filter((r) => r.required).map(name);
      const optional = own.filter((r) => !r.required).map(name);
      const said = [
        ...(required.length > 0 ? [`lacks ${required.join(', ')}`] : []),
        ...(optional.length > 0
          ? [`${required.length > 0 ? 'also ' : 'lacks '}(optional) ${optional.join(', ')}`]
          : []),
      ];
      return `  ${`${t}:`.padEnd(width + 1)} ${said.length === 0 ? 'nothing missing' : said.join('; ')}`;
    }),
  ];
}

export async function runChecks(checks: readonly Check[]): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const c of checks) {
    results.push({
      name: c.name,
      required: c.required,
      ...(c.target === undefined ? {} : { target: c.target }),
      ...(await c.run()),
    });
  }
  return results;
}

/** A plain table: one line per check, then one line per missing piece with how to get it. */
export function formatChecks(results: readonly CheckResult[]): string {
  const width = Math.max(...results.map((r) => r.name.length));
  const lines = results.map((r) => {
    const mark = r.ok ? 'ok ' : r.required ? 'MISSING' : '-  ';
    return `${mark.padEnd(7)} ${r.name.padEnd(width)}  ${r.detail}`;
  });
  const missing = results.filter((r) => !r.ok && r.required);
  const optional = results.filter((r) => !r.ok && !r.required);
  if (missing.length > 0) {
    lines.push('', 'Required pieces missing:');
    for (const r of missing) lines.push(`  ${r.name}: ${r.hint ?? r.detail}`);
  }
  if (optional.length > 0) {
    lines.push('', 'Optional (only for the backends or agents named):');
    for (const r of optional) lines.push(`  ${r.name}: ${r.hint ?? r.detail}`);
  }
  lines.push(...perTargetLines(results));
  lines.push(
    '',
    missing.length === 0
      ? 'doctor: all required pieces present'
      : `doctor: ${missing.length} required missing`,
  );
  return lines.join('\n');
}
