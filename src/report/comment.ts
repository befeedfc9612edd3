/**
 * The sticky PR comment of an iteration: headline with the metric delta and its CI, the delta table,
 * checks, hotspot diff, custom calls, trajectory chart, links and provenance, raw values last.
 * The forge adds the hidden marker and stamp (src/forge/sticky.ts); this module renders the visible
 * body only, capped so that body plus footer fit GitHub's limit.
 *
 * When the body is too long, sections shrink in this order, each leaving a visible note:
 *   1. raw per-run values, 2. the trajectory chart, 3. the hotspot table (halved until one row,
 *   then a note), 4. the custom-call table, 5. the failing-test lists.
 * Whole sections are never cut in the middle; see fit.ts for the last resorts.
 */
import {
  type HistoryRow,
  type IterationEvidence,
  unverifiedReasons,
  VERDICT_DESCRIPTIONS,
} from '../evidence/index.js';
import { BODY_CAP_CHARS } from '../forge/index.js';
import { checksSection, DEFAULT_FAILING_TESTS } from './checks.js';
import { bundleKey, deviceLabel, headline, subjectOf, verdictReasons } from './facts.js';
import { type FitResult, fitParts, type Part, type SizeOf, shrinkSteps } from './fit.js';
import { shortSha } from './format.js';
import { customCallSection, DEFAULT_HOTSPOT_ROWS, hotspotSection } from './hotspots.js';
import { cell, code, link } from './markdown.js';
import { deltaSection, rawRunsSection } from './measurement.js';
import { provenanceSection } from './provenance.js';
import { searchSection } from './search.js';
import { toolsSection } from './tools.js';
import { DEFAULT_MAX_POINTS, trajectorySection } from './trajectory.js';

/**
 * Room left for what the forge appends (blank line, marker, stamp with run id and commit): the
 * stamp is ~200 characters, so 1,000 is generous and keeps composeStickyBody from cutting again.
 */
export const STICKY_FOOTER_RESERVE = 1_000;
export const DEFAULT_COMMENT_MAX_CHARS = BODY_CAP_CHARS - STICKY_FOOTER_RESERVE;

export interface CommentOptions {
  /** Largest body in UTF-16 code units. Default DEFAULT_COMMENT_MAX_CHARS. */
  maxChars?: number;
  /** Rows of the hotspot and custom-call tables. Default 10. */
  hotspotRows?: number;
  /** Most points in the trajectory chart (the newest are kept). Default 50. */
  maxChartPoints?: number;
  /** Failing test names listed per gate. Default 20. */
  failingTests?: number;
  /** Where the whole report is (the job summary's URL), named in shortening notes. */
  summaryUrl?: string;
  /** The sentence in shortening notes saying where the full report is. Default: the job summary and the bundle. */
  where?: string;
}

export interface RenderedComment {
  body: string;
  /** True when a section was shrunk or left out to fit. */
  truncated: boolean;
  /** Keys of the sections shrunk, in order (raw, chart, hotspots, customCalls, checks, …). */
  reduced: string[];
}

/** Row counts for a table shrinking by halves: 10 → [10, 5, 3, 2, 1]. */
export function halvings(rows: number): number[] {
  const counts: number[] = [];
  for (let n = Math.max(0, rows); n >= 1; n = n === 1 ? 0 : Math.ceil(n / 2)) counts.push(n);
  return counts;
}

/** Where the full report lives, for notes. */
function whereFull(evidence: IterationEvidence, opts: CommentOptions): string {
  if (opts.where !== undefined) return opts.where;
  const summary = opts.summaryUrl ? link('job summary', opts.summaryUrl) : 'job summary';
  const bundle = evidence.publish?.bundleUrl
    ? link('evidence bundle', evidence.publish.bundleUrl)
    : 'evidence bundle';
  return `The ${summary} and the ${bundle} have the full report.`;
}

function omittedNote(what: string, where: string): string {
  return `_${what} left out to fit GitHub's size limit. ${where}_`;
}

/** The headline, the one-line context and the reasons. */
export function headlineSection(evidence: IterationEvidence): string {
  const lines = [`### ${cell(headline(evidence))}`];
  const device = deviceLabel(evidence);
  const candidate = evidence.candidate
    ? `candidate ${code(shortSha(evidence.candidate.commit))} “${cell(subjectOf(evidence))}”`
    : 'no candidate commit';
  const context = [
    `**${cell(evidence.target)}** iteration ${evidence.iteration} of ${evidence.totalIterations}`,
    `${candidate} vs champion ${code(shortSha(evidence.base.commit))}`,
    device ? cell(device) : undefined,
  ].filter(Boolean);
  lines.push(context.join(' · '));
  if (evidence.verdict) lines.push(`_${evidence.verdict}: ${VERDICT_DESCRIPTIONS[evidence.verdict]}._`);
  const reasons = verdictReasons(evidence);
  if (reasons.length > 0) lines.push(reasons.map((r) => `- ${cell(r)}`).join('\n'));
  const unverified = unverifiedReasons(evidence);
  if (unverified.length > 0) {
    lines.push(
      `> [!WARNING]\n> **These numbers are unverified**: ${cell(unverified.join('; '))}. They cannot make a champion (docs/security.md).`,
    );
  }
  return lines.join('\n\n');
}

