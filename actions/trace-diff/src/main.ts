/**
 * trace-diff: the hotspot summary of a candidate's trace and its diff against the champion's, as
 * tables in the job summary and as JSON files. Reads an iteration's bundle (after the profile action),
 * or two traces given by path (a trace file, a profile directory, or a saved summary JSON).
 */
import { resolve } from 'node:path';
import {
  compareTraces,
  iterationProfile,
  optionalText,
  phaseOptions,
  positiveInteger,
  runAction,
  setOutputs,
  traceDiffMarkdown,
  writeAnalysis,
  writeSummary,
} from '../../../src/actions/index.js';
import { topChanges } from '../../../src/report/index.js';

await runAction(async ({ logger }) => {
  const rows = positiveInteger('top') ?? 15;
  const after = optionalText('after');
  const { profile, dir } =
    after === undefined
      ? iterationProfile(phaseOptions(logger))
      : {
          profile: await logger.group('hillclimb: trace summary and diff', () =>
            compareTraces(optionalText('before'), after),
          ),
          dir: resolve(optionalText('output-dir') ?? 'hillclimb-trace-diff'),
        };
  if (profile?.status !== 'done')
    logger.info(
      `no trace to analyse: profile ${profile?.status ?? 'not run'}${profile?.reason ? ` (${profile.reason})` : ''}`,
    );
  const files = writeAnalysis(profile, dir, { keepExisting: after === undefined });
  const top = profile?.diff ? topChanges(profile.diff.ops, 1)[0] : undefined;
  setOutputs({
    status: profile?.status ?? 'not-run',
    'summary-file': files.summaryFile,
    'diff-file': files.diffFile,
    'step-ms-before': profile?.diff?.stepTimeMs?.before,
    'step-ms-after': profile?.diff?.stepTimeMs?.after,
    'top-change': top ? `${top.name} ${top.delta >= 0 ? '+' : ''}${top.delta.toFixed(3)} ms/step` : '',
  });
  await writeSummary(traceDiffMarkdown(profile, rows), logger);
});
