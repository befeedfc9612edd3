/**
 * `hillclimb init`: bring hillclimb to an existing git repository. Plans every file (hillclimb.yml,
 * the workflows, a starter prompt and directive), compares each with what is on disk, and writes only
 * what is missing — or, with `force`, what differs. A second run with the same answers writes nothing.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { HillclimbConfig } from '../config/index.js';
import { parseRequirementsSpec, requirementLines } from '../project/index.js';
import { errorMessage, writeFileAtomic } from '../util/index.js';
import { addTargetText, type ExistingRepository } from './add-target.js';
import {
  CONFIG_FILE,
  configText,
  DIRECTIVES_DIR,
  type InitAnswers,
  PROMPT_FILE,
  validateConfigText,
} from './answers.js';
import type { HillclimbPin } from './pin.js';
import { initWorkflows } from './workflows.js';

/** The directive preset init copies as a start: the one that applies to any kernel. */
export const STARTER_DIRECTIVE = 'measure-first';

export interface PlannedFile {
  /** Relative to the repository root, `/`-separated. */
  path: string;
  content: string;
  /**
   * What init wrote there before this change (--add-target): a file still holding exactly that is
   * init's own, and is updated without --force.
   */
  replaces?: string;
}

export type FileOutcome = 'created' | 'unchanged' | 'updated' | 'differs' | 'replaced';

export interface InitResult {
  files: Array<{ path: string; outcome: FileOutcome }>;
  /** Files the user changed that were kept (no force): they differ from what init would write. */
  differing: string[];
}

/**
 * What init does with hillclimb.yml: `new` writes it from the answers; `add` (init --add-target) adds
 * the answers' target to the file there; `keep` leaves a file with several targets alone (a plain re-run
 * there, e.g. to pin a new release, must not drop the other targets) and plans the rest from it.
 */
export type ConfigPlan =
  | { kind: 'new' }
  | { kind: 'add'; existing: ExistingRepository }
  | { kind: 'keep'; existing: ExistingRepository };

/**
 * Every file init writes for these answers, validated (the config by the engine's own loader). The
 * workflows' path filters cover every target of the config written (or kept); after `add`, a workflow
 * still exactly as init wrote it for the targets before is init's own, and is updated without --force.
 */
export function planFiles(
  root: string,
  packageDir: string,
  answers: InitAnswers,
  pin: HillclimbPin,
  version: string,
  plan: ConfigPlan = { kind: 'new' },
): PlannedFile[] {
  const text =
    plan.kind === 'new'
      ? configText(answers, version)
      : plan.kind === 'add'
        ? addTargetText(plan.existing.text, answers)
        : undefined;
  const config =
    text === undefined
      ? (plan as { existing: ExistingRepository }).existing.config
      : validateConfigText(text, root, answers.target);
  const workflowsFor = (c: HillclimbConfig) =>
    initWorkflows(packageDir, pin, version, {
      editable: everyTargetsEditable(c),
      base: c.forge.base,
      configFile: CONFIG_FILE,
    });
  const workflows = workflowsFor(config);
  const before = plan.kind === 'add' ? workflowsFor(plan.existing.config) : undefined;
  return [
    ...(text === undefined
      ? []
      : [
          {
            path: CONFIG_FILE,
            content: text,
            ...(plan.kind === 'add' ? { replaces: plan.existing.text } : {}),
          },
        ]),
    ...Object.entries(workflows).map(([file, content]) => ({
      path: `.github/workflows/${file}`,
      content,
      ...(before ? { replaces: before[file as keyof typeof before] } : {}),
    })),
    { path: PROMPT_FILE, content: readFileSync(join(packageDir, 'prompts', 'iteration.md'), 'utf8') },
    {
      path: `${DIRECTIVES_DIR}/${STARTER_DIRECTIVE}.md`,
      content: readFileSync(join(packageDir, 'session_directives', `${STARTER_DIRECTIVE}.md`), 'utf8'),
    },
  ];
}

/** Every target's editable globs, once each, in file order: the workflows' path filters. */
export function everyTargetsEditable(config: HillclimbConfig): string[] {
  return [...new Set(Object.values(config.targets).flatMap((t) => t.editable))];
}

/** Write the planned files under `root`: missing ones always, differing ones only with `force`. */
export function applyPlan(root: string, plan: readonly PlannedFile[], opts: { force: boolean }): InitResult {
  const files: InitResult['files'] = [];
  const differing: string[] = [];
  for (const f of plan) {
    const abs = join(root, f.path);
    const current = existsSync(abs) ? readFileSync(abs, 'utf8') : undefined;
    let outcome: FileOutcome;
    if (current === f.content) outcome = 'unchanged';
    else if (current !== undefined && current !== f.replaces && !opts.force) {
      outcome = 'differs';
      differing.push(f.path);
    } else {
      mkdirSync(dirname(abs), { recursive: true });
      writeFileAtomic(abs, f.content);
      outcome = current === undefined ? 'created' : current === f.replaces ? 'updated' : 'replaced';
    }
    files.push({ path: f.path, outcome });
  }
  return { files, differing };
}

