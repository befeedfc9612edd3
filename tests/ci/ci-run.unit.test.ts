import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/paths.js';

/** The shell commands in the fenced blocks of the README's "Quick start" section, in order. */
function quickStartCommands(readme: string): string[] {
  const section = readme.split(/^## /m).find((s) => s.startsWith('Quick start'));
  if (!section) throw new Error('README has no "## Quick start" section');
  return [...section.matchAll(/```sh\n([^`]*?)\n```/g)].map((m) => m[1]!.trim());
}

/** The command lines of .ci/run: everything that is not a comment, `set`, `cd` or the shebang. */
function ciCommands(script: string): string[] {
  return script
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#') && !l.startsWith('set ') && !l.startsWith('cd '));
}

describe('.ci/run', () => {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const script = readFileSync(join(REPO_ROOT, '.ci', 'run'), 'utf8');

  it('has exactly two quick-start commands: the demo, then the tests', () => {
    const cmds = quickStartCommands(readme);
    expect(cmds).toHaveLength(2);
    expect(cmds[0]).toContain('demo');
    expect(cmds[1]).toContain('test');
  });

  it('runs exactly the README test command and nothing else', () => {
    expect(ciCommands(script)).toEqual([quickStartCommands(readme)[1]]);
  });

  it('the README test command runs the TypeScript and the Python suites through npm test', () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.test).toContain('npm run test:ts');
    expect(pkg.scripts.test).toContain('npm run test:py');
    expect(pkg.scripts['test:py']).toContain('pytest kernels');
  });

  it('the README test command also runs the workflow files in act (npm run test:workflows)', () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(quickStartCommands(readme)[1]).toContain('npm run test:workflows');
    expect(pkg.scripts['test:workflows']).toBe('vitest run -c vitest.workflows.config.ts');
  });
});
