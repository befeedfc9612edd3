import { describe, expect, it } from 'vitest';
import { UnknownNameError } from '../../src/util/errors.js';
import { Registry } from '../../src/util/registry.js';

describe('Registry', () => {
  it('builds by name and lists names sorted', () => {
    const r = new Registry<() => string>('widget', [
      ['zeta', () => 'z'],
      ['alpha', () => 'a'],
    ]);
    expect(r.get('zeta')()).toBe('z');
    expect(r.names()).toEqual(['alpha', 'zeta']);
  });

  it('an unknown name fails with the kind and the known names', () => {
    const r = new Registry<() => string>('widget', [['alpha', () => 'a']]);
    expect(() => r.get('beta')).toThrow(UnknownNameError);
    expect(() => r.get('beta')).toThrow('unknown widget "beta"; known: alpha');
  });

  it('register adds or replaces, unregister removes', () => {
    const r = new Registry<() => string>('widget', [['alpha', () => 'a']]);
    r.register('alpha', () => 'A');
    r.register('beta', () => 'b');
    expect(r.get('alpha')()).toBe('A');
    r.unregister('beta');
    expect(r.names()).toEqual(['alpha']);
  });
});
