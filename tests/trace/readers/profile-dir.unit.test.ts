import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatOfFile, resolveTracePath } from '../../../src/trace/readers/profile-dir.js';
import { InputError } from '../../../src/util/errors.js';
import { tempDir } from '../../helpers/paths.js';

function touch(path: string, content: string | Buffer = 'x'): string {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, content);
  return path;
}

describe('resolving a trace path', () => {
  it('takes the latest run under plugins/profile and prefers the XSpace there', () => {
    const t = tempDir();
    try {
      const old = join(t.dir, 'plugins/profile/2026_01_01_00_00_00');
      const latest = join(t.dir, 'plugins/profile/2026_02_01_00_00_00');
      touch(join(old, 'host.xplane.pb'));
      touch(join(latest, 'host.trace.json.gz'));
      touch(join(latest, 'perfetto_trace.json.gz'));
      touch(join(latest, 'host.xplane.pb'));
      const r = resolveTracePath(t.dir);
      expect(r).toMatchObject({ path: join(latest, 'host.xplane.pb'), format: 'xplane' });
      expect(r.notes.join()).toMatch(
        /also present, not read: host\.trace\.json\.gz, perfetto_trace\.json\.gz/,
      );
      // The plugins/profile folder itself, and a run folder, resolve the same way.
      expect(resolveTracePath(join(t.dir, 'plugins/profile')).path).toBe(join(latest, 'host.xplane.pb'));
      expect(resolveTracePath(latest).path).toBe(join(latest, 'host.xplane.pb'));
    } finally {
      t.cleanup();
    }
  });

  it('without an XSpace: perfetto_trace.json.gz, then <host>.trace.json.gz; several hosts give a note', () => {
    const t = tempDir();
    try {
      touch(join(t.dir, 'a.trace.json.gz'));
      touch(join(t.dir, 'b.trace.json.gz'));
      const two = resolveTracePath(t.dir);
      expect(two).toMatchObject({ path: join(t.dir, 'a.trace.json.gz'), format: 'chrome-json' });
      expect(two.notes[0]).toMatch(/2 candidate files \(one per host\?\); analysing a\.trace\.json\.gz/);
      touch(join(t.dir, 'perfetto_trace.json.gz'));
      expect(resolveTracePath(t.dir).path).toBe(join(t.dir, 'perfetto_trace.json.gz'));
    } finally {
      t.cleanup();
    }
  });

  it('a stray .json beside the log folder, or in a newer run, never hides the XSpace', () => {
    const t = tempDir();
    try {
      const run = join(t.dir, 'plugins/profile/2026_01_01_00_00_00');
      touch(join(run, 'host.xplane.pb'));
      touch(join(t.dir, 'config.json'), '{"lr": 0.1}');
      expect(resolveTracePath(t.dir)).toMatchObject({ path: join(run, 'host.xplane.pb'), format: 'xplane' });
      // A later run folder that holds only an unrelated JSON is not a profile.
      touch(join(t.dir, 'plugins/profile/2026_02_01_00_00_00/metrics.json'), '{}');
      expect(resolveTracePath(t.dir).path).toBe(join(run, 'host.xplane.pb'));
      // Beside the XSpace in its own run folder, the JSON is named and left unread.
      touch(join(run, 'notes.json'), '{}');
      const r = resolveTracePath(run);
      expect(r.path).toBe(join(run, 'host.xplane.pb'));
      expect(r.notes.join()).toMatch(/also present, not read: notes\.json/);
      // A folder of plain JSON traces, with no profile under it, is still read.
      const plain = join(t.dir, 'plain');
      touch(join(plain, 'trace.json'), '{"traceEvents":[]}');
      expect(resolveTracePath(plain).path).toBe(join(plain, 'trace.json'));
    } finally {
      t.cleanup();
    }
  });

  it('a run with one .xplane.pb per host resolves to every host, read together', () => {
    const t = tempDir();
    try {
      const run = join(t.dir, 'plugins/profile/2026_01_01_00_00_00');
      touch(join(run, 'worker-1.xplane.pb'));
      touch(join(run, 'worker-0.xplane.pb'));
      touch(join(run, 'worker-0.trace.json.gz'));
      const r = resolveTracePath(t.dir);
      expect(r).toMatchObject({
        path: run,
        format: 'xplane',
        hosts: [join(run, 'worker-0.xplane.pb'), join(run, 'worker-1.xplane.pb')],
      });
      expect(r.notes.join('\n')).toMatch(
        /2 hosts read together \(worker-0\.xplane\.pb, worker-1\.xplane\.pb\)/,
      );
      expect(r.notes.join('\n')).toMatch(/also present, not read: worker-0\.trace\.json\.gz/);
      // One host: that file, as before.
      expect(resolveTracePath(join(run, 'worker-1.xplane.pb')).hosts).toBeUndefined();
    } finally {
      t.cleanup();
    }
  });

  it('refuses chunked riegeli exports, empty folders and missing paths with InputError', () => {
    const t = tempDir();
    try {
      const run = join(t.dir, 'plugins/profile/r');
      touch(join(run, 'host.xplane.riegeli'));
      expect(() => resolveTracePath(t.dir)).toThrow(/\.xplane\.riegeli traces are not supported yet/);
      const empty = join(t.dir, 'empty');
      mkdirSync(empty);
      expect(() => resolveTracePath(empty)).toThrow(InputError);
      expect(() => resolveTracePath(empty)).toThrow(/no trace found/);
      expect(() => resolveTracePath(join(t.dir, 'missing'))).toThrow(/missing: no such file or directory/);
    } finally {
      t.cleanup();
    }
  });

  it('knows a file by its name, else by its first bytes', () => {
    const t = tempDir();
    try {
      expect(formatOfFile(touch(join(t.dir, 'x.xplane.pb')))).toBe('xplane');
      expect(formatOfFile(touch(join(t.dir, 'x.json')))).toBe('chrome-json');
      expect(formatOfFile(touch(join(t.dir, 'trace'), '  {"traceEvents":[]}'))).toBe('chrome-json');
      expect(formatOfFile(touch(join(t.dir, 'gz'), Buffer.from([0x1f, 0x8b, 0x08])))).toBe('chrome-json');
      expect(formatOfFile(touch(join(t.dir, 'proto'), '\x0a\x05'))).toBe('xplane');
    } finally {
      t.cleanup();
    }
  });
});
