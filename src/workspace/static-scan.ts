/**
 * The static hack scan: the first, cheapest gate. Looks only at lines the candidate ADDED to editable
 * files (so pre-existing code never trips it and a finding always points at the agent's own change),
 * runs the built-in rules (scan-rules.ts) and the target's configured `static_checks`, and reports each
 * finding with file, line, rule id and reason.
 */
import type { StaticCheck } from '../config/index.js';
import type { Git } from './git.js';
import { matchAny } from './glob.js';
import { LINE_RULES, type LineRule, PATH_RULES, type PathRule, type Severity } from './scan-rules.js';
import { parseUnifiedDiff } from './unified-diff.js';

export interface Finding {
  file: string;
  /** 1-based line in the new file; undefined for a finding about the file itself. */
  line: number | undefined;
  ruleId: string;
  reason: string;
  severity: Severity;
  /** The offending line, trimmed and capped, for the report. */
  excerpt: string;
}

export interface ScanResult {
  findings: Finding[];
  /** True when any finding has severity `block`. */
  blocking: boolean;
  /** Editable files that were scanned. */
  scannedFiles: string[];
}

export interface ScanOptions {
  editable: readonly string[];
  protected: readonly string[];
  /** The target's configured patterns (JavaScript regular expressions). */
  staticChecks?: readonly StaticCheck[];
  /** Replace the built-in rules (tests, other languages). Default: scan-rules.ts. */
  lineRules?: readonly LineRule[];
  pathRules?: readonly PathRule[];
}

const MAX_EXCERPT = 160;

/** Scan a unified diff (as printed by `git diff`). */
export function scanDiff(diffText: string, opts: ScanOptions): ScanResult {
  const lineRules = [...(opts.lineRules ?? LINE_RULES), ...configuredRules(opts.staticChecks ?? [])];
  const pathRules = opts.pathRules ?? PATH_RULES;
  const findings: Finding[] = [];
  const scannedFiles: string[] = [];

  for (const file of parseUnifiedDiff(diffText)) {
    const path = file.newPath;
    if (path === undefined) continue; // deleted: nothing added
    if (!matchAny(opts.editable, path) || matchAny(opts.protected, path)) continue; // the guard's business
    scannedFiles.push(path);

    for (const rule of pathRules) {
      if (rule.test(path, file.binary)) {
        findings.push({
          file: path,
          line: undefined,
          ruleId: rule.id,
          reason: rule.reason,
          severity: rule.severity,
          excerpt: '',
        });
      }
    }
    const rules = lineRules.filter((r) => matchAny(r.paths, path));
    if (rules.length === 0) continue;
    const python = /\.pyi?$/.test(path);
    for (const added of file.added) {
      const code = python ? stripPythonComment(added.text) : added.text;
      if (code.trim() === '') continue;
      for (const rule of rules) {
        const subject = rule.rawLine ? added.text : code;
        if (rule.patterns.some((p) => (typeof p === 'function' ? p(subject) : p.test(subject)))) {
          findings.push({
            file: path,
            line: added.line,
            ruleId: rule.id,
            reason: rule.reason,
            severity: rule.severity,
            excerpt: excerpt(added.text),
          });
        }
      }
    }
  }
  return { findings, blocking: findings.some((f) => f.severity === 'block'), scannedFiles };
}

/** Scan what changed between two commits. */
export async function scanCommits(
  git: Git,
  base: string,
  head: string,
  opts: ScanOptions,
): Promise<ScanResult> {
  return scanDiff(await git.diff(base, head), opts);
}

/** Configured checks become blocking line rules over every editable file (or their own `paths`). */
function configuredRules(checks: readonly StaticCheck[]): LineRule[] {
  return checks.map((c, i) => ({
    id: `static_checks[${i}]`,
    reason: c.reason,
    severity: 'block',
    paths: c.paths && c.paths.length > 0 ? c.paths : ['**'],
    patterns: [new RegExp(c.pattern)],
    rawLine: true,
  }));
}

/**
 * Drop a trailing `# comment` (outside string literals), so prose in comments does not trip rules.
 * Strings are tracked per line only; a `#` inside a multi-line string is treated as a comment start,
 * which can only hide text from the scan for the rest of that one line.
 */
export function stripPythonComment(line: string): string {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '#') {
      return line.slice(0, i);
    }
  }
  return line;
}

function excerpt(text: string): string {
  const t = text.trim();
  return t.length > MAX_EXCERPT ? `${t.slice(0, MAX_EXCERPT - 1)}…` : t;
}

/** A short human line per finding, e.g. for logs: "kernels/gdn/x.py:12 [sleep] sleeps: …". */
export function formatFinding(f: Finding): string {
  return `${f.file}${f.line === undefined ? '' : `:${f.line}`} [${f.ruleId}] ${f.reason}${f.excerpt ? ` — ${f.excerpt}` : ''}`;
}
