/**
 * `hillclimb log lint`: checks a hill-climb log.
 *
 * gdnctl's rules (reference/seed-loop.md §4):
 *   - in scope, a line that is exactly `- Commit: (pending)` or `- Commit: this commit` is an error;
 *   - over the whole file (unless allowNonMonotonic), `### Iteration <N><suffix>` headings must be
 *     monotonic pairwise: a smaller number ("iteration number decreased"), the same number twice without
 *     suffix ("duplicate iteration number"), a suffix then none ("sub-iteration returned to base
 *     number"), or a suffix not greater than the previous one ("not increasing") is an error; so
 *     12 → 12a → 12b → 13 is fine.
 * And no numbers absent from evidence: each entry in scope names its evidence file
 * (`<!-- hillclimb:evidence <path> sha256=… format=1 -->`); the entry is rendered again from it and
 *   - a harness line (`- <Label>: …`) that differs from the rendering is an error (a hand edit),
 *   - a harness line missing or added is an error,
 *   - a number with a unit in any other line that the rendered harness lines do not contain is an error,
 *   - evidence that changed since the entry was rendered (digest mismatch) is an error.
 * Lines quoting the agent (`> …`) are exempt. An entry whose evidence is not available gets a warning
 * (an error with requireEvidence).
 *
 * Scope `last-entry` (default) is from the last `### Iteration ` line to the end (the whole file when
 * there is none); `all` is the whole file.
 */
import type { IterationEvidence } from '../evidence/index.js';
import {
  entryHeading,
  evidenceDigest,
  harnessLines,
  ITERATION_HEADING,
  LOG_ENTRY_FORMAT,
  LOG_LABELS,
  type LogLabel,
  parseEvidenceMarker,
} from './log-entry.js';
import { quantities, quantityKeys } from './log-numbers.js';

export type LintSeverity = 'error' | 'warning';

export type LintRule =
  | 'placeholder'
  | 'monotonic'
  | 'evidence-reference'
  | 'evidence-missing'
  | 'evidence-unreadable'
  | 'evidence-changed'
  | 'entry-format'
  | 'heading-edited'
  | 'harness-line-edited'
  | 'harness-line-missing'
  | 'harness-line-extra'
  | 'number-not-in-evidence';

export interface LintProblem {
  /** 1-based line number in the log. */
  line: number;
  severity: LintSeverity;
  rule: LintRule;
  message: string;
}

export type EvidenceLookup =
  | { status: 'found'; evidence: IterationEvidence }
  | { status: 'missing'; reason: string }
  | { status: 'unreadable'; reason: string };

/** Finds the evidence an entry names (a path such as `runs/<run>/i003/evidence.json`). */
export type EvidenceLoader = (path: string) => EvidenceLookup;

export type LintScope = 'last-entry' | 'all';

export interface LintOptions {
  /** Default 'last-entry'. */
  scope?: LintScope;
  /** Skip the heading order rule. */
  allowNonMonotonic?: boolean;
  /** Evidence that is not available is an error, not a warning. */
  requireEvidence?: boolean;
  /** Default: no evidence is available. */
  loadEvidence?: EvidenceLoader;
}

const PLACEHOLDERS = ['- Commit: (pending)', '- Commit: this commit'];
const ANY_HEADING = /^#{1,3} /;
const LABELLED = /^- (.+?):(?: (.*))?$/;
const LABELS = new Set<string>(LOG_LABELS);

/** Heading order per gdnctl; one problem per offending heading. */
export function headingOrderProblems(lines: readonly string[]): LintProblem[] {
  const problems: LintProblem[] = [];
  let prev: { number: number; suffix: string } | undefined;
  lines.forEach((text, i) => {
    const m = ITERATION_HEADING.exec(text);
    if (!m) return;
    const cur = { number: Number(m[1]), suffix: m[2]! };
    if (prev) {
      const what = `${cur.number}${cur.suffix} after ${prev.number}${prev.suffix}`;
      let message: string | undefined;
      if (cur.number < prev.number) message = `iteration number decreased (${what})`;
      else if (cur.number === prev.number) {
        if (prev.suffix === '' && cur.suffix === '') message = `duplicate iteration number (${what})`;
        else if (prev.suffix !== '' && cur.suffix === '')
          message = `sub-iteration returned to base number (${what})`;
        else if (prev.suffix !== '' && cur.suffix <= prev.suffix)
          message = `sub-iteration suffix not increasing (${what})`;
      }
      if (message) problems.push({ line: i + 1, severity: 'error', rule: 'monotonic', message });
    }
    prev = cur;
  });
  return problems;
}

