// The JavaScript action relay-store.act.test.ts bundles (esbuild) and runs in two jobs of one act run, so
// that src/compute/relay-store.ts's artifactRelayStore() meets a real artifact service: act's. A
// JavaScript action, because that is what gets the job's ACTIONS_RUNTIME_TOKEN and ACTIONS_RESULTS_URL
// on GitHub (a `run:` step does not). INPUT_ROLE picks the job's part:
//
// - asker: puts a request, gets the answer; then puts the request's name again, puts a folder holding a
//   link, and gets a zip made here with a link entry in it;
// - answerer: waits for the request, gets it, checks it byte for byte and answers under another name.
//
// Each job prints one line `relay-store-result <JSON>` of what happened; the test asserts on it.
import { createHash } from 'node:crypto';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { DefaultArtifactClient } from '@actions/artifact';
import { artifactRelayStore } from '../../../src/compute/relay-store.js';

const P = 'hc-relay-test-';
const LIMITS = { maxTotalBytes: 64 * 1024 ** 2, maxFileBytes: 16 * 1024 ** 2, maxFiles: 100 };
const store = artifactRelayStore();
const scratch = mkdtempSync(join(tmpdir(), 'relay-store-action-'));
const started = Date.now();

/** A request folder both jobs can build alike: `variant` changes every file's bytes. */
function request(variant: number): string {
  const dir = join(scratch, `request-${variant}`);
  mkdirSync(join(dir, 'programs', 'base'), { recursive: true });
  writeFileSync(join(dir, 'request.json'), `${JSON.stringify({ variant })}\n`);
  // 300 KB that do not compress (xorshift), an empty file and a nested one.
  const bytes = Buffer.alloc(300_000);
  let x = 0x9e3779b9 ^ variant;
  for (let i = 0; i < bytes.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bytes[i] = x & 0xff;
  }
  writeFileSync(join(dir, 'programs', 'base', 'fwd.bin'), bytes);
  writeFileSync(join(dir, 'programs', 'base', 'empty'), '');
  writeFileSync(join(dir, 'programs', 'base', 'name with spaces.txt'), `variant ${variant}\n`);
  return dir;
}

/** Each file under `dir` (links and all, by lstat) as `path type size sha256`, sorted. */
function manifest(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isSymbolicLink()) out.push(`${relative(dir, p)} link -> ${readlinkSync(p)}`);
      else {
        const b = readFileSync(p);
        out.push(`${relative(dir, p)} file ${b.length} ${createHash('sha256').update(b).digest('hex')}`);
      }
    }
  };
  walk(dir);
  return out.sort();
}

