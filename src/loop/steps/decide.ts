/**
 * decide: the measured verdict, exactly as the statistics computed it — except that numbers measured
 * where untrusted code ran unsandboxed can never make a champion: an `improved` there becomes
 * `needs-human`, with the reason (see evidence/isolation.ts).
 */
import { unverifiedReasons } from '../../evidence/index.js';
import type { Step } from './step.js';

export const decideStep: Step = {
  name: 'decide',
  evaluation: true,
  async run({ ev }) {
    const c = ev.measurement?.comparison;
    // A dry run printed its commands and measured nothing: it has no verdict to give.
    if (ev.dryRun && !c) return { status: 'skipped', note: 'dry run: no verdict' };
    if (!c) {
      return {
        status: 'verdict',
        verdict: 'invalid',
        reasons: ['the measurement ended without a comparison'],
      };
    }
    const unverified = unverifiedReasons(ev);
    // A champion exported again under other versions than it won with: its programs are not checked.
    for (const [platform, source] of Object.entries(ev.championPrograms ?? {})) {
      if (source === 'exported-unverified') {
        unverified.push(
          `the champion's ${platform} programs were exported again under other JAX versions than it won with, so they could not be checked against the ones it won with`,
        );
      }
    }
    if (c.verdict === 'improved' && unverified.length > 0) {
      return {
        status: 'verdict',
        verdict: 'needs-human',
        reasons: [
          `measured as improved, but the numbers are unverified: ${unverified.join('; ')} (docs/security.md)`,
          ...c.reasons,
        ],
      };
    }
    return { status: 'verdict', verdict: c.verdict, reasons: c.reasons };
  },
};
