/**
 * The hill-climb log (docs/hillclimb-log.md): its header for a new file, one entry per iteration, and
 * appending. Entries are rendered by the harness from the evidence record, so `hillclimb log lint`
 * can render them again and compare (log-lint.ts).
 *
 * An entry is:
 *   ### Iteration <N> — <commit subject>
 *
 *   <!-- hillclimb:evidence <path> sha256=<digest> format=1 -->
 *   - <Label>: <harness text>          fixed labels (LOG_LABELS); every number from the evidence
 *   …
 *   > agent hypothesis: <prose>         the agent's words, quoted; never read for numbers
 *
 * <N> is the log's own sequence: the iteration number when it keeps the headings increasing, else
 * the next free number (a second run starts again at iteration 1); the `- Run:` line names the run
 * and its iteration.
 */
import { createHash } from 'node:crypto';
import type { IterationEvidence } from '../evidence/index.js';
import { HillclimbError } from '../util/index.js';
import { failingList } from './checks.js';
import {
  bundleKey,
  gateText,
  guardText,
  measuredChange,
  mediansText,
  mfuText,
  subjectOf,
  verdictLabel,
  verdictReasons,
} from './facts.js';
import {
  EM_DASH,
  formatDuration,
  formatRatio,
  formatTime,
  oneLine,
  plural,
  shortSha,
  truncateText,
} from './format.js';
import {
  beforeAfter,
  customCallNames,
  hotspotBasis,
  hotspotLine,
  launchesText,
  profilerInflated,
  topChanges,
} from './hotspots.js';
import { kernelLine, modelLine, shareLine } from './levels.js';
import { agentQuote, code, inert, inertAround } from './markdown.js';
import { measuredInFull, raceOutcome, screenEstimateText } from './search.js';

/**
 * Bump whenever harnessLines, entryHeading or the digest change: lint then reports entries written
 * earlier as an older format (a warning) instead of as hand edits.
 */
export const LOG_ENTRY_FORMAT = 4;
/** Hotspot lines per entry. */
export const LOG_HOTSPOTS = 3;
/** Failing test names listed per gate before "and N more". */
export const LOG_FAILING_TESTS = 10;

/** The labels of harness lines, in the order they appear. Lint treats `- <label>: …` lines as the harness's. */
export const LOG_LABELS = [
  'Run',
  'Date',
  'Verdict',
  'Reason',
  'Commit',
  'Base',
  'Agent',
  'Guard',
  'Correctness (CPU)',
  'Failing tests (CPU)',
  'Correctness (accelerator)',
  'Failing tests (accelerator)',
  'Search',
  'Screen',
  'Measurement',
  'MFU',
  'Kernel',
  'Model',
  'Kernel share',
  'Profile',
  'Step time',
  'Device op time',
  'Hotspot',
  'Custom-call launches per step',
  'Evidence',
] as const;

export type LogLabel = (typeof LOG_LABELS)[number];

/**
 * The log heading, defined once (the log reader for the prompt and the lint use these too):
 * `### Iteration <N><suffix>` at the start of a line (gdnctl's pattern), N the log's own sequence.
 */
const ITERATION_HEADING_PREFIX = '### Iteration ';
export const ITERATION_HEADING = new RegExp(`^${ITERATION_HEADING_PREFIX}(\\d+)([A-Za-z]*)\\b`);

/** The sub-iteration letter after `suffix` (a → b, z → za): always greater, as the lint requires. */
function nextSuffix(suffix: string): string {
  const lastChar = suffix.at(-1)!;
  return lastChar === 'z' || lastChar === 'Z'
    ? `${suffix}a`
    : `${suffix.slice(0, -1)}${String.fromCharCode(lastChar.charCodeAt(0) + 1)}`;
}

/** `### Iteration <N>`: the start of an entry's heading. */
export function iterationHeading(number: number): string {
  return `${ITERATION_HEADING_PREFIX}${number}`;
}

const EVIDENCE_MARKER = /^<!-- hillclimb:evidence (\S+) sha256=([0-9a-f]{64}) format=(\d+) -->$/;

export interface LogEntryOptions {
  /** Path of evidence.json as the store (or the state folder) knows it. Default `runs/<run>/i<NNN>/evidence.json`. */
  evidencePath?: string;
  /** The heading number. Default: the iteration (appendLogEntry renumbers when it would not increase). */
  number?: number;
}

