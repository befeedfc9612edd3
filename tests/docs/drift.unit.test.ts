// Places that describe what a command prints or does, checked against the code, so they cannot drift
// again (issue 37): the next steps init prints as docs/setup.md lists them, and how `measure --help` and
// the iteration prompt say a candidate is measured (docs/metrics.md: exported programs timed by the
// verifier, not fresh processes).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/main.js';
import { nextSteps } from '../../src/init/index.js';
import { REPO_ROOT } from '../helpers/paths.js';

const read = (...path: string[]) => readFileSync(join(REPO_ROOT, ...path), 'utf8');

describe('docs and help that describe the code', () => {
  it('docs/setup.md names exactly the hillclimb commands init’s next steps print', () => {
    const setup = read('docs', 'setup.md').replace(/\s+/g, ' ');
    const sentence = setup.match(
      /`init` ends by printing the next steps: (.*?)first dry run on GitHub\./,
    )?.[1];
    expect(sentence).toBeDefined();
    const documented = [...sentence!.matchAll(/`(hillclimb [^`]+)`/g)].map((m) => m[1]!);
    const printed = nextSteps(
      {
        target: 'op',
        editable: ['src/op.py'],
        protected: [],
        testCommand: [],
        programs: 'bench.op',
        metric: 'measurements.fwd.median_ms',
        direction: 'lower',
        agent: 'codex',
        requirements: 'requirements.txt',
        base: 'main',
      },
      true,
    ).join('\n');
    const commands = [...printed.matchAll(/^ {5}(hillclimb [^(]+?)\s*(?:\(|$)/gm)].map((m) => m[1]!);
    // `<…>` in the doc stands for what init fills in.
    const pattern = (doc: string) =>
      new RegExp(
        `^${doc
          .split(/<[^>]+>/)
          .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
          .join('.+')}$`,
      );
    expect(documented.length).toBe(commands.length);
    for (const [i, doc] of documented.entries()) expect(commands[i]).toMatch(pattern(doc));
  });

  it('measure --help and the iteration prompt describe the verifier timing exported programs', () => {
    const measure = buildProgram({ stdout: () => {}, stderr: () => {} }, () => {}).commands.find(
      (c) => c.name() === 'measure',
    );
    const prompt = read('prompts', 'iteration.md');
    for (const text of [measure!.description(), prompt]) {
      expect(text).not.toMatch(/fresh-process|fresh process/);
      expect(text).toMatch(/call by call in one verifier\s+process/);
    }
  });
});
