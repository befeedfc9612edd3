/**
 * The pull request of an iteration: title, body and labels. The body says what changed in the
 * agent's words (quoted and labelled), then what the harness found: verdict and reasons, checks,
 * the measurement headline, how to reproduce, where the evidence is, and the log entry.
 */
import { type IterationEvidence, VERDICT_DESCRIPTIONS, type Verdict } from '../evidence/index.js';
import { BODY_CAP_CHARS, capTitle, MANAGED_LABEL_PREFIX, TITLE_CAP_CHARS } from '../forge/index.js';
import { withoutControls } from '../util/index.js';
import { checksSection } from './checks.js';
import {
  bundleKey,
  deviceLabel,
  headline,
  measuredChange,
  mediansText,
  mfuText,
  subjectOf,
  verdictLabel,
  verdictReasons,
} from './facts.js';
import { fitParts } from './fit.js';
import { formatDuration, plural, shortSha, truncateText } from './format.js';
import { agentQuote, cell, code, details, fenced, link } from './markdown.js';
import { toolsSentence } from './tools.js';

export interface PullRequestOptions {
  /** The log entry committed with the change (renderLogEntry), shown collapsed. */
  logEntry?: string;
  /** Path of the log file in the repository. Default docs/hillclimb-log.md. */
  logFile?: string;
  /** Git remote the reproduce commands fetch from. Default origin. */
  remote?: string;
  /** Largest body. Default BODY_CAP_CHARS (the forge caps again with its own note). */
  maxChars?: number;
}

export interface RenderedPullRequest {
  title: string;
  body: string;
  /** Managed labels (`hillclimb:<verdict>`); the forge adds and removes only `hillclimb:` labels. */
  labels: string[];
  truncated: boolean;
}

/** Verdicts whose title carries the measured delta. */
const MEASURED: readonly Verdict[] = ['improved', 'no-change', 'regressed', 'needs-human'];

/** The label for a verdict, e.g. `hillclimb:improved`. */
export function verdictLabelName(verdict: Verdict): string {
  return `${MANAGED_LABEL_PREFIX}${verdict}`;
}

/** The labels a PR of this iteration carries. */
export function pullRequestLabels(evidence: IterationEvidence): string[] {
  return evidence.verdict ? [verdictLabelName(evidence.verdict)] : [];
}

/**
 * `perf(gdn): <subject> (fwd+bwd time −18.6% [−20.1%, −17.0%] on CPU)` for a measured verdict,
 * else `[invalid] gdn: <subject>`. The subject is shortened, never the numbers, to fit 256 characters.
 */
export function pullRequestTitle(evidence: IterationEvidence): string {
  // A title is plain text on GitHub: nothing in it renders, mentions or links, but it is shown.
  const subject = withoutControls(subjectOf(evidence));
  const change = measuredChange(evidence);
  if (evidence.verdict && MEASURED.includes(evidence.verdict) && change) {
    const device = deviceLabel(evidence);
    const prefix = `perf(${evidence.target}): `;
    const suffix = ` (${change.text}${device ? ` on ${device}` : ''})`;
    const room = TITLE_CAP_CHARS - prefix.length - suffix.length;
    if (room >= 8) return `${prefix}${truncateText(subject, room)}${suffix}`;
  }
  const verdict = evidence.verdict ?? (evidence.dryRun ? 'dry run' : 'pending');
  return capTitle(`[${verdict}] ${evidence.target}: ${subject}`).text;
}

/**
 * The commands that re-run this iteration's checks and measurement (the `hillclimb test` and `measure`
 * verbs, src/cli/commands/harness.ts), on the backend the iteration used.
 */
export function reproduceCommands(evidence: IterationEvidence, remote = 'origin'): string[] {
  const candidate = evidence.candidate;
  if (!candidate) return [`# the agent made no commit; nothing to reproduce (base ${evidence.base.commit})`];
  const backend = evidence.provenance.backend ? ` --backend ${evidence.provenance.backend.backend}` : '';
  const on = `--target ${evidence.target}${backend}`;
  const cmds = [`git fetch ${remote} ${candidate.branch}`, `hillclimb test ${on} --ref ${candidate.commit}`];
  const accelerator = evidence.gates.accelerator;
  if (accelerator && accelerator.status !== 'skipped') {
    cmds.push(`hillclimb test ${on} --ref ${candidate.commit} --accelerator`);
  }
  if (evidence.measurement) {
    const profiled = evidence.profile !== undefined && evidence.profile.status !== 'skipped';
    cmds.push(
      `hillclimb measure ${on} --base ${evidence.base.commit} --head ${candidate.commit}${profiled ? '' : ' --no-profile'}`,
    );
  }
  return cmds;
}

