// The provenance table's benchmark row: the implementation and preset a target names, and nothing for a
// target that names neither (hillclimb_bench writes the placeholder "default" for both).
import { describe, expect, it } from 'vitest';
import { provenanceRows } from '../../src/report/provenance.js';
import { IMPROVED, measured } from './builders.js';

function benchmark(impl: string, preset: string): string | undefined {
  const ev = measured(IMPROVED);
  ev.measurement!.impl = impl;
  ev.measurement!.preset = preset;
  return provenanceRows(ev).find(([what]) => what === 'benchmark')?.[1];
}

describe('the provenance benchmark row', () => {
  it('names the impl and preset a target names', () => {
    expect(benchmark('pallas', 'tiny')).toBe('impl pallas, preset tiny');
    expect(benchmark('pallas', 'default')).toBe('impl pallas');
  });

  it('is left out for a target that names neither (an RMSNorm: "impl default, preset default")', () => {
    expect(benchmark('default', 'default')).toBeUndefined();
  });
});
