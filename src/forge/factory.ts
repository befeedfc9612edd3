/**
 * Forge factory: a map from the config name (`forge.kind`) to a builder. The CLI and the loop call
 * `buildForge` once; nothing below them knows which forge they talk to.
 */
import { resolve } from 'node:path';
import type { HillclimbConfig } from '../config/index.js';
import { ExitCode, HillclimbError, type Logger, Registry } from '../util/index.js';
import type { Forge } from './forge.js';
import { GitHubForge } from './forges/github.js';
import { LocalForge } from './forges/local.js';

export interface ForgeContext {
  /** The project root (the git repository PR branches live in). */
  root: string;
  logger: Logger;
  /** Where tokens are read from. Default process.env. */
  env?: NodeJS.ProcessEnv;
}

export type ForgeBuilder = (config: HillclimbConfig, ctx: ForgeContext) => Forge;

/** The forges known by name: register one for an out-of-tree extension or a test. */
export const forges = new Registry<ForgeBuilder>('forge', [
  [
    'local',
    (config, ctx) =>
      new LocalForge({
        repoDir: ctx.root,
        stateDir: resolve(ctx.root, config.paths.state_dir),
        logger: ctx.logger,
      }),
  ],
  [
    'github',
    (config, ctx) => {
      const gh = config.forge.github;
      if (!gh) {
        throw new HillclimbError('forge.kind is github, so forge.github.repository is required', {
          exitCode: ExitCode.badInput,
        });
      }
      const env = ctx.env ?? process.env;
      const token = env[gh.token_env];
      if (!token) {
        throw new HillclimbError(`$${gh.token_env} is not set; the github forge needs a token`, {
          exitCode: ExitCode.badInput,
          hint:
            `export a token with contents: write, pull-requests: write and issues: write as ${gh.token_env} ` +
            '(in Actions: a GitHub App token, or secrets.GITHUB_TOKEN), or set forge.github.token_env',
        });
      }
      return new GitHubForge({
        repository: gh.repository,
        token,
        tokenEnv: gh.token_env,
        apiUrl: gh.api_url,
        gitUrl: gh.git_url,
        commentAuthor: gh.comment_author,
        defaultBase: config.forge.base,
        logger: ctx.logger,
      });
    },
  ],
]);

export function buildForge(config: HillclimbConfig, ctx: ForgeContext): Forge {
  return forges.get(config.forge.kind)(config, ctx);
}