function whatChanged(evidence: IterationEvidence): string {
  const lines = ['### What changed (the agent’s words)'];
  const result = evidence.agent?.result;
  if (result) {
    lines.push(
      agentQuote([
        ['hypothesis', result.hypothesis],
        ['summary', result.summary],
        ['next idea', result.next_idea],
      ]),
    );
    lines.push(
      '_Quoted from the agent’s result file. The harness reads no numbers from it; every number below is measured._',
    );
  } else {
    const why =
      evidence.agent?.resultProblem ??
      (evidence.agent ? `agent ${evidence.agent.status}` : 'the agent did not run');
    lines.push(`The agent left no result file (${cell(why)}).`);
  }
  const c = evidence.candidate;
  if (c) {
    const paths = c.changedPaths.map(code).join(', ');
    lines.push(
      `Commit ${code(shortSha(c.commit))} “${cell(subjectOf(evidence))}” on ${code(c.branch)}, ${plural(c.commits.length, 'commit')} on top of champion ${code(shortSha(evidence.base.commit))}; changed: ${paths || 'nothing'}.`,
    );
  }
  return lines.join('\n\n');
}

function verdictSection(evidence: IterationEvidence): string {
  const lines = [`### Verdict: ${verdictLabel(evidence)}`];
  if (evidence.verdict) lines.push(`_${VERDICT_DESCRIPTIONS[evidence.verdict]}._`);
  const reasons = verdictReasons(evidence);
  if (reasons.length > 0) lines.push(reasons.map((r) => `- ${cell(r)}`).join('\n'));
  if (evidence.stoppedAt && evidence.stoppedAt !== 'decide')
    lines.push(`Evaluation stopped at ${code(evidence.stoppedAt)}.`);
  return lines.join('\n\n');
}

function evidenceSection(evidence: IterationEvidence): string {
  const lines = ['### Evidence', checksSection(evidence).replace(/^#### Checks\n\n/, '')];
  const m = evidence.measurement;
  if (m) {
    const medians = mediansText(m);
    const change = measuredChange(evidence);
    const parts = [
      `${m.metric.label}${medians ? ` ${medians}` : ''}`,
      change ? `${change.delta} (${change.n})` : undefined,
      `MFU ${mfuText(evidence)}`,
    ].filter(Boolean);
    lines.push(
      `**Measurement:** ${cell(parts.join(', '))}. The sticky comment below has the delta table, hotspot diff and trajectory.`,
    );
  } else {
    lines.push('**Measurement:** not run.');
  }
  if (evidence.agent) {
    lines.push(
      `Agent ${code(evidence.agent.kind)}: ${evidence.agent.status} in ${formatDuration(evidence.agent.durationMs)} (${plural(evidence.agent.attempts, 'attempt')}).`,
    );
  }
  const tools = toolsSentence(evidence.tools);
  if (tools) lines.push(`${tools} The tools' answers were advice to the agent, never evidence.`);
  return lines.join('\n\n');
}

function reproduceSection(evidence: IterationEvidence, remote: string): string {
  return `### Reproduce\n\n${fenced('sh', reproduceCommands(evidence, remote).join('\n'))}`;
}

function bundleSection(evidence: IterationEvidence): string {
  const key = `${bundleKey(evidence)}/evidence.json`;
  const url = evidence.publish?.bundleUrl;
  const perfetto = evidence.publish?.perfettoUrl
    ? ` · ${link('trace in Perfetto', evidence.publish.perfettoUrl)}`
    : '';
  return `### Evidence bundle\n\n${url ? link(key, url) : code(key)}${perfetto}`;
}

/** Title, body and labels for the iteration's pull request. */
export function renderPullRequest(
  evidence: IterationEvidence,
  opts: PullRequestOptions = {},
): RenderedPullRequest {
  const logFile = opts.logFile ?? 'docs/hillclimb-log.md';
  const parts = [
    { key: 'headline', variants: [`## ${cell(headline(evidence))}`] },
    { key: 'what', variants: [whatChanged(evidence)] },
    { key: 'verdict', variants: [verdictSection(evidence)] },
    { key: 'evidence', variants: [evidenceSection(evidence)] },
    { key: 'reproduce', variants: [reproduceSection(evidence, opts.remote ?? 'origin')] },
    { key: 'bundle', variants: [bundleSection(evidence)] },
    {
      key: 'log',
      variants: opts.logEntry
        ? [
            `### Log entry\n\n${details(`${logFile}`, opts.logEntry.trim())}`,
            `### Log entry\n\nSee ${code(logFile)} in this branch.`,
          ]
        : [],
    },
  ];
  const fit = fitParts(parts, ['log'], opts.maxChars ?? BODY_CAP_CHARS, {
    where: 'The evidence bundle has the full record.',
  });
  return {
    title: pullRequestTitle(evidence),
    body: fit.text,
    labels: pullRequestLabels(evidence),
    truncated: fit.truncated,
  };
}
