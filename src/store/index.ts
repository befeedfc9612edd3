/**
 * Stores (local, hf, branch) for evidence bundles and traces. Other modules import from this entry,
 * never from its files.
 */
export { buildStore } from './factory.js';
export { assertKey } from './keys.js';
export { perfettoLinkFor } from './perfetto.js';
export type { Store } from './store.js';
