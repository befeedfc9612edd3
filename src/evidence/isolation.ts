/**
 * Whether an iteration's numbers can be trusted, from how its untrusted code ran. Untrusted code that
 * ran unsandboxed on the machine that measured could have changed anything there — the champion's
 * runs, the harness, the evidence — and a gate result from a job that ran it unsandboxed could be
 * forged. Such an iteration's numbers are unverified: they are shown, labelled so, and can never make a
 * new champion. The one exception is the agent in a job of its own (CI's propose job): what it hands on
 * is a patch the next jobs re-derive and guard, not a result.
 */
import type { IsolationRecord, IterationEvidence, UntrustedStep } from './record.js';

/** Record how a step's untrusted processes ran; a step that ran several keeps the weakest. */
export function recordIsolation(ev: IterationEvidence, step: UntrustedStep, rec: IsolationRecord): void {
  ev.isolation ??= {};
  const before = ev.isolation[step];
  if (before?.mode === 'none' && before.job === rec.job) return;
  ev.isolation[step] = rec;
}

/** Why the iteration's numbers are unverified (empty when they are not). */
export function unverifiedReasons(ev: IterationEvidence): string[] {
  const records = ev.isolation ?? {};
  const measuredBy = records.measure?.job;
  const reasons: string[] = [];
  for (const [step, rec] of Object.entries(records) as Array<[UntrustedStep, IsolationRecord]>) {
    if (rec.mode !== 'none') continue;
    if (step === 'propose' && measuredBy !== undefined && rec.job !== measuredBy) continue;
    reasons.push(
      step === 'propose'
        ? 'the agent ran unsandboxed on the machine that measured'
        : `the ${step} step ran candidate code unsandboxed`,
    );
  }
  // A measurement in the loop counts only for a candidate whose CPU gate passed where it can be believed
  // (`hillclimb measure` of two commits runs no gate at all and promotes nothing).
  if (ev.measurement && ev.steps['cpu-gate'] !== undefined && ev.gates.cpu?.status !== 'passed') {
    reasons.push('no believable CPU gate pass (the gate did not run here, or its result was not attested)');
  }
  return reasons;
}
