/**
 * A trace summary from any path: a trace file (Chrome JSON, XSpace), a profile directory, or a summary
 * JSON saved earlier (`hillclimb trace summary --json`, a bundle's profile/summary.json). The one entry
 * point the CLI, the actions and the loop share.
 */
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { InputError } from '../util/index.js';
import { openTrace } from './readers/open.js';
import { XplaneSource } from './readers/xplane.js';
import { XplaneHostsSource } from './readers/xplane-hosts.js';
import { type SummarizeOptions, summarizeTrace } from './summarize.js';
import { TRACE_SUMMARY_SCHEMA, type TraceSummary } from './types.js';

/** Summarise the trace at `path`, or load the summary saved there. */
export async function summarizeTracePath(
  path: string,
  debug?: (line: string) => void,
  opts: SummarizeOptions = {},
): Promise<TraceSummary> {
  const saved = savedSummary(path);
  if (saved !== undefined) return saved;
  const { source, resolved } = openTrace(path);
  debug?.(`reading ${resolved.path} (${resolved.format})`);
  const summary = await summarizeTrace(source, opts);
  summary.notes.push(...resolved.notes);
  // What the XSpace reader found missing after its read (e.g. HLO of programs that ran).
  if (source instanceof XplaneSource || source instanceof XplaneHostsSource)
    summary.warnings.push(...source.laterWarnings);
  return summary;
}

/** A saved summary, recognised by the first bytes of the file (a trace JSON is never read whole here). */
export function savedSummary(path: string): TraceSummary | undefined {
  if (!path.endsWith('.json')) return undefined;
  let head = '';
  try {
    const fd = openSync(path, 'r');
    const buf = Buffer.alloc(256);
    head = buf.subarray(0, readSync(fd, buf, 0, 256, 0)).toString('utf8');
    closeSync(fd);
  } catch {
    return undefined; // not readable as a file: let openTrace say why
  }
  if (!/^\s*\{\s*"schema"\s*:\s*"hillclimb\.trace-summary\//.test(head)) return undefined;
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as TraceSummary;
  if (parsed.schema !== TRACE_SUMMARY_SCHEMA) {
    throw new InputError(
      path,
      `unsupported summary schema "${parsed.schema}" (expected ${TRACE_SUMMARY_SCHEMA})`,
    );
  }
  return parsed;
}
