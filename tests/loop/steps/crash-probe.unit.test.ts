import { describe, expect, it } from 'vitest';
import { InfraFailure } from '../../../src/loop/steps/failures.js';
import { crashProbe, VerifierCrashed } from '../../../src/loop/steps/programs.js';

const crash = new VerifierCrashed('SIGSEGV', 139, 'Segmentation fault');
const ok = async () => ({});
const crashes = async () => {
  throw new VerifierCrashed('SIGABRT', 134, 'Aborted');
};
const cannotRun = async () => {
  throw new InfraFailure("the champion's export failed: no space left on device");
};

describe('crashProbe: whose fault a verifier crash is', () => {
  it('is infrastructure (retried)', () => {
    expect(crash).toBeInstanceOf(InfraFailure);
  });

  it('the candidate’s, when its programs crash it again and the champion’s run cleanly', async () => {
    await expect(crashProbe(crash, { again: crashes, champion: ok })).resolves.toBe(
      "the candidate's programs crashed the verifier twice (SIGSEGV), which runs the champion's cleanly: the verifier died by SIGSEGV (exit 139): Segmentation fault",
    );
  });

  it('the candidate’s, when they crash it again and the champion’s cannot be checked (fail closed)', async () => {
    await expect(crashProbe(crash, { again: crashes, champion: cannotRun })).resolves.toMatch(
      /^the candidate's programs crashed the verifier twice \(SIGSEGV\), and the champion's could not be checked \(the champion's export failed: no space left on device\)/,
    );
  });

  it('the machine’s, when the same session runs cleanly the second time: the first crash, rethrown', async () => {
    let championRan = false;
    const champion = async () => {
      championRan = true;
    };
    await expect(crashProbe(crash, { again: ok, champion })).rejects.toBe(crash);
    expect(championRan).toBe(false);
  });

  it('the machine’s, when the champion’s programs crash it too', async () => {
    await expect(crashProbe(crash, { again: crashes, champion: crashes })).rejects.toBe(crash);
  });

  it('whatever else stops the second run is its own failure, not a verdict', async () => {
    await expect(crashProbe(crash, { again: cannotRun, champion: ok })).rejects.toThrow(/no space left/);
  });
});
