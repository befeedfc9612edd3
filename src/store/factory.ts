/**
 * Store factory: a map from the config name (`store.kind`) to a builder, called once by the CLI
 * or the loop.
 */
import { resolve } from 'node:path';
import type { HillclimbConfig } from '../config/types.js';
import { ExitCode, HillclimbError, UnknownNameError } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import type { Store } from './store.js';
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
}

export type StoreBuilder = (config: HillclimbConfig, ctx: StoreContext) => Store;

const builders = new Map<string, StoreBuilder>([
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
]);

export function buildStore(config: HillclimbConfig, ctx: StoreContext): Store {
  const build = builders.get(config.store.kind);
  if (!build) throw new UnknownNameError('store', config.store.kind, getStoreTypes());
  return build(config, ctx);
}

/** Registered store names, sorted. */
export function getStoreTypes(): string[] {
  return [...builders.keys()].sort();
}

export function registerStore(name: string, builder: StoreBuilder): void {
  builders.set(name, builder);
}

export function unregisterStore(name: string): void {
  builders.delete(name);
}