/** The default evidence path of an iteration: `runs/<run>/i003/evidence.json`. */
export function defaultEvidencePath(evidence: Pick<IterationEvidence, 'runId' | 'iteration'>): string {
  return `${bundleKey(evidence)}/evidence.json`;
}

/** JSON with object keys sorted, so the digest does not depend on key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * sha256 of the evidence as it stood when the entry was rendered: the canonical JSON without what
 * the loop writes afterwards (publish results, step records, finishedAt, the log commit itself).
 */
export function evidenceDigest(evidence: IterationEvidence): string {
  const { publish: _publish, steps: _steps, finishedAt: _finished, ...rest } = evidence;
  const candidate = rest.candidate ? { ...rest.candidate, logCommit: undefined } : undefined;
  return createHash('sha256')
    .update(canonicalJson({ ...rest, candidate }))
    .digest('hex');
}

/** The hidden line naming the evidence and its digest. */
export function evidenceMarker(path: string, digest: string): string {
  if (/\s|-->/.test(path))
    throw new HillclimbError(`evidence path ${JSON.stringify(path)} cannot go in the log marker`);
  return `<!-- hillclimb:evidence ${path} sha256=${digest} format=${LOG_ENTRY_FORMAT} -->`;
}

export function parseEvidenceMarker(
  line: string,
): { path: string; digest: string; format: number } | undefined {
  const m = EVIDENCE_MARKER.exec(line.trim());
  return m ? { path: m[1]!, digest: m[2]!, format: Number(m[3]) } : undefined;
}

/** The entry's heading. */
export function entryHeading(number: number, evidence: IterationEvidence): string {
  return `${iterationHeading(number)} ${EM_DASH} ${inert(subjectOf(evidence))}`;
}

/** The harness lines of an entry, as [label, text] pairs in order. Every number comes from `evidence`. */
/** `; before: attempt 1 failed (model API failure: 429 …)`, or nothing for a first attempt. */
function earlierAttempts(agent: NonNullable<IterationEvidence['agent']>): string {
  const earlier = (agent.earlier ?? []).map(
    (a) =>
      `attempt ${a.attempt} ${a.status}${a.infraError ? ` (${truncateText(oneLine(a.infraError), 120)})` : ''}`,
  );
  return earlier.length > 0 ? `; before: ${earlier.join('; ')}` : '';
}

