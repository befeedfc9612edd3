/**
 * The workflows `hillclimb init` writes: hillclimb's own workflow files, read from the installed
 * package, with only what names this repository changed. Nothing else is touched, so the jobs, their
 * permissions and the trust split between token-holding and untrusted jobs (docs/security.md) stay
 * exactly those of the release that is pinned. Each rewrite must match in the source file: when a
 * workflow changes under it, init fails (and its tests with it) instead of writing a half-rewritten file.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { HillclimbPin } from './pin.js';

/** The workflows a repository using hillclimb runs (ci.yml is hillclimb's own CI and stays here). */
export const INIT_WORKFLOWS = ['hillclimb.yml', 'pr-evidence.yml', 'baseline.yml', 'janitor.yml'] as const;
export type InitWorkflow = (typeof INIT_WORKFLOWS)[number];

/** What names the user's repository in a workflow. */
export interface WorkflowAnswers {
  /** The target's editable globs: the paths whose PRs get evidence and whose pushes get a baseline. */
  editable: readonly string[];
  /** The default branch: the baseline tracks it. */
  base: string;
  /** The config file the workflows read (a push to it re-measures the baseline). */
  configFile: string;
}

interface Rewrite {
  what: string;
  files: readonly InitWorkflow[];
  pattern: RegExp;
  replace: (pin: HillclimbPin, version: string, a: WorkflowAnswers) => (...groups: string[]) => string;
}

const flow = (items: readonly string[]) => `[${items.map((i) => JSON.stringify(i)).join(', ')}]`;

const REWRITES: readonly Rewrite[] = [
  {
    what: 'uses: ./actions/<name>',
    files: INIT_WORKFLOWS,
    pattern: /^(\s*(?:-\s+)?uses:\s+)\.\/actions\/([a-z0-9-]+)[ \t]*$/gm,
    replace: (pin, version) => (_m, lead, name) =>
      `${lead}${pin.repository}/actions/${name}@${pin.commit} # hillclimb ${version}`,
  },
  {
    what: 'pull_request paths: ["kernels/**"]',
    files: ['pr-evidence.yml'],
    pattern: /^(\s+paths: )\["kernels\/\*\*"\]$/gm,
    replace: (_p, _v, a) => (_m, lead) => `${lead}${flow(a.editable)}`,
  },
  {
    what: 'push paths: ["kernels/**", "hillclimb.yml"]',
    files: ['baseline.yml'],
    pattern: /^(\s+paths: )\["kernels\/\*\*", "hillclimb\.yml"\]$/gm,
    replace: (_p, _v, a) => (_m, lead) => `${lead}${flow([...a.editable, a.configFile])}`,
  },
  {
    what: 'push branches: [main]',
    files: ['baseline.yml'],
    pattern: /^(\s+branches: )\[main\]$/gm,
    replace: (_p, _v, a) => (_m, lead) => `${lead}${flow([a.base])}`,
  },
];

/** The first line of every written workflow: where it came from, and how to update it. */
export function provenanceLine(pin: HillclimbPin, version: string): string {
  return `# Written by \`hillclimb init\` from ${pin.repository}@${pin.commit} (hillclimb ${version}); re-run it to update.`;
}

/**
 * One of hillclimb's workflows (`source`: its text) for this repository. Throws when a rewrite no
 * longer matches, or when a local `uses: ./…` survives.
 */
export function rewriteWorkflow(
  file: InitWorkflow,
  source: string,
  pin: HillclimbPin,
  version: string,
  answers: WorkflowAnswers,
): string {
  let text = source;
  for (const r of REWRITES) {
    if (!r.files.includes(file)) continue;
    let count = 0;
    const fn = r.replace(pin, version, answers);
    text = text.replace(r.pattern, (...args: string[]) => {
      count++;
      return fn(...args);
    });
    if (count === 0) {
      throw new Error(
        `${file}: no "${r.what}" to rewrite: the packaged workflow changed; update src/init/workflows.ts`,
      );
    }
  }
  if (/^\s*(?:-\s+)?uses:\s+\.\//m.test(text)) {
    throw new Error(`${file}: a local "uses: ./…" is left after the rewrite; update src/init/workflows.ts`);
  }
  parse(text); // still YAML
  return `${provenanceLine(pin, version)}\n${text}`;
}

/** Every workflow init writes, by file name, from the package's `.github/workflows`. */
export function initWorkflows(
  packageDir: string,
  pin: HillclimbPin,
  version: string,
  answers: WorkflowAnswers,
): Record<InitWorkflow, string> {
  const out = {} as Record<InitWorkflow, string>;
  for (const file of INIT_WORKFLOWS) {
    const source = readFileSync(join(packageDir, '.github', 'workflows', file), 'utf8');
    out[file] = rewriteWorkflow(file, source, pin, version, answers);
  }
  return out;
}
