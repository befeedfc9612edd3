/**
 * Unpacking a zip another job made (an artifact of the run), within limits that hold before anything is
 * inflated: the central directory's sizes are checked against them, and each entry is inflated to at most
 * the size it declares. A zip bomb is refused by its declared sizes or stops at them; links, devices,
 * absolute paths, `..` and control characters in names are refused; nothing is written through an
 * existing file. Stored and deflated entries only (what upload-artifact and @actions/artifact write);
 * no zip64 (an artifact of the tools relay is far under 4 GiB).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { readPlainFile } from './untrusted-files.js';

export interface UnzipLimits {
  maxTotalBytes: number;
  maxFileBytes: number;
  maxFiles: number;
}

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
/** File type bits of a Unix mode in the upper half of the external attributes. */
const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;

/** Unpack `zipFile` into `dest` (created), or throw naming the entry and why it was refused. */
export function unzipBounded(
  zipFile: string,
  dest: string,
  limits: UnzipLimits,
): { files: number; bytes: number } {
  const zip = readPlainFile(zipFile, limits.maxTotalBytes);
  const fail = (why: string): never => {
    throw new Error(`${zipFile}: ${why}`);
  };
  // The end of central directory record: the last 22 bytes, or up to 64 KiB of comment before them.
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 0xffff); i--) {
    if (zip.readUInt32LE(i) === EOCD) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) fail('not a zip file (no end of central directory)');
  const entries = zip.readUInt16LE(eocd + 10);
  const cdSize = zip.readUInt32LE(eocd + 12);
  const cdOffset = zip.readUInt32LE(eocd + 16);
  if (entries === 0xffff || cdOffset === 0xffffffff) fail('a zip64 archive, which the relay never writes');
  if (entries > limits.maxFiles) fail(`${entries} entries, over the ${limits.maxFiles}-entry limit`);
  if (cdOffset + cdSize > eocd) fail('its central directory lies outside the file');

  // First pass: every entry's name, type and sizes, against the limits, before anything is written.
  type Entry = {
    name: string;
    dir: boolean;
    method: number;
    compressed: number;
    size: number;
    local: number;
  };
  const list: Entry[] = [];
  let total = 0;
  let at = cdOffset;
  for (let n = 0; n < entries; n++) {
    if (at + 46 > eocd || zip.readUInt32LE(at) !== CENTRAL)
      fail(`entry ${n + 1}: a damaged central directory`);
    const flags = zip.readUInt16LE(at + 8);
    const method = zip.readUInt16LE(at + 10);
    const compressed = zip.readUInt32LE(at + 20);
    const size = zip.readUInt32LE(at + 24);
    const nameLength = zip.readUInt16LE(at + 28);
    const extra = zip.readUInt16LE(at + 30);
    const comment = zip.readUInt16LE(at + 32);
    const madeBy = zip.readUInt16LE(at + 4) >> 8;
    const external = zip.readUInt32LE(at + 38);
    const local = zip.readUInt32LE(at + 42);
    const name = zip.subarray(at + 46, at + 46 + nameLength).toString('utf8');
    at += 46 + nameLength + extra + comment;
    const what = JSON.stringify(name.slice(0, 80));
    if (flags & 0x1) fail(`${what}: encrypted`);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
    if (!name || /[\u0000-\u001f\u007f\\]/.test(name) || name.startsWith('/'))
      fail(`${what}: not a relative path`);
    if (name.split('/').some((part) => part === '..' || part === '.')) fail(`${what}: a path with . or ..`);
    const dir = name.endsWith('/');
    // Unix-made entries say their file type; a link or a device is refused.
    const type = madeBy === 3 ? (external >>> 16) & S_IFMT : 0;
    if (type !== 0 && type !== S_IFREG && type !== S_IFDIR) fail(`${what}: a link or a device`);
    if (!dir && method !== 0 && method !== 8) fail(`${what}: compression method ${method}`);
    if (size > limits.maxFileBytes)
      fail(`${what}: ${size} bytes, over the ${limits.maxFileBytes}-byte limit`);
    total += size;
    if (total > limits.maxTotalBytes) fail(`over ${limits.maxTotalBytes} bytes unpacked`);
    list.push({ name, dir, method, compressed, size, local });
  }

  mkdirSync(dest, { recursive: true });
  for (const e of list) {
    const target = join(dest, e.name);
    if (e.dir) {
      mkdirSync(target, { recursive: true });
      continue;
    }
    const what = JSON.stringify(e.name.slice(0, 80));
    if (e.local + 30 > zip.length || zip.readUInt32LE(e.local) !== LOCAL)
      fail(`${what}: a damaged local header`);
    const start = e.local + 30 + zip.readUInt16LE(e.local + 26) + zip.readUInt16LE(e.local + 28);
    if (start + e.compressed > zip.length) fail(`${what}: its data lies outside the file`);
    const data = zip.subarray(start, start + e.compressed);
    let bytes: Buffer;
    try {
      // At most the declared size (+1 to see that it is more): a bomb stops here.
      bytes = e.method === 0 ? data : inflateRawSync(data, { maxOutputLength: Math.max(1, e.size + 1) });
    } catch {
      fail(`${what}: inflates past the ${e.size} bytes it declares, or is damaged`);
    }
    if (bytes!.length !== e.size) fail(`${what}: ${bytes!.length} bytes, not the ${e.size} it declares`);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, bytes!, { flag: 'wx' }); // never through something already there
  }
  return { files: list.filter((e) => !e.dir).length, bytes: total };
}
