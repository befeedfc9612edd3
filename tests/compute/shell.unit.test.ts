import { describe, expect, it } from 'vitest';
import { shellJoin, shellQuote } from '../../src/compute/shell.js';
import { run } from '../../src/exec/exec.js';

/** Arguments that break any quoting that is not airtight. */
const HOSTILE = [
  'plain',
  'two words',
  "it's",
  "'",
  "''",
  '"double"',
  '$HOME',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal ${…} is the point of this case
  '${HOME}',
  '$(touch /tmp/hc-pwned)',
  '`touch /tmp/hc-pwned`',
  'a;b',
  'a && b',
  'a|b',
  'x > /tmp/hc-pwned',
  'back\\slash',
  'new\nline',
  'tab\there',
  '*',
  '~',
  '-n',
  '',
  '{metrics}',
  'ünïcødé ✓',
  "'; rm -rf / #",
];

describe('shellQuote / shellJoin', () => {
  it('single-quotes and escapes embedded single quotes', () => {
    expect(shellQuote("it's")).toBe("'it'\\''s'");
    expect(shellQuote('')).toBe("''");
    expect(shellJoin(['a', 'b c'])).toBe("'a' 'b c'");
  });

  it('a real shell splits the joined string back into exactly the same arguments', async () => {
    // printf prints each argument NUL-terminated; sh -c runs the string as the remote side would.
    const line = `printf '%s\\0' ${shellJoin(HOSTILE)}`;
    const r = await run('sh', ['-c', line]);
    expect(r.stdout.split('\0').slice(0, -1)).toEqual(HOSTILE);
  });

  it('refuses what no shell argument can carry', () => {
    expect(() => shellQuote('a\0b')).toThrow(/NUL/);
    expect(() => shellJoin([])).toThrow(/empty/);
  });
});
