/**
 * The iteration prompt: a template (prompts/iteration.md) with `{{name}}` placeholders, filled with
 * iteration metadata, directive presets and context the harness computed. Every placeholder in the
 * template must have a value and every value a placeholder, so a renamed field cannot silently vanish.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HillclimbError } from '../../util/index.js';

export interface PromptVars {
  iteration: string;
  total_iterations: string;
  target: string;
  branch: string;
  champion_commit: string;
  editable: string;
  protected: string;
  device: string;
  champion_metrics: string;
  hotspots: string;
  recent_log: string;
  cpu_test_command: string;
  result_file: string;
  directives: string;
}

const PLACEHOLDER = /\{\{\s*([a-z_]+)\s*\}\}/g;

/** Fill a template. Throws naming the template file and the placeholder on any mismatch. */
export function renderPrompt(template: string, vars: PromptVars, templateFile = 'prompt template'): string {
  const used = new Set<string>();
  const out = template.replace(PLACEHOLDER, (_, name: string) => {
    if (!(name in vars)) {
      throw new HillclimbError(`${templateFile}: unknown placeholder {{${name}}}`, {
        hint: `known placeholders: ${Object.keys(vars).sort().join(', ')}`,
      });
    }
    used.add(name);
    return vars[name as keyof PromptVars];
  });
  const unused = Object.keys(vars).filter((k) => !used.has(k) && k !== 'directives');
  if (unused.length > 0) {
    throw new HillclimbError(`${templateFile}: does not use {{${unused.join('}}, {{')}}}`, {
      hint: 'the harness computes these for the agent; a template that drops them hides context',
    });
  }
  return out;
}

/** Names of the directive presets in a folder (file names without .md), sorted. */
export function directivePresets(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.md'))
    .map((f) => f.slice(0, -3))
    .sort();
}

/** Load directive presets in order and format them as the prompt's directives block. */
export function loadDirectives(dir: string, names: readonly string[]): string {
  if (names.length === 0) return '';
  const known = directivePresets(dir);
  const blocks = names.map((name, i) => {
    if (!known.includes(name)) {
      throw new HillclimbError(`unknown directive preset "${name}" (looked in ${dir})`, {
        hint: `known presets: ${known.join(', ') || '(none)'}`,
      });
    }
    const text = readFileSync(join(dir, `${name}.md`), 'utf8').trim();
    if (text === '') throw new HillclimbError(`directive preset ${join(dir, `${name}.md`)} is empty`);
    return `### Directive ${i + 1}: ${name}\n\n${text}`;
  });
  return `\n## Session directives (follow them unless they conflict with correctness)\n\n${blocks.join('\n\n')}\n`;
}
