/**
 * kernel-test: a correctness gate of one iteration — `cpu` (the target's suite in Pallas interpret
 * mode, on this runner: give the job no secrets, it runs candidate code) or `accelerator` (on the
 * compute backend). With `head`, the change is a person's (a pull request): its bundle is made from
 * base..head first.
 */
import {
  choice,
  flag,
  optionalText,
  phaseOptions,
  requiredText,
  runAction,
  setAttestationOutput,
  setIterationOutputs,
  setOutputs,
  writeSummary,
} from '../../../src/actions/index.js';
import { prepareExternalChange, runPhase } from '../../../src/loop/index.js';
import { checksSection } from '../../../src/report/index.js';
import { HillclimbError } from '../../../src/util/index.js';

await runAction(async ({ logger }) => {
  const gate = choice('gate', ['cpu', 'accelerator'] as const, { required: true });
  const opts = phaseOptions(logger);
  const head = optionalText('head');
  if (head !== undefined) {
    const change = {
      base: requiredText('base'),
      head,
      source: optionalText('source') ?? `commit ${head}`,
      guard: flag('guard', true),
    };
    await logger.group(`hillclimb: evidence bundle for ${change.source}`, () =>
      prepareExternalChange(opts, change),
    );
  }
  const phase = gate === 'cpu' ? 'cpu-gate' : 'accelerator-gate';
  const result = await logger.group(`hillclimb: ${phase}`, () => runPhase(phase, opts));
  const evidence = result.evidence.gates[gate];
  const junit = evidence?.junit;
  setIterationOutputs(result);
  setAttestationOutput(result);
  setOutputs({
    status: evidence?.status ?? 'not-run',
    'gate-reason': evidence?.reason ?? result.evidence.steps[phase]?.note ?? '',
    tests: junit?.tests,
    passed: junit?.passed,
    failed: junit?.failed,
    errors: junit?.errors,
    skipped: junit?.skipped,
    'junit-file': evidence?.junitFile ? `${result.bundleDir}/${evidence.junitFile}` : '',
  });
  await writeSummary(
    `## hillclimb ${gate} gate: ${evidence?.status ?? 'not run'}\n\n${checksSection(result.evidence)}\n`,
    logger,
  );
  if (flag('fail-on-failure', false) && evidence?.status !== 'passed') {
    const ev = result.evidence;
    const why = evidence
      ? `${evidence.status}${evidence.reason ? ` (${evidence.reason})` : ''}`
      : `not run, the iteration is ${ev.verdict ?? 'pending'}${ev.verdictReasons[0] ? ` (${ev.verdictReasons[0]})` : ''}`;
    throw new HillclimbError(`the ${gate} gate did not pass: ${why}`);
  }
});