export function harnessLines(evidence: IterationEvidence, evidencePath: string): Array<[LogLabel, string]> {
  const lines: Array<[LogLabel, string]> = [];
  const add = (label: LogLabel, text: string) => lines.push([label, inertAround(oneLine(text))]);
  add(
    'Run',
    `${code(evidence.runId)}, iteration ${evidence.iteration} of ${evidence.totalIterations}${evidence.slot ? ` (candidate ${evidence.slot.index} of ${evidence.slot.of})` : ''}, target ${code(evidence.target)}`,
  );
  add('Date', formatTime(evidence.startedAt));
  add('Verdict', verdictLabel(evidence));
  for (const reason of verdictReasons(evidence)) add('Reason', reason);
  const c = evidence.candidate;
  add('Commit', c ? `${code(shortSha(c.commit))} on ${code(c.branch)}` : 'none (the agent made no commit)');
  add(
    'Base',
    `${code(shortSha(evidence.base.commit))}${evidence.base.iteration !== undefined ? ` (champion since iteration ${evidence.base.iteration})` : ''}`,
  );
  const agent = evidence.agent;
  if (agent) {
    const problem = agent.resultProblem
      ? `; result: ${agent.resultProblem}`
      : agent.result
        ? ''
        : '; no result file';
    add(
      'Agent',
      `${code(agent.kind)} ${agent.status} in ${formatDuration(agent.durationMs)}, ${plural(agent.attempts, 'attempt')}${problem}${earlierAttempts(agent)}`,
    );
  }
  if (evidence.guard) add('Guard', guardText(evidence.guard));
  for (const [key, name] of [
    ['cpu', 'CPU'],
    ['accelerator', 'accelerator'],
  ] as const) {
    const gate = evidence.gates[key];
    if (!gate) continue;
    add(`Correctness (${name})`, gateText(gate));
    const failing = failingList(gate, LOG_FAILING_TESTS);
    if (failing) add(`Failing tests (${name})`, failing);
  }
  const search = evidence.search;
  if (search) {
    const outcome = raceOutcome(search);
    add(
      'Search',
      search.winner === null
        ? `${plural(search.candidates.length, 'candidate')}; none survived its gates and the screen`
        : `${plural(search.candidates.length, 'candidate')}; ${measuredInFull(search)}, on fresh rounds` +
            (outcome ? `. ${outcome}` : ''),
    );
  }
  const screen = evidence.screen;
  if (screen) {
    const estimate = screenEstimateText(screen.estimate, screen.interval, 'no usable estimate');
    const bar = search ? ` (bar ${formatRatio(search.threshold)})` : '';
    const self = evidence.slot?.index;
    const outcome =
      search?.role === 'winner'
        ? (search.measured?.length ?? 1) > 1
          ? 'the best left; measured in full'
          : 'the best; measured in full'
        : self !== undefined && search?.measured?.includes(self)
          ? `measured in full, then candidate ${search.winner}`
          : screen.droppedBy?.kind === 'below-bar'
            ? 'interval wholly below the bar: dropped'
            : screen.droppedBy?.kind === 'behind'
              ? `separated behind candidate ${screen.droppedBy.leader}: dropped`
              : !screen.survived
                ? 'below the bar: dropped'
                : search?.winner != null
                  ? `behind candidate ${search.winner}`
                  : 'not measured in full';
    add(
      'Screen',
      `${plural(screen.rounds, 'paired round')} against the champion: ${estimate}${bar}; ${outcome}`,
    );
  }
  const m = evidence.measurement;
  if (m) {
    const change = measuredChange(evidence);
    const medians = mediansText(m);
    const parts = [`${m.metric.label}${medians ? ` ${medians}` : ''}`];
    if (change) parts.push(`${change.delta} (${change.n})`);
    else parts.push(`no comparison (${m.runs.length} runs)`);
    add('Measurement', parts.join(', '));
    add('MFU', mfuText(evidence));
    // Both levels, when the runs recorded them: what the kernel did, and what it did for the step.
    if (m.levels) {
      const kernel = kernelLine(m.levels);
      if (kernel) add('Kernel', kernel);
      const model = modelLine(m.levels);
      if (model) add('Model', model);
    }
  } else {
    add(
      'Measurement',
      evidence.verdict === 'screened-out'
        ? 'not run (screened out)'
        : evidence.stoppedAt
          ? `not run (stopped at ${evidence.stoppedAt})`
          : 'not run',
    );
  }
  const share = m ? shareLine(evidence) : undefined;
  if (share) add('Kernel share', share);
  const profile = evidence.profile;
  if (profile && profile.status !== 'done') {
    add('Profile', `${profile.status}${profile.reason ? `: ${profile.reason}` : ''}`);
  } else if (profile) {
    const custom = customCallNames(profile);
    // A trace the profiler inflated is no result: its times are shown as what they are.
    const inflated = profilerInflated(profile) ? ' (profiler-inflated trace: not the measured change)' : '';
    // The rows the diff leads with, as in the PR: the whole trace when a trace's steps are unreliable.
    const basis = profile.diff ? hotspotBasis(profile.diff) : undefined;
    if (basis?.wholeTrace) {
      add(
        'Device op time',
        `${beforeAfter(basis.total)} over the whole trace, all devices (its steps hold too little of it to compare per step)${inflated}`,
      );
    } else if (profile.diff?.stepTimeMs) {
      add('Step time', `${beforeAfter(profile.diff.stepTimeMs)}${inflated}`);
    }
    for (const row of topChanges(basis?.rows ?? [], LOG_HOTSPOTS))
      add('Hotspot', hotspotLine(row, custom.has(row.name), basis?.wholeTrace));
    const launches = launchesText(profile);
    if (launches !== undefined) add('Custom-call launches per step', launches);
  }
  add('Evidence', code(evidencePath));
  return lines;
}

/** The agent's prose, quoted (empty when it left no result). */
export function agentLines(evidence: IterationEvidence): string {
  const r = evidence.agent?.result;
  if (!r) return '';
  return agentQuote([
    ['hypothesis', r.hypothesis],
    ['summary', r.summary],
    ['next idea', r.next_idea],
  ]);
}

