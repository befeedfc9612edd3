import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { buildStore, stores } from '../../src/store/factory.js';
import { HfStore } from '../../src/store/stores/hf.js';
import { LocalStore } from '../../src/store/stores/local.js';
import { UnknownNameError } from '../../src/util/errors.js';
import { memoryLogger } from '../../src/util/log.js';
import { MINIMAL_CONFIG } from '../helpers/config.js';

const BASE = MINIMAL_CONFIG;
const ctx = { root: '/repo', logger: memoryLogger(), env: {} };

describe('buildStore', () => {
  it('builds the local store under the state dir by default', () => {
    const store = buildStore(parseConfig(BASE, '/repo/hillclimb.yml'), ctx);
    expect(store).toBeInstanceOf(LocalStore);
    expect((store as LocalStore).dir).toBe('/repo/.hillclimb/store');
  });

  it('builds the hf store; visibility and URLs follow the config', () => {
    const text = `${BASE}store:\n  kind: hf\n  hf:\n    repo: org/ev\n    private: false\n`;
    const store = buildStore(parseConfig(text, '/repo/hillclimb.yml'), { ...ctx, env: { HF_TOKEN: 'hf_x' } });
    expect(store).toBeInstanceOf(HfStore);
    expect(store.publiclyReadable).toBe(true);
    expect(store.url('a/b.json')).toBe('https://huggingface.co/datasets/org/ev/resolve/main/a/b.json');
  });

  it('rejects an unknown kind with the sorted list of known ones', () => {
    const config = parseConfig(BASE, '/repo/hillclimb.yml');
    const odd = { ...config, store: { kind: 's3' as 'local' } };
    expect(() => buildStore(odd, ctx)).toThrow(UnknownNameError);
    expect(() => buildStore(odd, ctx)).toThrow('unknown store "s3"; known: branch, hf, local');
  });

  it('lists and extends the registered kinds', () => {
    expect(stores.names()).toEqual(['branch', 'hf', 'local']);
    stores.register('memory', () => ({}) as never);
    expect(stores.names()).toEqual(['branch', 'hf', 'local', 'memory']);
    stores.unregister('memory');
    expect(stores.names()).toEqual(['branch', 'hf', 'local']);
  });
});
