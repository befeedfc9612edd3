/** decide: the measured verdict, exactly as the statistics computed it. */
import type { Step } from './step.js';

export const decideStep: Step = {
  name: 'decide',
  evaluation: true,
  async run({ ev }) {
    const c = ev.measurement?.comparison;
    if (!c) {
      return {
        status: 'verdict',
        verdict: 'invalid',
        reasons: ['the measurement ended without a comparison'],
      };
    }
    return { status: 'verdict', verdict: c.verdict, reasons: c.reasons };
  },
};
