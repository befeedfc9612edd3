/**
 * JUnit XML reader: pytest's `--junitxml` output and generic JUnit (`<testsuites>` or a lone
 * `<testsuite>`, nested suites, `<testcase>` with `<failure>`, `<error>`, `<skipped>`,
 * `<system-out>`, `<system-err>`). The engine reads test results only from these files.
 * Unreadable, truncated or non-JUnit files raise InputError naming the file (exit code 2).
 */

import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { errorMessage, InputError, readTextFile } from '../util/index.js';

export type TestStatus = 'passed' | 'failed' | 'error' | 'skipped';

export interface JUnitCase {
  /** Name of the innermost enclosing `<testsuite>` ('' when unnamed). */
  suite: string;
  /** `classname` attribute; for pytest the dotted module path plus class, e.g. `kernels.tests.test_gdn.TestFwd`. */
  classname: string;
  /** `name` attribute, e.g. `test_fwd[B1-T64-H2]`. */
  name: string;
  /** Seconds (0 when the file gives none). */
  time: number;
  /** error > failed > skipped > passed when a case carries several outcome elements. */
  status: TestStatus;
  /** The failure's or error's `message` attribute (else the first line of its text); null when passed or skipped. */
  message: string | null;
  /** Full text of the failure or error element (traceback); null when there is none. */
  details: string | null;
  /** Why a skipped case was skipped (`message` attribute, else its text); null unless skipped. */
  skipReason: string | null;
  /** `type` of the skipped element, e.g. `pytest.skip` or `pytest.xfail`; null when absent. */
  skipType: string | null;
  /** Source file and line when the writer records them (pytest's xunit1 family). */
  file: string | null;
  line: number | null;
  /** Captured output, all `<system-out>` / `<system-err>` elements of the case joined; null when none. */
  systemOut: string | null;
  systemErr: string | null;
}

export interface JUnitTotals {
  tests: number;
  passed: number;
  failed: number;
  errors: number;
  skipped: number;
  /** Seconds: the sum of the top-level suites' `time` when all have one, else the sum over cases. */
  time: number;
}

export interface JUnitReport {
  /** The file it was read from (as given). */
  file: string;
  cases: JUnitCase[];
  /**
   * The `<property>` elements of the suites (`<testsuite><properties>`, pytest's global properties),
   * name → value, in document order; a name given twice keeps all its values.
   */
  properties: Array<{ name: string; value: string }>;
  /** Counted from the cases, not copied from suite attributes (pytest's agree with these). */
  totals: JUnitTotals;
}

type XmlNode = Record<string, unknown>;

const ATTR = '@_';
const TEXT = '#text';
const REPEATABLE = new Set([
  'testsuite',
  'testcase',
  'failure',
  'error',
  'skipped',
  'system-out',
  'system-err',
  'property',
]);

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: ATTR,
  textNodeName: TEXT,
  parseTagValue: false,
  parseAttributeValue: false,
  alwaysCreateTextNode: true,
  // Decodes numeric character references (pytest writes newlines in messages as &#10;); the plain
  // XML entities alone would leave them encoded. Deprecated in favour of a custom entityDecoder.
  htmlEntities: true,
  isArray: (name) => REPEATABLE.has(name),
});

function attr(node: XmlNode, name: string): string | undefined {
  const v = node[`${ATTR}${name}`];
  return typeof v === 'string' ? v : undefined;
}

function text(node: XmlNode): string {
  const v = node[TEXT];
  return typeof v === 'string' ? v : '';
}

function children(node: XmlNode, tag: string): XmlNode[] {
  const v = node[tag];
  return Array.isArray(v) ? (v as XmlNode[]) : [];
}

/** Seconds from a `time` attribute; some writers use thousands separators ("1,234.5"). */
function seconds(file: string, raw: string | undefined, where: string): number {
  if (raw === undefined || raw.trim() === '') return 0;
  const value = Number(raw.replaceAll(',', ''));
  if (!Number.isFinite(value) || value < 0)
    throw new InputError(file, `${where} has time "${raw}", not a number of seconds`);
  return value;
}

function joinedText(nodes: readonly XmlNode[]): string | null {
  const parts = nodes.map(text).filter((t) => t !== '');
  return parts.length === 0 ? null : parts.join('\n');
}

/**
 * A failure message on one line for a verdict: its first line, and where that line says nothing after
 * the exception's name (numpy's `assert_allclose` starts its message with a newline, so pytest's reads
 * "AssertionError: " then the values), the lines that follow, up to `max` characters.
 */
export function failureSummary(message: string, max = 300): string {
  const lines = message
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const first = lines[0] ?? '';
  if (!/^[\w.]*:?$/.test(first) && !/:$/.test(first)) return first.slice(0, max);
  let out = first;
  for (const l of lines.slice(1)) {
    if (out.length >= max) break;
    out = out === '' ? l : `${out} ${l}`;
  }
  return out.length > max ? `${out.slice(0, max - 1)}…` : out;
}

function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, ' ').trim();
}

function firstLine(s: string): string {
  return s.split('\n', 1)[0]!;
}

