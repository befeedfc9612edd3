import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { buildForge, forges } from '../../src/forge/factory.js';
import { GitHubForge } from '../../src/forge/forges/github.js';
import { LocalForge } from '../../src/forge/forges/local.js';
import { HillclimbError, UnknownNameError } from '../../src/util/errors.js';
import { memoryLogger } from '../../src/util/log.js';
import { MINIMAL_CONFIG } from '../helpers/config.js';

const BASE = MINIMAL_CONFIG;
const GITHUB = `${BASE}forge:\n  kind: github\n  github:\n    repository: octo/kernels\n    token_env: HC_TEST_TOKEN\n`;
const ctx = { root: '/repo', logger: memoryLogger(), env: {} };

describe('buildForge', () => {
  it('builds the local forge by default, keeping records under the state dir', () => {
    const forge = buildForge(parseConfig(BASE, '/repo/hillclimb.yml'), ctx);
    expect(forge).toBeInstanceOf(LocalForge);
    expect((forge as LocalForge).records.dir).toBe('/repo/.hillclimb/forge');
  });

  it('builds the github forge with the token from the named variable', () => {
    const forge = buildForge(parseConfig(GITHUB, '/repo/hillclimb.yml'), {
      ...ctx,
      env: { HC_TEST_TOKEN: 'ghs_x1234' },
    });
    expect(forge).toBeInstanceOf(GitHubForge);
    expect(forge.name).toBe('github');
  });

  it('names the missing token variable', () => {
    const build = () => buildForge(parseConfig(GITHUB, '/repo/hillclimb.yml'), ctx);
    expect(build).toThrow(HillclimbError);
    expect(build).toThrow(/\$HC_TEST_TOKEN is not set/);
  });

  it('rejects an unknown kind with the sorted list of known ones', () => {
    const config = parseConfig(BASE, '/repo/hillclimb.yml');
    const odd = { ...config, forge: { ...config.forge, kind: 'gitlab' as 'local' } };
    expect(() => buildForge(odd, ctx)).toThrow(UnknownNameError);
    expect(() => buildForge(odd, ctx)).toThrow('unknown forge "gitlab"; known: github, local');
  });

  it('lists and extends the registered kinds', () => {
    expect(forges.names()).toEqual(['github', 'local']);
    forges.register('null', () => ({}) as never);
    expect(forges.names()).toEqual(['github', 'local', 'null']);
    forges.unregister('null');
    expect(forges.names()).toEqual(['github', 'local']);
  });
});
