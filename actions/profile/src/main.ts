/**
 * profile: the measure phase of one iteration — champion and candidate measured in this job, interleaved,
 * with a bootstrap confidence interval on the ratio of medians; then one profiled run of the candidate,
 * its trace analysed and diffed against the champion's; then the verdict. The traces stay in the
 * bundle; the report action stores the bundle (traces included) and links them.
 */
import {
  iterationSummary,
  phaseOptions,
  runAction,
  searchPhaseOptions,
  setAttestationOutput,
  setIterationOutputs,
  setOutputs,
  setSearchOutputs,
  writeSummary,
} from '../../../src/actions/index.js';
import { BundleFiles, type PhaseResult, runPhase, runSearchPhase } from '../../../src/loop/index.js';
import { measuredChange, mfuText } from '../../../src/report/index.js';

await runAction(async ({ logger }) => {
  // A search (candidates > 1): every candidate's accelerator gate, the screen, the winner measured in full.
  const search = searchPhaseOptions(logger);
  if (search) {
    const selected = await logger.group(
      'hillclimb: select (accelerator gates, screen, the winner measured in full)',
      () => runSearchPhase('select', search),
    );
    setSearchOutputs(selected);
    setMeasureOutputs(selected.lead);
    await writeSummary(iterationSummary(selected), logger);
    return;
  }
  const opts = phaseOptions(logger);
  const result = await logger.group('hillclimb: measure (A/B runs, profile, decide)', () =>
    runPhase('measure', opts),
  );
  setIterationOutputs(result);
  setAttestationOutput(result);
  setMeasureOutputs(result);
  await writeSummary(iterationSummary(result), logger);
});

/** The comparison's and the profile's outputs of one candidate. */
function setMeasureOutputs(result: PhaseResult): void {
  const ev = result.evidence;
  const c = ev.measurement?.comparison;
  const profiled = ev.profile?.status === 'done';
  setOutputs({
    ratio: c?.ratio,
    'ci-low': c?.ci?.lo,
    'ci-high': c?.ci?.hi,
    change: measuredChange(ev)?.text ?? '',
    'mfu-champion': ev.measurement?.mfu.a,
    'mfu-candidate': ev.measurement?.mfu.b,
    mfu: ev.measurement ? mfuText(ev) : '',
    'runs-per-arm': c ? `${c.a.n}+${c.b.n}` : '',
    'profile-status': ev.profile?.status ?? 'not-run',
    'trace-dir': profiled ? `${result.bundleDir}/${BundleFiles.profileDir}` : '',
    'summary-file': profiled ? `${result.bundleDir}/${BundleFiles.summary}` : '',
    'diff-file': profiled ? `${result.bundleDir}/${BundleFiles.diff}` : '',
  });
}
