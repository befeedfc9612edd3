/**
 * Markdown and terminal text: PR bodies, sticky comments, log entries, job summaries, trace tables.
 * Other modules import from this entry, never from its files.
 */
export { checksSection } from './checks.js';
export { renderComment } from './comment.js';
export { headline, measuredChange, mfuText } from './facts.js';
export { iterationTag } from './format.js';
export { customCallSection, hotspotSection, topChanges } from './hotspots.js';
export { JOB_SUMMARY_MAX_BYTES, renderJobSummary } from './job-summary.js';
export { appendLogEntry, ITERATION_HEADING, renderLogEntry } from './log-entry.js';
export { evidenceLoader } from './log-evidence.js';
export type { LintScope } from './log-lint.js';
export { formatProblem, hasErrors, lintLog } from './log-lint.js';
export { details, fenced } from './markdown.js';
export { renderPullRequest } from './pr.js';
export { runTable } from './terminal.js';
export { toolsSection, toolsSentence, toolsSpent } from './tools.js';
export { formatDiff, formatSummary } from './trace-tables.js';
export { baselineSection, historyCharts, trajectorySection } from './trajectory.js';
