// The store.hf keys this module added to the config schema.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { MINIMAL_CONFIG } from '../helpers/config.js';

const BASE = `${MINIMAL_CONFIG}store:\n  kind: hf\n  hf:\n    repo: my-org/evidence\n`;

describe('store.hf config', () => {
  it('creates private repositories unless told otherwise', () => {
    const hf = parseConfig(BASE, '/repo/hillclimb.yml').store.hf!;
    expect(hf).toEqual({
      repo: 'my-org/evidence',
      endpoint: 'https://huggingface.co',
      token_env: 'HF_TOKEN',
      private: true,
    });
    const pub = parseConfig(`${BASE}    private: false\n`, '/repo/hillclimb.yml').store.hf!;
    expect(pub.private).toBe(false);
  });

  it('rejects a non-boolean private', () => {
    expect(() => parseConfig(`${BASE}    private: "no"\n`, '/repo/hillclimb.yml')).toThrow(
      /store\.hf\.private/,
    );
  });
});
