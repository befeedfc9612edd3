/**
 * unzipBounded (src/util/bounded-unzip.ts): an artifact's zip, unpacked within limits that hold before
 * anything is inflated. The zips are made by Python's zipfile (a real writer, the same format
 * @actions/artifact writes), some of them then edited as an attacker would.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { unzipBounded } from '../../src/util/bounded-unzip.js';
import { tempDir } from '../helpers/paths.js';

const t = tempDir('hc-unzip-');
afterAll(t.cleanup);
const LIMITS = { maxTotalBytes: 64 << 20, maxFileBytes: 32 << 20, maxFiles: 100 };

/** Write a zip at `file` with Python's zipfile: `script` gets `z` (the ZipFile) and `zipfile`. */
function pyZip(file: string, script: string): string {
  execFileSync('python3', [
    '-c',
    `import zipfile\nwith zipfile.ZipFile(${JSON.stringify(file)}, 'w', zipfile.ZIP_DEFLATED) as z:\n${script.replace(/^/gm, '    ')}`,
  ]);
  return file;
}

describe('unzipBounded', () => {
  it('unpacks a plain archive byte for byte, folders included', () => {
    const zip = pyZip(
      join(t.dir, 'ok.zip'),
      "z.writestr('request.json', '{\"version\": 1}')\nz.writestr('programs/B/manifest.json', 'x' * 100000)\nz.writestr('programs/B/empty', '')",
    );
    const dest = join(t.dir, 'ok');
    expect(unzipBounded(zip, dest, LIMITS)).toEqual({ files: 3, bytes: 100_014 });
    expect(readFileSync(join(dest, 'request.json'), 'utf8')).toBe('{"version": 1}');
    expect(readFileSync(join(dest, 'programs/B/manifest.json'), 'utf8')).toBe('x'.repeat(100_000));
    expect(readFileSync(join(dest, 'programs/B/empty'), 'utf8')).toBe('');
  });

  it('refuses a zip bomb by the size it declares, before inflating anything', () => {
    // 64 MiB of zeros in about 64 KiB.
    const zip = pyZip(
      join(t.dir, 'bomb.zip'),
      "w = z.open('zeros', 'w', force_zip64=False)\nfor _ in range(64): w.write(b'\\0' * (1 << 20))\nw.close()",
    );
    expect(readFileSync(zip).length).toBeLessThan(1 << 20);
    const dest = join(t.dir, 'bomb');
    expect(() => unzipBounded(zip, dest, LIMITS)).toThrow(
      /"zeros": 67108864 bytes, over the 33554432-byte limit/,
    );
    expect(existsSync(dest)).toBe(false);
  });

  it('stops an entry that inflates past the size it declares (a central directory that lies)', () => {
    const zip = pyZip(join(t.dir, 'liar.zip'), "z.writestr('big', b'\\0' * (8 << 20))");
    // The central directory's uncompressed size of the only entry, rewritten to 10 bytes.
    const bytes = readFileSync(zip);
    const central = bytes.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    bytes.writeUInt32LE(10, central + 24);
    writeFileSync(zip, bytes);
    expect(() => unzipBounded(zip, join(t.dir, 'liar'), LIMITS)).toThrow(
      /"big": inflates past the 10 bytes it declares, or is damaged/,
    );
  });

  it('refuses links, paths out of the folder, too many entries, and writes nothing through what exists', () => {
    const link = pyZip(
      join(t.dir, 'link.zip'),
      "i = zipfile.ZipInfo('secret')\ni.create_system = 3\ni.external_attr = 0o120777 << 16\nz.writestr(i, '/proc/self/environ')",
    );
    expect(() => unzipBounded(link, join(t.dir, 'link'), LIMITS)).toThrow(/"secret": a link or a device/);
    const up = pyZip(join(t.dir, 'up.zip'), "z.writestr('a/../../escape', 'x')");
    expect(() => unzipBounded(up, join(t.dir, 'up'), LIMITS)).toThrow(
      /"a\/..\/..\/escape": a path with \. or \.\./,
    );
    const abs = pyZip(
      join(t.dir, 'abs.zip'),
      "i = zipfile.ZipInfo('x')\ni.filename = '/etc/x'\nz.writestr(i, 'x')",
    );
    expect(() => unzipBounded(abs, join(t.dir, 'abs'), LIMITS)).toThrow(/not a relative path/);
    const many = pyZip(join(t.dir, 'many.zip'), "for n in range(101): z.writestr(f'f{n}', '')");
    expect(() => unzipBounded(many, join(t.dir, 'many'), LIMITS)).toThrow(
      /101 entries, over the 100-entry limit/,
    );
    const twice = pyZip(
      join(t.dir, 'twice.zip'),
      "import warnings\nwarnings.simplefilter('ignore')\nz.writestr('same', 'one')\nz.writestr('same', 'two')",
    );
    expect(() => unzipBounded(twice, join(t.dir, 'twice'), LIMITS)).toThrow(/EEXIST/);
    expect(readdirSync(join(t.dir, 'twice'))).toEqual(['same']);
    expect(() => unzipBounded(join(t.dir, 'ok', 'request.json'), join(t.dir, 'nz'), LIMITS)).toThrow(
      /not a zip file/,
    );
  });
});
