/**
 * The changed-path guard (DESIGN principle 2): the agent may change only the target's editable paths.
 * Protected wins over editable, and anything outside editable is a violation too, so a forgotten
 * protected entry cannot open a hole. Callers pass every changed path, a rename counting as both of
 * its paths (Git.changedPaths does this), so moving a protected file into an editable folder is caught.
 */
import { matchAny } from './glob.js';

export interface PathRules {
  editable: readonly string[];
  protected: readonly string[];
}

export interface GuardResult {
  /** True when no path is protected and every path is editable. */
  allowed: boolean;
  /** Changed paths matching a protected glob (whether or not an editable glob matches too). */
  protectedTouched: string[];
  /** Changed paths matching no editable glob (and no protected one: those are listed above). */
  outsideEditable: string[];
  /**
   * Changed `.gitattributes` / `.gitmodules` files, wherever they are: attributes can make the harness's
   * own git run filter programs, submodules fetch other repositories. Never a candidate's to change.
   */
  gitControl: string[];
}

const GIT_CONTROL = /(?:^|\/)\.git(?:attributes|modules)$/;

export function classifyChanges(changedPaths: readonly string[], rules: PathRules): GuardResult {
  const protectedTouched: string[] = [];
  const outsideEditable: string[] = [];
  const gitControl: string[] = [];
  for (const path of [...new Set(changedPaths)].sort()) {
    if (GIT_CONTROL.test(path)) gitControl.push(path);
    if (matchAny(rules.protected, path)) protectedTouched.push(path);
    else if (!matchAny(rules.editable, path)) outsideEditable.push(path);
  }
  return {
    allowed: protectedTouched.length === 0 && outsideEditable.length === 0 && gitControl.length === 0,
    protectedTouched,
    outsideEditable,
    gitControl,
  };
}

/** One line for logs and the PR body, e.g. "2 protected paths touched: a, b; 1 path outside editable: c". */
export function describeViolations(result: GuardResult): string {
  if (result.allowed) return 'every changed path is editable';
  const parts: string[] = [];
  const list = (paths: string[], one: string, many: string) =>
    `${paths.length} ${paths.length === 1 ? one : many}: ${paths.join(', ')}`;
  if (result.protectedTouched.length > 0) {
    parts.push(list(result.protectedTouched, 'protected path touched', 'protected paths touched'));
  }
  if (result.outsideEditable.length > 0) {
    parts.push(list(result.outsideEditable, 'path outside editable', 'paths outside editable'));
  }
  if (result.gitControl.length > 0) {
    parts.push(list(result.gitControl, 'git control file changed', 'git control files changed'));
  }
  return parts.join('; ');
}
