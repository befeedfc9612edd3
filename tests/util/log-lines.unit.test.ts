import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lastErrorLine } from '../../src/loop/steps/programs.js';
import { agentLastWords } from '../../src/loop/steps/propose.js';
import { tellingLogLine } from '../../src/util/index.js';
import { tempDir } from '../helpers/paths.js';

const t = tempDir('hc-log-lines-');
afterAll(t.cleanup);
let n = 0;
function log(text: string): string {
  const file = join(t.dir, `log-${++n}.txt`);
  writeFileSync(file, text);
  return file;
}

describe('tellingLogLine (one helper for the export, verifier and agent logs)', () => {
  it('searches after the header, skips harness lines, prefers patterns in order, falls back when told', () => {
    const file = log('$ run \\\n  --flag\n# cwd: /w\nerror: one\nfatal: two\n# note\nlast words\n');
    const o = { headerEnd: /^# cwd: .*$/m, skip: /^# / };
    expect(tellingLogLine(file, { ...o, telling: [/fatal/, /error/] })).toBe('fatal: two');
    expect(tellingLogLine(file, { ...o, telling: [/missing/, /error/] })).toBe('error: one');
    expect(tellingLogLine(file, { ...o, telling: [/missing/] })).toBeUndefined();
    expect(tellingLogLine(file, { ...o, telling: [/missing/], orLast: true })).toBe('last words');
    // Only the last `within` lines are searched.
    expect(tellingLogLine(file, { ...o, telling: [/error/], within: 2 })).toBeUndefined();
    // The header's own lines never count: `--flag` is the command's, before `# cwd:`.
    expect(tellingLogLine(file, { ...o, telling: [/--flag/] })).toBeUndefined();
    expect(tellingLogLine(join(t.dir, 'absent'), { ...o, telling: [/x/], orLast: true })).toBeUndefined();
  });
});

describe('its two callers keep their behaviour', () => {
  it("lastErrorLine: the step's own `failed:`/`error:` line, else the last line; harness lines skipped", () => {
    expect(lastErrorLine(log('$ python -m bench\n# cwd: /w\njax error: bad shape\nexiting\n'))).toBe(
      'jax error: bad shape',
    );
    expect(lastErrorLine(log('$ python -m bench\nstarted\nstopped\n# done\n'))).toBe('stopped');
    expect(lastErrorLine(log(`export failed: ${'x'.repeat(900)}\n`))).toHaveLength(800);
    expect(lastErrorLine(log(''))).toBeUndefined();
    expect(lastErrorLine(join(t.dir, 'absent'))).toBeUndefined();
  });

  it('agentLastWords: a program the sandbox could not find (with where to look), else an error line, else nothing', () => {
    const header = '$ claude \\\n  -p error-in-the-command\n# cwd: /w\n';
    expect(agentLastWords(log(`${header}Fatal error: rate limited\nbye\n`))).toBe(
      ': Fatal error: rate limited',
    );
    const missing = agentLastWords(log(`${header}error: early\nsh: 1: pyenv: not found\n`));
    expect(missing).toMatch(/^: sh: 1: pyenv: not found \(in the sandbox PATH shows/);
    expect(agentLastWords(log(`${header}all good\n`))).toBe('');
    expect(agentLastWords(join(t.dir, 'absent'))).toBe('');
  });
});
