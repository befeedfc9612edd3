import { describe, expect, it } from 'vitest';
import { InfraFailure } from '../../../src/loop/steps/failures.js';
import { crashProbe, VerifierCrashed } from '../../../src/loop/steps/programs.js';

describe('crashProbe: whose fault a verifier crash is', () => {
  const crash = new VerifierCrashed(134, 'Aborted');

  it('names the signal from the exit status of a process killed by one', () => {
    expect(crash.signal).toBe('SIGABRT');
    expect(new VerifierCrashed(139, 'x').signal).toBe('SIGSEGV');
    expect(new VerifierCrashed(128 + 31, 'x').signal).toBe('signal 31');
    expect(crash).toBeInstanceOf(InfraFailure);
  });

  it('is the candidate’s when the champion’s programs pass the same session', async () => {
    await expect(crashProbe(crash, async () => ({}))).resolves.toMatch(
      /^the candidate's programs crashed the verifier \(SIGABRT\), which runs the champion's cleanly: the verifier died by SIGABRT \(exit 134\): Aborted$/,
    );
  });

  it('is the machine’s when the champion’s programs crash it too: the first crash, as infrastructure', async () => {
    const again = new VerifierCrashed(139, 'Segmentation fault');
    await expect(
      crashProbe(crash, async () => {
        throw again;
      }),
    ).rejects.toBe(crash);
  });

  it('is never the candidate’s when the probe fails some other way', async () => {
    const other = new InfraFailure('the verifier exited 3 without a session');
    await expect(
      crashProbe(crash, async () => {
        throw other;
      }),
    ).rejects.toBe(other);
  });
});