/** Perfetto, trace and bundle links, when the publish step knows them. */
export function linksSection(evidence: IterationEvidence): string | undefined {
  const p = evidence.publish;
  if (!p) return undefined;
  const links: string[] = [];
  if (p.perfettoUrl) links.push(`- ${link('Open the candidate trace in Perfetto', p.perfettoUrl)}`);
  if (p.traceUrl) links.push(`- Trace: ${link('download', p.traceUrl)}`);
  if (p.bundleUrl) links.push(`- Evidence: ${link(`${bundleKey(evidence)}/evidence.json`, p.bundleUrl)}`);
  return links.length > 0 ? `#### Links\n\n${links.join('\n')}` : undefined;
}

/** The sections of a comment, each with its shrinking variants, in document order. */
export function commentParts(
  evidence: IterationEvidence,
  history: readonly HistoryRow[],
  opts: CommentOptions = {},
): Part[] {
  const where = whereFull(evidence, opts);
  const hotspotRows = opts.hotspotRows ?? DEFAULT_HOTSPOT_ROWS;
  const failing = opts.failingTests ?? DEFAULT_FAILING_TESTS;
  const metric = evidence.measurement?.metric;
  const optional = (text: string | undefined) => (text === undefined ? [] : [text]);
  const shrinking = (render: (rows: number) => string | undefined, rows: number, what: string): string[] => {
    const full = render(rows);
    if (full === undefined) return [];
    const smaller = halvings(rows)
      .slice(1)
      .map((n) => `${render(n) ?? ''}\n\n${omittedNote(`Rows beyond the first ${n}`, where)}`);
    return [full, ...smaller, omittedNote(what, where)];
  };
  const chart = metric
    ? trajectorySection(
        history,
        { metricPath: metric.path, target: evidence.target },
        opts.maxChartPoints ?? DEFAULT_MAX_POINTS,
      )
    : undefined;
  const raw = rawRunsSection(evidence);
  return [
    { key: 'headline', variants: [headlineSection(evidence)] },
    { key: 'delta', variants: optional(deltaSection(evidence)) },
    { key: 'search', variants: optional(searchSection(evidence)) },
    { key: 'tools', variants: optional(toolsSection(evidence)) },
    {
      key: 'checks',
      variants: [
        checksSection(evidence, failing),
        checksSection(evidence, Math.min(failing, 3)),
        checksSection(evidence, 0),
      ],
    },
    {
      key: 'hotspots',
      variants: shrinking((n) => hotspotSection(evidence.profile, n), hotspotRows, 'The hotspot diff'),
    },
    {
      key: 'customCalls',
      variants: shrinking(
        (n) => customCallSection(evidence.profile, n),
        hotspotRows,
        'The custom-call table',
      ),
    },
    { key: 'chart', variants: chart ? [chart, omittedNote('The trajectory chart', where)] : [] },
    { key: 'links', variants: optional(linksSection(evidence)) },
    { key: 'provenance', variants: [provenanceSection(evidence)] },
    { key: 'raw', variants: raw ? [raw, omittedNote('Raw per-run values', where)] : [] },
  ];
}

/** The order in which sections shrink when the body is too long (see the module comment). */
export function reductionPlan(parts: readonly Part[]): string[] {
  return ['raw', 'chart', 'hotspots', 'customCalls', 'checks'].flatMap((key) => shrinkSteps(parts, key));
}

/** Fit parts under a cap with the comment's reduction plan. */
export function fitReport(parts: readonly Part[], max: number, where: string, sizeOf?: SizeOf): FitResult {
  return fitParts(parts, reductionPlan(parts), max, { where, ...(sizeOf ? { sizeOf } : {}) });
}

/**
 * The visible body of the sticky comment for an iteration, given the history rows for the
 * trajectory (oldest first; rows of other targets or metrics are ignored).
 */
export function renderComment(
  evidence: IterationEvidence,
  history: readonly HistoryRow[],
  opts: CommentOptions = {},
): RenderedComment {
  const max = opts.maxChars ?? DEFAULT_COMMENT_MAX_CHARS;
  const fit = fitReport(commentParts(evidence, history, opts), max, whereFull(evidence, opts));
  return { body: fit.text, truncated: fit.truncated, reduced: fit.reduced };
}