function readCase(file: string, node: XmlNode, suite: string): JUnitCase {
  const classname = attr(node, 'classname') ?? '';
  const name = attr(node, 'name') ?? '';
  const where = `testcase "${classname === '' ? name : `${classname}::${name}`}"`;
  const errors = children(node, 'error');
  const failures = children(node, 'failure');
  const skips = children(node, 'skipped');
  const problem = errors[0] ?? failures[0];
  const status: TestStatus =
    errors.length > 0 ? 'error' : failures.length > 0 ? 'failed' : skips.length > 0 ? 'skipped' : 'passed';
  const problemText = problem === undefined ? '' : text(problem);
  const skip = status === 'skipped' ? skips[0] : undefined;
  const lineRaw = attr(node, 'line');
  const line = lineRaw === undefined ? Number.NaN : Number(lineRaw);
  return {
    suite,
    classname,
    name,
    time: seconds(file, attr(node, 'time'), where),
    status,
    message: problem === undefined ? null : (attr(problem, 'message') ?? (firstLine(problemText) || null)),
    details: problemText === '' ? null : problemText,
    skipReason: skip === undefined ? null : (attr(skip, 'message') ?? (text(skip) || null)),
    skipType: skip === undefined ? null : (attr(skip, 'type') ?? null),
    file: attr(node, 'file') ?? null,
    line: Number.isInteger(line) ? line : null,
    systemOut: joinedText(children(node, 'system-out')),
    systemErr: joinedText(children(node, 'system-err')),
  };
}

/** Cases of `suite` and of any suites nested in it, in document order per level. */
function collectCases(file: string, suite: XmlNode, out: JUnitCase[]): void {
  const name = attr(suite, 'name') ?? '';
  for (const c of children(suite, 'testcase')) out.push(readCase(file, c, name));
  for (const inner of children(suite, 'testsuite')) collectCases(file, inner, out);
}

/** The suite-level properties of `suite` and of the suites nested in it. */
function collectProperties(suite: XmlNode, out: Array<{ name: string; value: string }>): void {
  for (const holder of [suite.properties].filter((p): p is XmlNode => typeof p === 'object' && p !== null)) {
    for (const p of children(holder, 'property')) {
      const name = attr(p, 'name');
      if (name !== undefined) out.push({ name, value: attr(p, 'value') ?? text(p) });
    }
  }
  for (const inner of children(suite, 'testsuite')) collectProperties(inner, out);
}

/** The top-level `<testsuite>` elements, whichever root the writer used. */
function topSuites(file: string, doc: XmlNode): XmlNode[] {
  const roots = Object.keys(doc).filter((k) => !k.startsWith('?'));
  if ('testsuites' in doc) {
    const root = doc.testsuites;
    return typeof root === 'object' && root !== null ? children(root as XmlNode, 'testsuite') : [];
  }
  if ('testsuite' in doc) return children(doc, 'testsuite');
  const found = roots.length === 0 ? 'no root element' : `root element <${roots[0]}>`;
  throw new InputError(file, `not JUnit XML: ${found}, expected <testsuites> or <testsuite>`);
}

function totalsOf(file: string, cases: readonly JUnitCase[], suites: readonly XmlNode[]): JUnitTotals {
  const count = (s: TestStatus): number => cases.filter((c) => c.status === s).length;
  const suiteTimes = suites.map((s) => attr(s, 'time'));
  const time =
    suiteTimes.every((t) => t !== undefined && t.trim() !== '') && suites.length > 0
      ? suiteTimes.reduce((sum, t, i) => sum + seconds(file, t, `testsuite ${i}`), 0)
      : cases.reduce((sum, c) => sum + c.time, 0);
  return {
    tests: cases.length,
    passed: count('passed'),
    failed: count('failed'),
    errors: count('error'),
    skipped: count('skipped'),
    time,
  };
}

/** One line about a validation error; unclosed elements mean the file ends early. */
function xmlProblem(err: { msg: string; line: number; col: number }): string {
  // The validator lists several unclosed elements as a JSON array, at a meaningless line 1.
  const open = /^Invalid '(\[.*\])' found\.?$/s.exec(err.msg);
  if (open) {
    const tags = (JSON.parse(open[1]!) as string[]).map((t) => `<${t}>`).join(' > ');
    return `truncated XML: the file ends inside ${tags}`;
  }
  const single = /^Unclosed tag '(.+)'\.?$/.exec(err.msg);
  if (single) return `truncated XML: <${single[1]}> opened at line ${err.line} is never closed`;
  return `invalid XML at line ${err.line}, column ${err.col}: ${oneLine(err.msg)}`;
}

/**
 * Parse JUnit XML text. `file` names the source in errors.
 * @throws InputError for empty, malformed or truncated XML and for XML that is not JUnit.
 */
export function parseJUnitXml(xml: string, file: string): JUnitReport {
  if (xml.trim() === '') throw new InputError(file, 'empty file, expected JUnit XML');
  const valid = XMLValidator.validate(xml);
  if (valid !== true) {
    throw new InputError(file, xmlProblem(valid.err), {
      hint: 'a truncated file usually means the test run was killed before pytest finished writing it',
    });
  }
  let doc: XmlNode;
  try {
    doc = parser.parse(xml) as XmlNode;
  } catch (err) {
    throw new InputError(file, `invalid XML: ${oneLine(errorMessage(err))}`, { cause: err });
  }
  const suites = topSuites(file, doc);
  const cases: JUnitCase[] = [];
  const properties: Array<{ name: string; value: string }> = [];
  for (const suite of suites) {
    collectCases(file, suite, cases);
    collectProperties(suite, properties);
  }
  return { file, cases, properties, totals: totalsOf(file, cases, suites) };
}

/**
 * Read and parse a JUnit XML file.
 * @throws InputError naming the file when it cannot be read or parsed.
 */
export async function readJUnitXml(file: string): Promise<JUnitReport> {
  return parseJUnitXml(await readTextFile(file, 'JUnit XML'), file);
}
