import { describe, expect, it } from 'vitest';
import { assertKey, assertPrefix, joinKey } from '../../src/store/keys.js';

describe('store keys', () => {
  it('accepts clean relative paths', () => {
    expect(assertKey('runs/r1/i003/trace/host.trace.json.gz')).toBe('runs/r1/i003/trace/host.trace.json.gz');
    expect(assertKey('.gitattributes')).toBe('.gitattributes');
  });

  it('refuses keys that could escape the store or are ambiguous', () => {
    for (const bad of [
      '',
      '/abs',
      '../up',
      'a/../b',
      'a//b',
      'a/./b',
      'trailing/',
      'back\\slash',
      'tab\there',
    ]) {
      expect(() => assertKey(bad), JSON.stringify(bad)).toThrow(/invalid store key/);
    }
  });

  it('allows an empty prefix and a trailing slash on a prefix', () => {
    expect(assertPrefix('')).toBe('');
    expect(assertPrefix('runs/r1/')).toBe('runs/r1/');
    expect(() => assertPrefix('../runs')).toThrow(/invalid store prefix/);
  });

  it('joins without doubled slashes', () => {
    expect(joinKey('runs/r1/', 'a.json')).toBe('runs/r1/a.json');
    expect(joinKey('', 'a.json')).toBe('a.json');
  });
});