/**
 * What is wrong with the requirements answer on disk, for a warning (init writes no requirements): the
 * file is missing (and a pyproject.toml could serve), or pip could not read it. Undefined when fine.
 */
export function requirementsWarning(root: string, spec: string): string | undefined {
  const { file } = parseRequirementsSpec(spec, '--requirements');
  if (!existsSync(join(root, file))) {
    const pyproject = existsSync(join(root, 'pyproject.toml'))
      ? '; or pass --requirements pyproject.toml[<extra>] to install the dependencies your pyproject.toml lists, and that extra'
      : '';
    return `--requirements ${file} does not exist: hillclimb setup and the workflows install it, so write it before hillclimb setup (JAX, pytest, hillclimb-bench[jax] and what your kernel imports)${pyproject}`;
  }
  try {
    requirementLines(root, spec);
  } catch (e) {
    return `--requirements ${spec}: ${errorMessage(e)}`;
  }
  return undefined;
}

/**
 * What to do next, for the agent and backend the answers name. `added`: the target was added beside
 * others (init --add-target), so every command names it, and the replay agent reads its patches from
 * a folder of its own under `replayDir` (agent.replay.dir).
 */
export function nextSteps(answers: InitAnswers, written: boolean, added?: { replayDir: string }): string[] {
  const replayDir = added ? `${added.replayDir}/${answers.target}` : 'hillclimb/replay';
  const t = added ? ` --target ${answers.target}` : '';
  const key =
    answers.agent === 'codex'
      ? 'secret OPENAI_API_KEY (only the propose job receives it)'
      : answers.agent === 'claude'
        ? 'secret ANTHROPIC_API_KEY (only the propose job receives it)'
        : answers.agent === 'command'
          ? 'no model key for the command agent (it gets no network unless agent.command.network: host)'
          : `no model key for the replay agent: put NNNN-*.patch files in ${replayDir}`;
  const module = answers.programs.replaceAll('.', '/');
  return [
    'Next steps:',
    `  0. Write ${module}.py (protected): a hillclimb_bench target that imports your kernel only in`,
    '     its kernel() and ends with hillclimb_bench.cli(TARGET) (packages/hillclimb-bench/README.md);',
    `     list JAX, pytest and hillclimb-bench[jax] (no source: it comes from this hillclimb) in ${requirementsPlace(answers.requirements)}`,
    `  1. Commit${written ? '' : ' (if not yet)'}: git add -A && git commit -m "hillclimb: ${added ? `add target ${answers.target}` : 'init'}"`,
    '  2. First verdict, on this machine (docs/setup.md, "Your first verdict"):',
    `     hillclimb setup     (.venv from ${answers.requirements})`,
    '     hillclimb doctor    (every piece a run needs)',
    `     hillclimb check${t}     (the target module once: its programs exported and verified, the fix named)`,
    `     hillclimb test${t}      (the CPU gate on HEAD)`,
    `     hillclimb measure${t} --base ${answers.base} --head <a branch with your change>`,
    `     hillclimb loop${t} -n 1`,
    '  3. GitHub → Settings → Secrets and variables → Actions:',
    `     - ${key}`,
    '     - variable HILLCLIMB_APP_ID + secret HILLCLIMB_APP_PRIVATE_KEY (a GitHub App, so loop PRs run your CI),',
    '       or allow "GitHub Actions to create and approve pull requests" (Settings → Actions → General)',
    '     - for TPUs: variables GCP_WORKLOAD_IDENTITY_PROVIDER and GCP_SERVICE_ACCOUNT, and compute.tpu_vm in hillclimb.yml',
    '     - optional: variable HILLCLIMB_SCHEDULE=true for a nightly iteration',
    '  4. First dry run: Actions → hillclimb → Run workflow with dry-run: true and backend: local',
    `     (or: gh workflow run hillclimb.yml${added ? ` -f target=${answers.target}` : ''} -f dry-run=true -f backend=local)`,
    '  Every secret and variable, branch protection, Workload Identity: docs/setup.md in hillclimb.',
  ];
}

/** Where the next steps say to list the requirements: the file, or a pyproject's extra. */
function requirementsPlace(spec: string): string {
  const { file, pyproject, extras } = parseRequirementsSpec(spec, '--requirements');
  if (!pyproject) return file;
  return extras.length > 0
    ? `${file}'s [project.optional-dependencies] ${extras[0]}`
    : `${file}'s [project] dependencies`;
}
