/** Open any trace path (file, profile run directory, or log directory) as a TraceSource. */
import { type ChromeJsonOptions, ChromeJsonSource } from './chrome-json.js';
import type { TraceSource } from './model.js';
import { type ResolvedTrace, resolveTracePath } from './profile-dir.js';
import { XplaneSource } from './xplane.js';
import { XplaneHostsSource } from './xplane-hosts.js';

export interface OpenedTrace {
  source: TraceSource;
  resolved: ResolvedTrace;
}

export function openTrace(path: string, opts: ChromeJsonOptions = {}): OpenedTrace {
  const resolved = resolveTracePath(path);
  const source =
    resolved.hosts !== undefined
      ? new XplaneHostsSource(resolved.path, resolved.hosts)
      : resolved.format === 'xplane'
        ? new XplaneSource(resolved.path)
        : new ChromeJsonSource(resolved.path, opts);
  return { source, resolved };
}
