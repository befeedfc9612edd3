// Unpacking output tarballs: archives made by real tar writers (Python's tarfile, GNU tar), including
// hostile ones, must never write outside the requested destinations.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { clearDestinations, installOutputs } from '../../src/compute/outputs.js';
import { run } from '../../src/exec/exec.js';
import { tempDir } from '../helpers/paths.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function temp(): string {
  const t = tempDir('hc-out-');
  cleanups.push(t.cleanup);
  return t.dir;
}

/** Build a tarball with Python's tarfile from a list of [name, kind, content-or-target]. */
async function pythonTar(
  file: string,
  members: Array<[string, 'file' | 'dir' | 'symlink', string]>,
  format = 'PAX',
) {
  const script = `
import io, json, sys, tarfile
members = json.loads(sys.argv[2])
with tarfile.open(sys.argv[1], "w:gz", format=getattr(tarfile, sys.argv[3] + "_FORMAT")) as tar:
    for name, kind, content in members:
        info = tarfile.TarInfo(name)
        if kind == "file":
            data = content.encode()
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        elif kind == "dir":
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        else:
            info.type = tarfile.SYMTYPE
            info.linkname = content
            tar.addfile(info)
`;
  await run('python3', ['-c', script, file, JSON.stringify(members), format]);
}

describe('readTar / installOutputs', () => {
  it('reads long PAX and GNU names and installs the three outputs', async () => {
    const dir = temp();
    const long = `trace/${'d'.repeat(120)}/${'f'.repeat(110)}.pb`;
    for (const format of ['PAX', 'GNU', 'USTAR']) {
      const tar = join(dir, `${format}.tgz`);
      const members: Array<[string, 'file' | 'dir' | 'symlink', string]> = [
        ['metrics.json', 'file', '{"a": 1}'],
        ['junit.xml', 'file', '<x/>'],
        ['trace', 'dir', ''],
      ];
      if (format !== 'USTAR') members.push([long, 'file', 'deep']);
      await pythonTar(tar, members, format);
      const dest = join(dir, format);
      const outputs = { metrics: join(dest, 'm.json'), junit: join(dest, 'j.xml'), trace: join(dest, 't') };
      const r = installOutputs(readFileSync(tar), outputs);
      expect(r.installed, format).toEqual(['junit', 'metrics', 'trace']);
      expect(readFileSync(outputs.metrics, 'utf8')).toBe('{"a": 1}');
      if (format !== 'USTAR')
        expect(readFileSync(join(outputs.trace, long.slice('trace/'.length)), 'utf8')).toBe('deep');
    }
  });

  it('reads an archive written by GNU tar', async () => {
    const dir = temp();
    mkdirSync(join(dir, 'src', 'trace', 'sub'), { recursive: true });
    writeFileSync(join(dir, 'src', 'metrics.json'), '{}');
    writeFileSync(join(dir, 'src', 'trace', 'sub', 'x.json.gz'), 'zz');
    await run('tar', ['-czf', join(dir, 'o.tgz'), '-C', join(dir, 'src'), 'metrics.json', 'trace']);
    const outputs = { metrics: join(dir, 'd', 'metrics.json'), trace: join(dir, 'd', 'trace') };
    expect(installOutputs(readFileSync(join(dir, 'o.tgz')), outputs).installed).toEqual(['metrics', 'trace']);
    expect(readFileSync(join(outputs.trace, 'sub', 'x.json.gz'), 'utf8')).toBe('zz');
  });

  it('never writes outside the destinations: traversal, absolute paths and links are refused', async () => {
    const dir = temp();
    const tar = join(dir, 'evil.tgz');
    await pythonTar(tar, [
      ['../escaped.txt', 'file', 'x'],
      ['/tmp/hc-absolute-escape.txt', 'file', 'x'],
      ['trace/../../escaped2.txt', 'file', 'x'],
      ['trace/link', 'symlink', '/etc'],
      ['trace/link/passwd-copy', 'file', 'x'],
      ['metrics.json/inner', 'file', 'x'],
      ['unrequested.txt', 'file', 'x'],
      ['junit.xml', 'file', 'ok'],
    ]);
    const dest = join(dir, 'dest');
    const outputs = { junit: join(dest, 'junit.xml'), trace: join(dest, 'trace') };
    const r = installOutputs(readFileSync(tar), outputs);
    expect(existsSync(join(dir, 'escaped.txt'))).toBe(false);
    expect(existsSync(join(dir, 'escaped2.txt'))).toBe(false);
    expect(existsSync('/tmp/hc-absolute-escape.txt')).toBe(false);
    expect(r.ignored).toEqual(
      expect.arrayContaining(['../escaped.txt', 'trace/../../escaped2.txt', 'trace/link', 'unrequested.txt']),
    );
    // The link was skipped, so "trace/link/passwd-copy" became a plain folder inside the destination.
    expect(readFileSync(join(dest, 'trace', 'link', 'passwd-copy'), 'utf8')).toBe('x');
    expect(readFileSync(outputs.junit, 'utf8')).toBe('ok');
  });

  it('clearDestinations removes stale outputs so a missing one is really missing', () => {
    const dir = temp();
    const outputs = { metrics: join(dir, 'm.json'), trace: join(dir, 't') };
    writeFileSync(outputs.metrics, 'stale');
    mkdirSync(join(outputs.trace, 'x'), { recursive: true });
    clearDestinations(outputs);
    expect(existsSync(outputs.metrics)).toBe(false);
    expect(existsSync(outputs.trace)).toBe(false);
  });
});
