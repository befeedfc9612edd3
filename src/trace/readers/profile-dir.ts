/**
 * Resolve what the user pointed at to one trace file: a trace file itself, a profile run directory
 * (`plugins/profile/<run>/`), or a log directory above it (the latest run is taken).
 *
 * Inside a run directory the XSpace is preferred (it is complete and carries device stats); otherwise
 * `perfetto_trace.json.gz`, then `<host>.trace.json.gz`, then any `.json`/`.json.gz`. Chunked
 * `.xplane.riegeli` exports are recognised and refused with a clear message. A run of several hosts (one
 * `<host>.xplane.pb` each) is read whole: every host's file, its devices named after the host. An unrelated `.json` (a
 * config or metrics file) never decides which folder is read while a profiler trace exists below.
 */
import { closeSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { InputError } from '../../util/index.js';
import type { TraceFormat } from './model.js';

export interface ResolvedTrace {
  /** The trace file to read. */
  path: string;
  format: TraceFormat;
  /** Notes about the choice (other candidates that were not taken). */
  notes: string[];
  /**
   * A multi-host run (one `<host>.xplane.pb` per host): every host's file, read together as one trace
   * whose devices are named after their host; `path` is then the run directory.
   */
  hosts?: string[];
}

export function resolveTracePath(path: string): ResolvedTrace {
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(path);
  } catch {
    throw new InputError(path, 'no such file or directory');
  }
  if (st.isDirectory()) return resolveDirectory(path);
  return { path, format: formatOfFile(path), notes: [] };
}

/** The format of a trace file, from its name or, failing that, its first bytes. */
export function formatOfFile(path: string): TraceFormat {
  const name = basename(path);
  if (/\.xplane\.riegeli$/.test(name)) throw riegeliError(path);
  if (/\.pb$/.test(name)) return 'xplane';
  if (/\.json(\.gz)?$/.test(name)) return 'chrome-json';
  const head = readHead(path, 16);
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'chrome-json';
  const text = head.toString('latin1').trimStart();
  if (text.startsWith('{') || text.startsWith('[')) return 'chrome-json';
  return 'xplane';
}

function resolveDirectory(dir: string): ResolvedTrace {
  const runDir = latestRunDir(dir);
  const files = readdirSync(runDir).filter((f) => statSync(join(runDir, f)).isFile());
  const notes: string[] = [];
  const pick = (matching: string[], format: TraceFormat): ResolvedTrace => {
    const sorted = [...matching].sort();
    if (sorted.length > 1)
      notes.push(`${sorted.length} candidate files (one per host?); analysing ${sorted[0]}`);
    const others = files.filter((f) => f !== sorted[0] && isTraceFile(f));
    if (others.length > 0) notes.push(`also present, not read: ${others.join(', ')}`);
    return { path: join(runDir, sorted[0]!), format, notes };
  };
  const xplanes = files.filter((f) => f.endsWith('.xplane.pb')).sort();
  if (xplanes.length > 1) {
    const others = files.filter((f) => !xplanes.includes(f) && isTraceFile(f));
    return {
      path: runDir,
      format: 'xplane',
      hosts: xplanes.map((f) => join(runDir, f)),
      notes: [
        `${xplanes.length} hosts read together (${xplanes.join(', ')}): each device is named after its host`,
        ...(others.length > 0 ? [`also present, not read: ${others.join(', ')}`] : []),
      ],
    };
  }
  if (xplanes.length > 0) return pick(xplanes, 'xplane');
  const perfetto = files.filter((f) => f === 'perfetto_trace.json.gz');
  if (perfetto.length > 0) return pick(perfetto, 'chrome-json');
  const traceJson = files.filter((f) => f.endsWith('.trace.json.gz'));
  if (traceJson.length > 0) return pick(traceJson, 'chrome-json');
  const anyJson = files.filter((f) => /\.json(\.gz)?$/.test(f));
  if (anyJson.length > 0) return pick(anyJson, 'chrome-json');
  const riegeli = files.filter((f) => f.endsWith('.xplane.riegeli'));
  if (riegeli.length > 0) throw riegeliError(join(runDir, riegeli[0]!));
  throw new InputError(
    runDir,
    'no trace found (expected *.xplane.pb, perfetto_trace.json.gz or *.trace.json.gz)',
    {
      hint: 'pass the directory given to jax.profiler.trace(), a plugins/profile/<run> directory, or a trace file',
    },
  );
}

/**
 * The directory holding the trace files: `dir` itself when it has profiler traces, else the latest
 * `<dir>/plugins/profile/<run>` that has them (or `<dir>/<run>` when `dir` is `plugins/profile`). Any
 * other `.json` counts only where no profiler trace is found: a stray config or metrics file beside the
 * log directory, or in a newer run folder, must not hide the run's `.xplane.pb`.
 */
function latestRunDir(dir: string): string {
  const entries = readdirSync(dir);
  if (entries.some(isProfilerTrace)) return dir;
  const runs = runDirs(dir);
  const profiled = runs.filter((r) => readdirSync(r).some(isProfilerTrace));
  if (profiled.length > 0) return profiled[profiled.length - 1]!;
  if (entries.some(isTraceFile)) return dir;
  const any = runs.filter((r) => readdirSync(r).some(isTraceFile));
  if (any.length > 0) return any[any.length - 1]!;
  throw new InputError(dir, 'no trace found in this directory or under plugins/profile/', {
    hint: 'pass the directory given to jax.profiler.trace(), a plugins/profile/<run> directory, or a trace file',
  });
}

/** Run folders under `<dir>/plugins/profile` (else under `dir`), oldest first. */
function runDirs(dir: string): string[] {
  for (const base of [join(dir, 'plugins', 'profile'), dir]) {
    let runs: string[];
    try {
      runs = readdirSync(base).filter((r) => statSync(join(base, r)).isDirectory());
    } catch {
      continue;
    }
    // Run directories are named by capture time (YYYY_MM_DD_HH_MM_SS), so the last name is the latest.
    const found = runs.sort().map((r) => join(base, r));
    if (found.some((r) => readdirSync(r).some(isTraceFile))) return found;
  }
  return [];
}

/** What the profiler writes: an XSpace, a per-host trace JSON, or the Perfetto export. */
function isProfilerTrace(name: string): boolean {
  return /\.xplane\.(pb|riegeli)$|\.trace\.json(\.gz)?$|^perfetto_trace\.json(\.gz)?$/.test(name);
}

function isTraceFile(name: string): boolean {
  return /\.xplane\.(pb|riegeli)$|\.json(\.gz)?$/.test(name);
}

function riegeliError(path: string): InputError {
  return new InputError(path, 'chunked .xplane.riegeli traces are not supported yet', {
    hint: 'capture with the default jax.profiler export (an .xplane.pb), or pass the trace.json.gz',
  });
}

function readHead(path: string, n: number): Buffer {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(n);
    const got = readSync(fd, buf, 0, n, 0);
    return buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}
