/**
 * Trace analysis for the trace-diff action: a summary from a trace file, a profile directory, or a
 * summary JSON saved earlier; the diff of two; and the profile evidence the report's hotspot tables
 * take. All numbers come from the engine's readers (src/trace).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../config/index.js';
import type { ProfileEvidence } from '../evidence/index.js';
import {
  Bundle,
  iterationDirName,
  type PhaseOptions,
  runDirOf,
  stateDirOf,
  trustedSlot,
} from '../loop/index.js';
import {
  customCallSection,
  details,
  fenced,
  formatDiff,
  formatSummary,
  hotspotSection,
} from '../report/index.js';
import { diffSummaries, summarizeTracePath, type TraceDiff, type TraceSummary } from '../trace/index.js';
import { ExitCode, HillclimbError, writeJsonAtomic } from '../util/index.js';

export function summaryOf(path: string): Promise<TraceSummary> {
  return summarizeTracePath(path);
}

/** Champion (`before`) and candidate (`after`) analysed and diffed, as profile evidence. */
export async function compareTraces(
  before: string | undefined,
  after: string,
): Promise<ProfileEvidence & { summary: TraceSummary }> {
  const summary = await summaryOf(after);
  if (before === undefined) return { status: 'done', candidateTrace: after, summary };
  const championSummary = await summaryOf(before);
  const diff: TraceDiff = diffSummaries(championSummary, summary);
  return { status: 'done', candidateTrace: after, championTrace: before, summary, championSummary, diff };
}

/** The profile evidence of an iteration's bundle (written by the profile action), and its folder. */
export function iterationProfile(opts: PhaseOptions): { profile: ProfileEvidence | undefined; dir: string } {
  const config = loadConfig(opts.configFile, opts.overrides);
  // A search's candidate (its slot), e.g. the winner the select phase names.
  const slot = trustedSlot(config.loop.candidates, opts.slot);
  const bundle = new Bundle(
    join(
      runDirOf(stateDirOf(config), opts.runId),
      iterationDirName({ iteration: opts.iteration, ...(slot ? { slot } : {}) }),
    ),
  );
  if (!bundle.exists()) {
    throw new HillclimbError(`no evidence bundle at ${bundle.dir}`, {
      hint: 'run the profile action first (or download the bundle artifact), or give the after and before traces',
      exitCode: ExitCode.badInput,
    });
  }
  return { profile: bundle.load().profile, dir: bundle.path('profile') };
}

export interface AnalysisFiles {
  summaryFile?: string;
  championSummaryFile?: string;
  diffFile?: string;
}

/**
 * summary.json, champion-summary.json and diff.json in `dir`, for what the profile has. With
 * `keepExisting`, files already there are kept as they are: in an iteration's bundle the profile step
 * wrote them, and the bundle must leave this job byte for byte as the measuring phase attested it.
 */
export function writeAnalysis(
  profile: ProfileEvidence | undefined,
  dir: string,
  opts: { keepExisting?: boolean } = {},
): AnalysisFiles {
  const files: AnalysisFiles = {};
  const write = (name: string, value: unknown) => {
    if (opts.keepExisting && existsSync(join(dir, name))) return join(dir, name);
    mkdirSync(dir, { recursive: true });
    writeJsonAtomic(join(dir, name), value);
    return join(dir, name);
  };
  if (profile?.summary) files.summaryFile = write('summary.json', profile.summary);
  if (profile?.championSummary)
    files.championSummaryFile = write('champion-summary.json', profile.championSummary);
  if (profile?.diff) files.diffFile = write('diff.json', profile.diff);
  return files;
}

/** The job summary: the report's hotspot and custom-call tables, then the full text tables folded. */
export function traceDiffMarkdown(profile: ProfileEvidence | undefined, rows: number): string {
  const sections = [
    '## hillclimb trace diff',
    hotspotSection(profile, rows) ?? '_No profile for this iteration._',
    customCallSection(profile, rows),
    profile?.summary
      ? details('Candidate trace summary', fenced('text', formatSummary(profile.summary, rows)))
      : undefined,
    profile?.diff ? details('Trace diff (text)', fenced('text', formatDiff(profile.diff, rows))) : undefined,
  ];
  return `${sections.filter((s) => s !== undefined).join('\n\n')}\n`;
}
