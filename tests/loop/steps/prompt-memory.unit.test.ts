import { describe, expect, it } from 'vitest';
import { promptMemory } from '../../../src/loop/steps/prompt-context.js';

const LEDGER = "Already tried (the harness's ledger: 1 earlier iteration(s) of this target; …):";

// loop.log_entries_in_prompt counts log entries; the ledger is the harness's record, which the novelty
// check enforces, and stays.
describe("the prompt's memory", () => {
  it('with log_entries_in_prompt 0: the ledger stays, no entry is shown, and the prompt says why', () => {
    const text = promptMemory(LEDGER, [], 0);
    expect(text.startsWith(LEDGER)).toBe(true);
    expect(text).toContain('(log entries are left out: loop.log_entries_in_prompt is 0)');
    expect(text).not.toContain('no log entries yet');
    expect(promptMemory('', [], 0)).toBe('(log entries are left out: loop.log_entries_in_prompt is 0)');
  });

  it('otherwise: the ledger, then the entries, or that there are none yet', () => {
    expect(promptMemory(LEDGER, ['### Iteration 1', '### Iteration 2'], 3)).toBe(
      `${LEDGER}\n\n### Iteration 1\n\n### Iteration 2`,
    );
    expect(promptMemory('', [], 3)).toBe('(no log entries yet)');
  });
});
