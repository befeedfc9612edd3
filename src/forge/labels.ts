/**
 * Which labels hillclimb manages, and how a PR's labels change. hillclimb owns every label that
 * starts with `hillclimb:` and nothing else: on each upsert it adds the wanted ones and removes its
 * own that are no longer wanted, and never touches a label a person (or another tool) put there.
 * Label names compare case-insensitively, as GitHub does.
 */

export const MANAGED_LABEL_PREFIX = 'hillclimb:';

export interface LabelPlan {
  /** Labels to add, spelled as wanted. */
  add: string[];
  /** Managed labels to remove, spelled as they are on the PR. */
  remove: string[];
  /** The labels after the change, sorted. */
  result: string[];
}

export function isManagedLabel(name: string): boolean {
  return name.toLowerCase().startsWith(MANAGED_LABEL_PREFIX);
}

export function planLabels(current: readonly string[], wanted: readonly string[]): LabelPlan {
  const lower = (s: string) => s.toLowerCase();
  const wantedSet = new Set(wanted.map(lower));
  const currentSet = new Set(current.map(lower));
  const add = dedupe(wanted).filter((l) => !currentSet.has(lower(l)));
  const remove = current.filter((l) => isManagedLabel(l) && !wantedSet.has(lower(l)));
  const removed = new Set(remove.map(lower));
  const result = [...current.filter((l) => !removed.has(lower(l))), ...add].sort();
  return { add, remove, result };
}

function dedupe(labels: readonly string[]): string[] {
  const seen = new Set<string>();
  return labels.filter((l) => {
    const k = l.toLowerCase();
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

export interface LabelStyle {
  /** Six hex digits, no `#` (GitHub's format). */
  color: string;
  description: string;
}

/** Colours per verdict, so a PR list reads at a glance; other managed labels get a neutral blue. */
const VERDICT_STYLES: Record<string, LabelStyle> = {
  improved: { color: '0e8a16', description: 'hillclimb: faster than the champion beyond noise' },
  'no-change': { color: 'c5def5', description: 'hillclimb: within noise of the champion' },
  regressed: { color: 'd93f0b', description: 'hillclimb: slower than the champion beyond noise' },
  invalid: { color: 'b60205', description: 'hillclimb: touched protected paths or failed correctness' },
  'needs-human': { color: 'fbca04', description: 'hillclimb: implausible result, a person must look' },
  error: { color: '5319e7', description: 'hillclimb: infrastructure failure, not a verdict on the change' },
  'no-op': { color: 'ededed', description: 'hillclimb: the agent made no commit' },
  'screened-out': { color: 'bfd4f2', description: 'hillclimb: lost the screen among several candidates' },
};
const DEFAULT_STYLE: LabelStyle = { color: '1d76db', description: 'Managed by hillclimb' };

export function labelStyle(name: string): LabelStyle {
  const suffix = name.toLowerCase().slice(MANAGED_LABEL_PREFIX.length);
  return (isManagedLabel(name) ? VERDICT_STYLES[suffix] : undefined) ?? DEFAULT_STYLE;
}
