/**
 * Read-only view of the local forge for the CLI and the demo: list the PR records and show one PR
 * with its comments, as data or as plain text. Reads need no lock (every record is replaced
 * atomically).
 */
import type { LocalCommentRecord, LocalPullRecord } from './forges/local-records.js';
import { LocalRecords } from './forges/local-records.js';
import { decodeStamp, stickyVisibleText } from './sticky.js';

export interface LocalPullSummary {
  number: number;
  state: LocalPullRecord['state'];
  draft: boolean;
  branch: string;
  base: string;
  title: string;
  labels: string[];
  comments: number;
  updatedAt: string;
  /** file:// URL of the record. */
  url: string;
}

export interface LocalPullView {
  pull: LocalPullRecord;
  url: string;
  comments: LocalCommentRecord[];
}

/** Every PR record under `<stateDir>/forge`, newest number first. */
export function listLocalPulls(stateDir: string): LocalPullSummary[] {
  const records = new LocalRecords(stateDir);
  return records
    .pulls()
    .reverse()
    .map((p) => ({
      number: p.number,
      state: p.state,
      draft: p.draft,
      branch: p.branch,
      base: p.base,
      title: p.title,
      labels: p.labels,
      comments: records.comments(p.number).length,
      updatedAt: p.updatedAt,
      url: records.pullUrl(p.number),
    }));
}

/** One PR with its comments (oldest first), or undefined when there is no such PR. */
export function showLocalPull(stateDir: string, number: number): LocalPullView | undefined {
  const records = new LocalRecords(stateDir);
  const pull = records.pull(number);
  if (!pull) return undefined;
  return { pull, url: records.pullUrl(number), comments: records.comments(number) };
}

export function formatPullList(pulls: readonly LocalPullSummary[]): string {
  if (pulls.length === 0) return 'no pull requests in the local forge';
  return pulls
    .map((p) => {
      const state = p.state === 'open' && p.draft ? 'draft' : p.state;
      const labels = p.labels.length > 0 ? `  [${p.labels.join(', ')}]` : '';
      return `#${p.number}  ${state.padEnd(6)}  ${p.branch} → ${p.base}  ${p.title}${labels}  (${p.comments} comments)`;
    })
    .join('\n');
}

export function formatPull(view: LocalPullView): string {
  const { pull } = view;
  const state = pull.state === 'open' && pull.draft ? 'open (draft)' : pull.state;
  const lines = [
    `#${pull.number} ${pull.title}`,
    `${state} · ${pull.branch} → ${pull.base} · updated ${pull.updatedAt}`,
    ...(pull.labels.length > 0 ? [`labels: ${pull.labels.join(', ')}`] : []),
    `record: ${view.url}`,
    '',
    pull.body,
  ];
  for (const c of view.comments) {
    const stamp = decodeStamp(c.body);
    const sticky = stamp ? ` · sticky (run ${stamp.runId}, iteration ${stamp.iteration})` : '';
    const hidden = c.minimized ? ' · hidden' : '';
    lines.push(
      '',
      `--- comment ${c.id} by ${c.author} · ${c.updatedAt}${sticky}${hidden}`,
      stickyVisibleText(c.body),
    );
  }
  return lines.join('\n');
}
