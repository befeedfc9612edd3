// The shared history is what says which commit is the champion: a store that cannot be read must stop
// the phase with its reason, never let it start silently from HEAD.
import { describe, expect, it } from 'vitest';
import { pullHistory } from '../../../src/loop/drivers/phases.js';
import type { Store } from '../../../src/store/store.js';
import { HillclimbError } from '../../../src/util/errors.js';

describe('pullHistory', () => {
  it('fails with the store’s reason and hint when the store cannot be read', async () => {
    const store = {
      name: 'hf',
      list: async () => {
        throw new HillclimbError('the dataset octo/runs is private and HF_TOKEN is not set (401)', {
          hint: 'set HF_TOKEN to a token that can read octo/runs',
        });
      },
    } as unknown as Store;
    const err = await pullHistory(store, '/nonexistent', 'gdn').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HillclimbError);
    expect((err as HillclimbError).message).toBe(
      'could not read the history from the hf store: the dataset octo/runs is private and HF_TOKEN is not set (401)',
    );
    expect((err as HillclimbError).hint).toBe('set HF_TOKEN to a token that can read octo/runs');
  });

  it('reads nothing from the local store (the state folder is the history)', async () => {
    const store = { name: 'local', list: () => Promise.reject(new Error('not called')) } as unknown as Store;
    await expect(pullHistory(store, '/nonexistent', 'gdn')).resolves.toBeUndefined();
  });
});