async function waitFor(name: string): Promise<void> {
  const until = Date.now() + 120_000;
  while (!(await store.list(P)).includes(name)) {
    if (Date.now() > until) throw new Error(`no ${name} in 120 s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * act's artifact server lists a name from CreateArtifact on (it creates the empty zip then), while the
 * upload is still appending to it; GitHub lists an artifact once it is finalized. So each put is
 * followed by a marker `<name>-sent`, and a reader waits for the marker before it gets the name: under
 * act, a get between the two could unpack half a zip.
 */
async function send(name: string, dir: string): Promise<void> {
  await store.put(name, dir);
  const marker = join(scratch, `${name}-sent`);
  mkdirSync(marker);
  writeFileSync(join(marker, 'sent'), `${name}\n`);
  await store.put(`${name}-sent`, marker);
}

async function attempt(f: () => Promise<unknown>): Promise<string> {
  try {
    await f();
    return 'ok';
  } catch (e) {
    return `threw: ${e instanceof Error ? e.message : String(e)}`;
  }
}

// A zip by hand (stored entries) with a plain file and a symbolic link (unix mode 0120777 in the
// central directory's external attributes, the target as the entry's data), as `zip --symlinks` makes.
function zipWithLink(file: string): void {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc32 = (b: Buffer) => {
    let c = 0xffffffff;
    for (const byte of b) c = crcTable[(c ^ byte) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const entries = [
    { name: 'a.txt', data: Buffer.from('plain\n'), mode: 0o100644 },
    { name: 'link', data: Buffer.from('/etc/hostname'), mode: 0o120777 },
  ];
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name);
    const crc = crc32(e.data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(10, 4);
    local.writeUInt16LE(0x21, 12); // 1980-01-01
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(e.data.length, 18);
    local.writeUInt32LE(e.data.length, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4); // made by unix
    central.writeUInt16LE(10, 6);
    central.writeUInt16LE(0x21, 14);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(e.data.length, 20);
    central.writeUInt32LE(e.data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE((e.mode << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, e.data);
    centrals.push(central, name);
    offset += local.length + name.length + e.data.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  writeFileSync(file, Buffer.concat([...locals, cd, end]));
}

async function asker(): Promise<Record<string, unknown>> {
  const mine = request(1);
  await send(`${P}request`, mine);
  await waitFor(`${P}answer-sent`);
  const got = join(scratch, 'answer');
  await store.get(`${P}answer`, got, LIMITS);
  const answer = JSON.parse(readFileSync(join(got, 'answer.json'), 'utf8')) as { manifest: string[] };
  const answered = Date.now();

  // The same name again, other bytes: what the service does with it, and what a get returns after.
  const second = await attempt(() => store.put(`${P}request`, request(2)));
  const again = join(scratch, 'again');
  await store.get(`${P}request`, again, LIMITS);
  const afterSecond = [1, 2].find(
    (v) => JSON.stringify(manifest(again)) === JSON.stringify(manifest(request(v))),
  );

  // A folder holding a link, put.
  const linked = join(scratch, 'linked');
  mkdirSync(linked);
  writeFileSync(join(linked, 'a.txt'), 'plain\n');
  symlinkSync('/etc/hostname', join(linked, 'link'));
  const putLink = await attempt(() => store.put(`${P}with-link`, linked));
  let putLinkGot: string[] | undefined;
  if (putLink === 'ok') {
    const g = join(scratch, 'with-link');
    await store.get(`${P}with-link`, g, LIMITS);
    putLinkGot = manifest(g);
  }

  // A zip that holds a link entry, uploaded as it is (skipArchive: the artifact is the file, its name
  // the file's name) and got through the store.
  const zipName = `${P}zip-with-link.zip`;
  const zip = join(scratch, zipName);
  zipWithLink(zip);
  await new DefaultArtifactClient().uploadArtifact(zipName, [zip], scratch, { skipArchive: true });
  const z = join(scratch, 'zip-with-link');
  const getZipLink = await attempt(() => store.get(zipName, z, LIMITS));
  let zipLinkGot: string[] | undefined;
  try {
    zipLinkGot = manifest(z);
  } catch {}
  const linkType = (() => {
    try {
      const st = lstatSync(join(z, 'link'));
      return st.isSymbolicLink()
        ? 'link'
        : st.isFile()
          ? `file: ${readFileSync(join(z, 'link'), 'utf8')}`
          : 'other';
    } catch {
      return 'absent';
    }
  })();

  return {
    roundTrip: JSON.stringify(answer.manifest) === JSON.stringify(manifest(mine)),
    answered,
    second,
    afterSecond,
    putLink,
    putLinkGot,
    getZipLink,
    zipLinkGot,
    linkType,
  };
}

async function answerer(): Promise<Record<string, unknown>> {
  await waitFor(`${P}request-sent`);
  const listed = await store.list(P);
  const got = join(scratch, 'request');
  await store.get(`${P}request`, got, LIMITS);
  const expected = request(1);
  const identical = JSON.stringify(manifest(got)) === JSON.stringify(manifest(expected));
  const out = join(scratch, 'out');
  mkdirSync(out);
  writeFileSync(join(out, 'answer.json'), `${JSON.stringify({ manifest: manifest(got) })}\n`);
  await send(`${P}answer`, out);
  return { listed, identical, files: manifest(got).length, answered: Date.now() };
}

const role = process.env.INPUT_ROLE;
try {
  const result = role === 'asker' ? await asker() : role === 'answerer' ? await answerer() : undefined;
  if (!result) throw new Error(`role ${role}?`);
  console.log(`relay-store-result ${JSON.stringify({ role, started, ended: Date.now(), ...result })}`);
} catch (e) {
  console.log(
    `::error::${role}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`.replaceAll('\n', '%0A'),
  );
  process.exitCode = 1;
}
