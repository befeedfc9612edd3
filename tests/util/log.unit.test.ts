// The loggers keep untrusted words data (src/util/log.ts): no line of the Actions logger is a workflow
// command unless the harness meant one, and no control character reaches a terminal or the runner.
import { describe, expect, it } from 'vitest';
import { actionsLogger, asRunnerData, terminalLogger, withoutControls } from '../../src/util/log.js';

const commandName = (line: string) => /^\s*::([a-z-]+)/.exec(line)?.[1];

describe('asRunnerData', () => {
  it.each([
    ['::set-output name=verdict::improved'],
    ['  ::stop-commands::token'],
    ['\t::add-mask::x'],
    ['::error file=x::y'],
  ])('breaks the command in %j without changing what a reader sees', (line) => {
    const out = asRunnerData(line);
    expect(commandName(out)).toBeUndefined();
    expect(out.replaceAll('\u200b', '')).toBe(line);
  });

  it('breaks every line of a message, and the old ##[…] form anywhere in a line', () => {
    const out = asRunnerData('first\n::set-output name=a::b\nmid ##[warning]x');
    expect(out.split('\n').map(commandName)).toEqual([undefined, undefined, undefined]);
    expect(out).not.toContain('##[');
  });

  it('leaves ordinary text, and colons inside a line, alone', () => {
    expect(asRunnerData('fwd@B1: rel_rms 1e-3 > 1e-4 (see a::b)')).toBe(
      'fwd@B1: rel_rms 1e-3 > 1e-4 (see a::b)',
    );
  });
});

describe('the loggers', () => {
  it('the Actions logger: info, warnings and errors carry no command of their text', () => {
    const lines: string[] = [];
    const log = actionsLogger((l) => lines.push(l));
    log.info('gate failed\n::set-output name=verdict::improved');
    log.warn('::stop-commands::x');
    log.error('##[group]y');
    const commands = lines.flatMap((l) => l.split('\n')).map(commandName);
    expect(commands).toEqual([undefined, undefined, 'warning', 'error']);
    expect(lines.join('\n')).not.toContain('##[');
  });

  it('control characters are shown, never acted on (terminal and runner alike)', () => {
    expect(withoutControls('a\u001b[2Kb\rc\u0007\td\ne')).toBe('a\\u{1b}[2Kb\\u{d}c\\u{7}\td\ne');
    const lines: string[] = [];
    terminalLogger({ write: (l) => lines.push(l) }).info('x\u001b]0;title\u0007');
    expect(lines).toEqual(['x\\u{1b}]0;title\\u{7}']);
  });
});
