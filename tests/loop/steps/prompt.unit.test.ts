import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  directivePresets,
  loadDirectives,
  type PromptVars,
  renderPrompt,
} from '../../../src/loop/steps/prompt.js';
import { REPO_ROOT } from '../../helpers/paths.js';

const VARS: PromptVars = {
  iteration: '3',
  total_iterations: '10',
  target: 'gdn',
  branch: 'hillclimb/gdn/r1/i003',
  champion_commit: 'abc1234',
  editable: '`kernels/gdn/**`',
  protected: '`kernels/harness/**`',
  device: 'local CPU',
  champion_metrics: '| metric | value |',
  hotspots: '| op | ms |',
  recent_log: '(none yet)',
  cpu_test_command: 'python -m pytest kernels',
  result_file: '/tmp/result.json',
  directives: '',
};

describe('renderPrompt', () => {
  it('fills the shipped template completely', () => {
    const template = readFileSync(join(REPO_ROOT, 'prompts', 'iteration.md'), 'utf8');
    const out = renderPrompt(template, VARS);
    expect(out).toContain('iteration 3 of 10');
    expect(out).toContain('/tmp/result.json');
    expect(out).not.toMatch(/\{\{/);
  });

  it('names an unknown placeholder and the known ones', () => {
    expect(() => renderPrompt('{{iteration}} {{mystery}}', VARS, 'p.md')).toThrow(
      'p.md: unknown placeholder {{mystery}}',
    );
  });

  it('refuses a template that drops harness context', () => {
    expect(() => renderPrompt('only {{iteration}}', VARS, 'p.md')).toThrow(
      /does not use \{\{total_iterations\}\}/,
    );
  });
});

describe('directives', () => {
  const dir = join(REPO_ROOT, 'session_directives');

  it('ships at least five GDN presets', () => {
    expect(directivePresets(dir)).toEqual(
      expect.arrayContaining([
        'triangular-inversion',
        'layout-and-dtypes',
        'launch-count',
        'backward-tape-reuse',
        'whole-layer-shell',
      ]),
    );
  });

  it('formats presets in the given order', () => {
    const block = loadDirectives(dir, ['launch-count', 'triangular-inversion']);
    expect(block.indexOf('Directive 1: launch-count')).toBeLessThan(
      block.indexOf('Directive 2: triangular-inversion'),
    );
  });

  it('names an unknown preset and lists the known ones', () => {
    expect(() => loadDirectives(dir, ['nope'])).toThrow('unknown directive preset "nope"');
  });

  it('is empty when no presets are chosen', () => {
    expect(loadDirectives(dir, [])).toBe('');
  });
});
