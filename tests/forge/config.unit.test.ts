// The forge.github keys this module added to the config schema.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/util/errors.js';
import { MINIMAL_CONFIG } from '../helpers/config.js';

const BASE = `${MINIMAL_CONFIG}forge:\n  kind: github\n  github:\n    repository: octo/kernels\n`;

describe('forge.github config', () => {
  it('defaults: no push URL override, identity from the token', () => {
    const gh = parseConfig(BASE, '/repo/hillclimb.yml').forge.github!;
    expect(gh).toEqual({
      repository: 'octo/kernels',
      api_url: 'https://api.github.com',
      token_env: 'GITHUB_TOKEN',
    });
  });

  it('accepts git_url and a bot comment_author', () => {
    const text = `${BASE}    git_url: file:///tmp/remote.git\n    comment_author: my-app[bot]\n`;
    const gh = parseConfig(text, '/repo/hillclimb.yml').forge.github!;
    expect(gh.git_url).toBe('file:///tmp/remote.git');
    expect(gh.comment_author).toBe('my-app[bot]');
  });

  it('rejects a comment_author that is not a GitHub login', () => {
    const text = `${BASE}    comment_author: "not a login"\n`;
    expect(() => parseConfig(text, '/repo/hillclimb.yml')).toThrow(ConfigError);
    try {
      parseConfig(text, '/repo/hillclimb.yml');
    } catch (e) {
      expect((e as ConfigError).keyPath).toBe('forge.github.comment_author');
    }
  });
});
