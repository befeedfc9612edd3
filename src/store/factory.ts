/**
 * Store factory: a map from the config name (`store.kind`) to a builder, called once by the CLI
 * or the loop.
 */
import { resolve } from 'node:path';
import type { HillclimbConfig } from '../config/index.js';
import { ExitCode, HillclimbError, type Logger, Registry } from '../util/index.js';
import type { Store } from './store.js';
import { BranchStore, DEFAULT_DATA_BRANCH } from './stores/branch.js';
import { HfStore } from './stores/hf.js';
import { LocalStore } from './stores/local.js';

/** The local store's folder inside the state folder. */
export const LOCAL_STORE_DIR = 'store';

export interface StoreContext {
  /** The project root; relative config paths resolve against it. */
  root: string;
  logger: Logger;
  /** Where tokens are read from. Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** The repository's web page for links, when the caller knows it (an action, from the toolkit's context). */
  repositoryUrl?: string;
}

export type StoreBuilder = (config: HillclimbConfig, ctx: StoreContext) => Store;

/** The stores known by name: register one for an out-of-tree extension or a test. */
export const stores = new Registry<StoreBuilder>('store', [
  [
    'local',
    (config, ctx) => new LocalStore({ dir: resolve(ctx.root, config.paths.state_dir, LOCAL_STORE_DIR) }),
  ],
  [
    'hf',
    (config, ctx) => {
      const hf = config.store.hf;
      if (!hf) {
        throw new HillclimbError('store.kind is hf, so store.hf.repo is required', {
          exitCode: ExitCode.badInput,
        });
      }
      const token = (ctx.env ?? process.env)[hf.token_env];
      return new HfStore({
        repo: hf.repo,
        endpoint: hf.endpoint,
        token: token === '' ? undefined : token,
        tokenEnv: hf.token_env,
        private: hf.private,
        logger: ctx.logger,
      });
    },
  ],
  [
    'branch',
    (config, ctx) => {
      const b = config.store.branch ?? BRANCH_DEFAULTS;
      const env = ctx.env ?? process.env;
      const token = env[b.token_env];
      return new BranchStore({
        repoDir: ctx.root,
        branch: b.name,
        remote: b.remote,
        token: token === '' ? undefined : token,
        tokenEnv: b.token_env,
        webUrl: ctx.repositoryUrl ?? repositoryWebUrl(config, env),
        logger: ctx.logger,
      });
    },
  ],
]);

const BRANCH_DEFAULTS = { name: DEFAULT_DATA_BRANCH, remote: 'origin', token_env: 'GITHUB_TOKEN' };

/** The repository's web page, for blob URLs: the Actions run's repository, else forge.github's. */
function repositoryWebUrl(config: HillclimbConfig, env: NodeJS.ProcessEnv): string | undefined {
  if (env.GITHUB_SERVER_URL && env.GITHUB_REPOSITORY)
    return `${env.GITHUB_SERVER_URL}/${env.GITHUB_REPOSITORY}`;
  const gh = config.forge.github;
  if (!gh) return undefined;
  const api = new URL(gh.api_url);
  const host = api.hostname === 'api.github.com' ? 'github.com' : api.host;
  return `${api.protocol}//${host}/${gh.repository}`;
}

export function buildStore(config: HillclimbConfig, ctx: StoreContext): Store {
  return stores.get(config.store.kind)(config, ctx);
}
