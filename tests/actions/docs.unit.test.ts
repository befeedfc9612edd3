// docs/actions.md carries every action's inputs and outputs exactly as its action.yml declares them:
// the reference section is rendered from the metadata and must match. To rewrite it after changing an
// action.yml: UPDATE_ACTION_DOCS=1 npx vitest run tests/actions/docs.unit.test.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/paths.js';
import { ACTIONS, actionMetadata } from './harness.js';

const DOC = join(REPO_ROOT, 'docs', 'actions.md');
const START = '<!-- reference: generated from actions/*/action.yml; see tests/actions/docs.unit.test.ts -->';
const END = '<!-- end of reference -->';

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ').trim();

function renderReference(): string {
  const sections = ACTIONS.map((name) => {
    const meta = actionMetadata(name);
    const inputs = Object.entries(meta.inputs).map(
      ([input, spec]) =>
        `| \`${input}\` | ${spec.required ? 'yes' : 'no'} | ${spec.default === undefined ? '' : `\`${spec.default}\``} | ${cell(spec.description)} |`,
    );
    const outputs = Object.entries(meta.outputs).map(
      ([output, spec]) => `| \`${output}\` | ${cell(spec.description)} |`,
    );
    const runs = meta.runs.post
      ? `\`${meta.runs.using}\`, main \`${meta.runs.main}\`, post \`${meta.runs.post}\` (${meta.runs['post-if'] ?? 'always()'})`
      : `\`${meta.runs.using}\`, main \`${meta.runs.main}\``;
    return [
      `### ${name}`,
      '',
      cell(meta.description),
      '',
      `Runs: ${runs}. Source: [\`actions/${name}/src/\`](../actions/${name}/src/).`,
      '',
      '| input | required | default | description |',
      '|---|---|---|---|',
      ...inputs,
      '',
      '| output | description |',
      '|---|---|',
      ...outputs,
    ].join('\n');
  });
  return `${START}\n\n${sections.join('\n\n')}\n\n${END}`;
}

describe('docs/actions.md', () => {
  it('holds the reference rendered from every action.yml', () => {
    const text = readFileSync(DOC, 'utf8');
    const start = text.indexOf(START);
    const end = text.indexOf(END);
    expect(start, 'reference start marker').toBeGreaterThan(-1);
    expect(end, 'reference end marker').toBeGreaterThan(start);
    const current = text.slice(start, end + END.length);
    const rendered = renderReference();
    if (process.env.UPDATE_ACTION_DOCS && current !== rendered) {
      writeFileSync(DOC, text.replace(current, rendered));
      return;
    }
    expect(current).toBe(rendered);
  });
});