/** One log entry, ending in a newline. */
export function renderLogEntry(evidence: IterationEvidence, opts: LogEntryOptions = {}): string {
  const path = opts.evidencePath ?? defaultEvidencePath(evidence);
  // The blank line after the heading is what markdown formatters (biome) insert; render it so they leave the log alone.
  const lines = [
    entryHeading(opts.number ?? evidence.iteration, evidence),
    '',
    evidenceMarker(path, evidenceDigest(evidence)),
    ...harnessLines(evidence, path).map(([label, text]) => `- ${label}: ${text}`),
  ];
  const agent = agentLines(evidence);
  return `${lines.join('\n')}\n${agent === '' ? '' : `\n${agent}\n`}`;
}

export interface LogHeaderOptions {
  /** Default "Hill-climb log". */
  title?: string;
  /** One paragraph: what the loop is trying to achieve. */
  goal?: string;
}

const DEFAULT_GOAL =
  'Make the target kernel faster without changing its results. Each iteration tries one change; only a change whose whole confidence interval clears the noise floor replaces the champion.';

/** The header of a new log file: goal, loop contract, how entries are produced. */
export function logHeader(opts: LogHeaderOptions = {}): string {
  return `# ${opts.title ?? 'Hill-climb log'}

Append-only record of every hillclimb iteration, failed ones included. Written by the harness
(\`hillclimb loop\`), never by the agent; do not edit entries by hand.

## Goal

${opts.goal ?? DEFAULT_GOAL}

## Loop contract

- One hypothesis and one change set per iteration, proposed by the agent inside the target's editable paths.
- The harness checks the change (protected paths, static checks), runs the correctness tests on CPU (Pallas
  interpret mode) and on the accelerator, measures champion and candidate interleaved in one job, profiles
  the candidate and diffs its trace against the champion's.
- Exactly one verdict per iteration (per candidate when an iteration proposes several): improved, no-change,
  regressed, invalid, needs-human, error, no-op or screened-out.
- Every iteration becomes a draft pull request; people review and merge.

## How entries are produced

Each entry is rendered from the iteration's evidence record (\`evidence.json\`). Lines starting with \`- \`
are the harness's: every number in them was computed from raw artifacts (JUnit XML, metrics JSON,
traces). Lines starting with \`> agent\` quote the agent's own words and are never read for numbers. The
hidden \`hillclimb:evidence\` line names the evidence file and its sha256; \`hillclimb log lint\` renders
each entry again from it and reports any line that differs and any number with a unit that the evidence
does not contain.

## Iterations
`;
}

/** Heading numbers in a log, in order (with suffixes, e.g. 12a). */
export function headingNumbers(text: string): Array<{ line: number; number: number; suffix: string }> {
  const out: Array<{ line: number; number: number; suffix: string }> = [];
  text.split('\n').forEach((line, i) => {
    const m = ITERATION_HEADING.exec(line);
    if (m) out.push({ line: i + 1, number: Number(m[1]), suffix: m[2]! });
  });
  return out;
}

/**
 * The log with `entry` appended (the header first when the log is new or empty). When the entry's
 * heading number would not increase on the log's last heading, it becomes the next free number. With
 * `candidate` (one of several candidates of a search iteration, in the run's own log) the heading gets
 * a sub-iteration letter instead — `### Iteration 3a`, `3b`, … in the order they are recorded — so
 * the k entries of iteration 3 keep its number and the next iteration keeps its own.
 * @throws HillclimbError when `entry` does not start with an iteration heading.
 */
export function appendLogEntry(
  logText: string | undefined,
  entry: string,
  header: LogHeaderOptions = {},
  opts: { candidate?: boolean } = {},
): string {
  const first = entry.split('\n', 1)[0] ?? '';
  const m = ITERATION_HEADING.exec(first);
  if (!m)
    throw new HillclimbError(
      `a log entry must start with "${ITERATION_HEADING_PREFIX}<N>", got ${JSON.stringify(first)}`,
    );
  const base = logText === undefined || logText.trim() === '' ? logHeader(header) : logText;
  const last = headingNumbers(base).at(-1);
  let body = entry.trimEnd();
  const number = Number(m[1]);
  if (opts.candidate) {
    const sameIteration = last?.number === number && last.suffix !== '';
    const heading = sameIteration
      ? `${iterationHeading(number)}${nextSuffix(last.suffix)}`
      : `${iterationHeading(last && number <= last.number ? last.number + 1 : number)}a`;
    body = body.replace(ITERATION_HEADING, heading);
  } else if (last && number <= last.number) {
    body = body.replace(ITERATION_HEADING, iterationHeading(last.number + 1));
  }
  return `${base.trimEnd()}\n\n${body}\n`;
}
