// The search phases' inputs: the attestations by slot (the workflow's toJSON of a matrix's outputs) and
// the slot a workflow gives a job.
import { describe, expect, it } from 'vitest';
import { trustedSlot } from '../../../src/loop/drivers/phases.js';
import { attestationsBySlot } from '../../../src/loop/drivers/search-phases.js';

const attestation = (digest: string) =>
  JSON.stringify({
    v: 1,
    phase: 'cpu-gate',
    digest: digest.repeat(64),
    champion: 'a'.repeat(40),
    verdict: '',
    verified: true,
  });

describe('attestationsBySlot', () => {
  it('reads attestation-c<slot> keys and ignores every other output and empty values', () => {
    const bySlot = attestationsBySlot(
      JSON.stringify({
        pending: 'true',
        attestation: attestation('f'),
        'attestation-c1': attestation('1'),
        'attestation-c2': '',
        'attestation-c3': attestation('3'),
        'attestation-cx': attestation('9'),
      }),
    );
    expect([...bySlot.keys()]).toEqual([1, 3]);
    expect(bySlot.get(3)!.digest).toBe('3'.repeat(64));
  });

  it('vouches for nothing without input, and refuses what is not a JSON object or not an attestation', () => {
    expect(attestationsBySlot(undefined).size).toBe(0);
    expect(attestationsBySlot('').size).toBe(0);
    expect(() => attestationsBySlot('[1]')).toThrow(/attestations: not a JSON object of job outputs/);
    expect(() => attestationsBySlot('{"attestation-c2": "{}"}')).toThrow(
      /attestations: attestation-c2: not a hillclimb attestation/,
    );
  });
});

describe('trustedSlot', () => {
  it('names a candidate 1 to k; with one candidate, slot 1 names none', () => {
    expect(trustedSlot(3, 2)).toEqual({ index: 2, of: 3 });
    expect(trustedSlot(3, undefined)).toBeUndefined();
    expect(trustedSlot(1, 1)).toBeUndefined();
    expect(() => trustedSlot(3, 4)).toThrow(
      /slot 4 is not a candidate of this iteration: loop\.candidates is 3/,
    );
    expect(() => trustedSlot(1, 2)).toThrow(/loop\.candidates is 1/);
  });
});