/** Index of the first line in scope. */
function scopeStart(lines: readonly string[], scope: LintScope): number {
  if (scope === 'all') return 0;
  for (let i = lines.length - 1; i >= 0; i--) if (ITERATION_HEADING.test(lines[i]!)) return i;
  return 0;
}

/** Entries (heading index, end index exclusive) whose heading is at or after `from`. */
function entriesFrom(lines: readonly string[], from: number): Array<{ start: number; end: number }> {
  const entries: Array<{ start: number; end: number }> = [];
  for (let i = from; i < lines.length; i++) {
    if (!ITERATION_HEADING.test(lines[i]!)) continue;
    let end = i + 1;
    while (end < lines.length && !ANY_HEADING.test(lines[end]!)) end++;
    entries.push({ start: i, end });
    i = end - 1;
  }
  return entries;
}

function notInEvidence(text: string, known: ReadonlySet<string>): string[] {
  return quantities(text)
    .filter((q) => !known.has(q.key))
    .map((q) => q.text);
}

const listed = (xs: readonly string[]) => xs.map((x) => `"${x}"`).join(', ');

/** Problems of one entry against its evidence. */
function checkEntry(
  lines: readonly string[],
  entry: { start: number; end: number },
  opts: LintOptions,
  skip: ReadonlySet<number>,
): LintProblem[] {
  const problems: LintProblem[] = [];
  const headingLine = entry.start + 1;
  const unavailable = (rule: LintRule, message: string) =>
    problems.push({ line: headingLine, severity: opts.requireEvidence ? 'error' : 'warning', rule, message });

  let marker: ReturnType<typeof parseEvidenceMarker>;
  for (let i = entry.start + 1; i < entry.end && !marker; i++) {
    const text = lines[i]!;
    marker = parseEvidenceMarker(text);
    if (!marker && text.trim().startsWith('<!-- hillclimb:evidence')) {
      problems.push({
        line: i + 1,
        severity: 'error',
        rule: 'evidence-reference',
        message: 'malformed evidence reference',
      });
      return problems;
    }
  }
  if (!marker) {
    unavailable('evidence-missing', 'entry names no evidence file; its numbers cannot be checked');
    return problems;
  }
  if (marker.format !== LOG_ENTRY_FORMAT) {
    unavailable(
      'entry-format',
      `entry was rendered in log format ${marker.format}, this hillclimb renders format ${LOG_ENTRY_FORMAT}; its numbers cannot be checked`,
    );
    return problems;
  }
  const lookup = (
    opts.loadEvidence ?? (() => ({ status: 'missing', reason: 'no evidence location given' }) as const)
  )(marker.path);
  if (lookup.status === 'missing') {
    unavailable(
      'evidence-missing',
      `evidence ${marker.path} not available (${lookup.reason}); numbers not checked`,
    );
    return problems;
  }
  if (lookup.status === 'unreadable') {
    problems.push({
      line: headingLine,
      severity: 'error',
      rule: 'evidence-unreadable',
      message: `evidence ${marker.path}: ${lookup.reason}`,
    });
    return problems;
  }
  const evidence = lookup.evidence;
  if (evidenceDigest(evidence) !== marker.digest) {
    problems.push({
      line: headingLine,
      severity: 'error',
      rule: 'evidence-changed',
      message: `evidence ${marker.path} changed since this entry was rendered (sha256 differs)`,
    });
  }

  const heading = ITERATION_HEADING.exec(lines[entry.start]!)!;
  const expectedHeading = entryHeading(Number(heading[1]), evidence);
  const headingRest = (text: string) => text.replace(ITERATION_HEADING, '');
  if (headingRest(lines[entry.start]!) !== headingRest(expectedHeading)) {
    problems.push({
      line: headingLine,
      severity: 'error',
      rule: 'heading-edited',
      message: `heading differs from the evidence; expected: ${expectedHeading}`,
    });
  }

  const expected = harnessLines(evidence, marker.path);
  const known = quantityKeys(expected.map(([, text]) => text));
  const expectedByLabel = new Map<string, string[]>();
  for (const [label, text] of expected)
    expectedByLabel.set(label, [...(expectedByLabel.get(label) ?? []), `- ${label}: ${text}`]);
  // `reported`: a placeholder line, already an error of its own.
  const actualByLabel = new Map<string, Array<{ line: number; text: string; reported: boolean }>>();

  for (let i = entry.start + 1; i < entry.end; i++) {
    const text = lines[i]!.trimEnd();
    const trimmed = text.trim();
    if (trimmed === '' || trimmed.startsWith('>')) continue;
    if (trimmed.startsWith('<!--') && trimmed.endsWith('-->')) continue;
    const labelled = LABELLED.exec(text);
    if (labelled && LABELS.has(labelled[1]!)) {
      const label = labelled[1] as LogLabel;
      actualByLabel.set(label, [
        ...(actualByLabel.get(label) ?? []),
        { line: i + 1, text, reported: skip.has(i) },
      ]);
      continue;
    }
    const unknown = notInEvidence(text, known);
    if (unknown.length > 0) {
      problems.push({
        line: i + 1,
        severity: 'error',
        rule: 'number-not-in-evidence',
        message: `${listed(unknown)} not in the evidence`,
      });
    }
  }

  for (const label of LOG_LABELS) {
    const want = expectedByLabel.get(label) ?? [];
    const have = actualByLabel.get(label) ?? [];
    have.forEach((actual, k) => {
      if (actual.reported) return;
      const unknown = notInEvidence(actual.text, known);
      const numbers = unknown.length > 0 ? ` (${listed(unknown)} not in the evidence)` : '';
      const expectedText = want[k];
      if (expectedText === undefined) {
        problems.push({
          line: actual.line,
          severity: 'error',
          rule: 'harness-line-extra',
          message: `harness line not rendered from the evidence${numbers}`,
        });
      } else if (actual.text !== expectedText) {
        problems.push({
          line: actual.line,
          severity: 'error',
          rule: 'harness-line-edited',
          message: `harness line differs from the evidence${numbers}; expected: ${expectedText}`,
        });
      }
    });
    for (const missing of want.slice(have.length)) {
      problems.push({
        line: headingLine,
        severity: 'error',
        rule: 'harness-line-missing',
        message: `harness line missing: ${missing}`,
      });
    }
  }
  return problems;
}

