// addTargetText: the new target's entry goes under `targets:` and nothing else of the file changes;
// a layout it cannot insert into as text (another indent, a flow mapping) goes through the YAML document.
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { addTargetText } from '../../src/init/add-target.js';

const MM = {
  target: 'mm',
  editable: ['src/mm/**'],
  protected: ['.github/**', 'hillclimb.yml'],
  testCommand: ['{python}', '-m', 'pytest'],
  programs: 'bench.mm',
  metric: 'measurements.fwd.median_ms',
  direction: 'lower' as const,
};

const targetsOf = (text: string) =>
  (parse(text) as { targets: Record<string, { editable: string[] }> }).targets;

describe('addTargetText', () => {
  it("inserts after the last target, before the next key's comment, as text", () => {
    const text =
      'version: 1\ntargets:\n  a:\n    editable: [a/**] # mine\n\n# the loop\nloop:\n  target: a\n';
    const out = addTargetText(text, MM);
    expect(out.startsWith('version: 1\ntargets:\n  a:\n    editable: [a/**] # mine\n  mm:\n')).toBe(true);
    expect(out.endsWith('\n\n# the loop\nloop:\n  target: a\n')).toBe(true);
    expect(Object.keys(targetsOf(out))).toEqual(['a', 'mm']);
    expect(targetsOf(out).mm!.editable).toEqual(['src/mm/**']);
  });

  it('goes through the YAML document for a four-space indent or a flow mapping, keeping the others', () => {
    for (const text of [
      'targets:\n    a:\n        editable: [a/**]\nloop: {target: a}\n',
      'targets: {a: {editable: [a/**]}}\nloop: {target: a}\n',
    ]) {
      const out = addTargetText(text, MM);
      expect(targetsOf(out).a).toEqual({ editable: ['a/**'] });
      expect(targetsOf(out).mm!.editable).toEqual(['src/mm/**']);
      expect((parse(out) as { loop: unknown }).loop).toEqual({ target: 'a' });
    }
  });
});