/** Every problem in the log, sorted by line. */
export function lintLog(text: string, opts: LintOptions = {}): LintProblem[] {
  const lines = text.split('\n').map((l) => l.replace(/\r$/, ''));
  const from = scopeStart(lines, opts.scope ?? 'last-entry');
  const problems: LintProblem[] = [];
  const placeholderLines = new Set<number>();
  for (let i = from; i < lines.length; i++) {
    const stripped = lines[i]!.trim();
    if (PLACEHOLDERS.includes(stripped)) {
      placeholderLines.add(i);
      problems.push({
        line: i + 1,
        severity: 'error',
        rule: 'placeholder',
        message: `placeholder "${stripped}": the commit must be stamped`,
      });
    }
  }
  if (!opts.allowNonMonotonic) problems.push(...headingOrderProblems(lines));
  for (const entry of entriesFrom(lines, from))
    problems.push(...checkEntry(lines, entry, opts, placeholderLines));
  return problems.sort((a, b) => a.line - b.line);
}

export function hasErrors(problems: readonly LintProblem[]): boolean {
  return problems.some((p) => p.severity === 'error');
}

/** `docs/hillclimb-log.md:12: error: … [rule]` */
export function formatProblem(file: string, p: LintProblem): string {
  return `${file}:${p.line}: ${p.severity}: ${p.message} [${p.rule}]`;
}
