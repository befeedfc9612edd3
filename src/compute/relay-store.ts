/**
 * Where two jobs of one run leave each other folders while both run: the agent's tools relay
 * (loop/relay) puts a request there in the propose job and a credentialed job puts the answer beside it.
 *
 * Two kinds: the run's own GitHub Actions artifacts (no inbound network between runners, nothing but the
 * job's runtime token, which every job of the run has anyway) and a folder (one machine, and the tests).
 * A name is published once and read as whole folders; what is read back is the other job's words, so a
 * reader copies plain files only (util/untrusted-files.ts) and within its own limits.
 */
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { type CopyOptions, copyPlainTree, errorMessage, notPlainFile, unzipBounded } from '../util/index.js';

export interface RelayStore {
  /** Where the folders are, for messages: "this run's artifacts", or the folder's path. */
  readonly where: string;
  /** Publish the files under `dir` (at least one) as `name`. A name that exists already is refused. */
  put(name: string, dir: string): Promise<void>;
  /** The names published so far that start with `prefix`. */
  list(prefix: string): Promise<string[]>;
  /**
   * Fetch `name`'s plain files into `dest` (created), within `limits`; links, devices and anything over
   * the limits are refused (a throw naming why).
   */
  get(name: string, dest: string, limits: CopyOptions): Promise<void>;
}

/** Artifact names: what GitHub accepts, and what the folder store can use as a folder name. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

function checkName(name: string): void {
  if (!NAME.test(name)) throw new Error(`relay: ${JSON.stringify(name)} is not a name the relay uses`);
}

/** Everything under `dir` but folders, as paths relative to it. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

/**
 * The files `put` publishes from `dir`: all of them plain files, or a throw naming what is not (a link,
 * a device, a hard link), as the folder store's copy refuses them.
 */
function plainFilesToPut(name: string, dir: string): string[] {
  const files = filesUnder(dir);
  if (files.length === 0) throw new Error(`relay: ${name}: nothing to publish in ${dir}`);
  const refused = files.flatMap((f) => {
    const why = notPlainFile(join(dir, f));
    return why ? [`${f}: ${why}`] : [];
  });
  if (refused.length > 0) {
    throw new Error(`relay: ${name} holds what the relay never takes: ${refused.slice(0, 3).join('; ')}`);
  }
  return files;
}

/** Copy what was fetched to `dest` as plain files within `limits`, or throw naming what was refused. */
function takePlain(from: string, dest: string, limits: CopyOptions, name: string): void {
  const copied = copyPlainTree(from, dest, limits);
  if (copied.refused.length > 0) {
    throw new Error(
      `relay: ${name} holds what the relay never takes: ${copied.refused.slice(0, 3).join('; ')}`,
    );
  }
}

/**
 * A folder as the store: `put` copies into a temporary name and renames it into place, so a reader
 * never sees half a folder. For one machine and the tests.
 */
export function folderRelayStore(root: string): RelayStore {
  mkdirSync(root, { recursive: true });
  return {
    where: root,
    async put(name, dir) {
      checkName(name);
      plainFilesToPut(name, dir);
      const partial = mkdtempSync(join(root, '.partial-'));
      takePlain(dir, partial, {}, name);
      try {
        // rename refuses a folder that exists and is not empty: a name is published once.
        renameSync(partial, join(root, name));
      } catch (e) {
        rmSync(partial, { recursive: true, force: true });
        throw new Error(`relay: ${name} is published already (${errorMessage(e)})`);
      }
    },
    async list(prefix) {
      return readdirSync(root, { withFileTypes: true })
        .filter((e) => e.isDirectory() && e.name.startsWith(prefix) && NAME.test(e.name))
        .map((e) => e.name)
        .sort();
    },
    async get(name, dest, limits) {
      checkName(name);
      const from = join(root, name);
      if (!statSync(from, { throwIfNoEntry: false })?.isDirectory())
        throw new Error(`relay: no ${name} in ${root}`);
      takePlain(from, dest, limits, name);
    },
  };
}

/** Limits an unpacked artifact holds to when the caller names none. */
const UNZIP_DEFAULTS = { maxTotalBytes: 2 * 1024 ** 3, maxFileBytes: 1024 ** 3, maxFiles: 100_000 };

/** Retention of the relay's artifacts: they matter only while the run's propose jobs last. */
const RETENTION_DAYS = 1;

/**
 * This run's GitHub Actions artifacts as the store (the runtime token and results URL every action step
 * gets; @actions/artifact, the client upload-artifact uses). GitHub refuses a name the run has already
 * (409); listing and download stay within this run.
 */
export function artifactRelayStore(): RelayStore {
  type Client = InstanceType<typeof import('@actions/artifact')['DefaultArtifactClient']>;
  let client: Client | undefined;
  const open = async (): Promise<Client> => {
    // Loaded when first used: the CLI never needs it.
    client ??= new (await import('@actions/artifact')).DefaultArtifactClient();
    return client;
  };
  const listAll = async () => (await (await open()).listArtifacts({ latest: true })).artifacts;
  return {
    where: "this run's artifacts",
    async put(name, dir) {
      checkName(name);
      // @actions/artifact zips a link's target (it follows links): a link is refused, as the folder
      // store's copy refuses it.
      const files = plainFilesToPut(name, dir);
      await (await open()).uploadArtifact(
        name,
        files.map((f) => join(dir, f)),
        dir,
        { retentionDays: RETENTION_DAYS },
      );
    },
    async list(prefix) {
      return (await listAll())
        .map((a) => a.name)
        .filter((n) => n.startsWith(prefix) && NAME.test(n))
        .sort();
    },
    async get(name, dest, limits) {
      checkName(name);
      const found = (await listAll()).find((a) => a.name === name);
      if (!found) throw new Error(`relay: no artifact ${name} in this run`);
      if (limits.maxTotalBytes !== undefined && found.size > limits.maxTotalBytes) {
        throw new Error(`relay: ${name} is ${found.size} bytes, over the ${limits.maxTotalBytes}-byte limit`);
      }
      // Downloaded as the zip it is, then unpacked within the limits before anything is inflated (the
      // client's own unpacking has none: a zip bomb would fill the disk first).
      const scratch = mkdtempSync(join(tmpdir(), 'hillclimb-relay-'));
      try {
        await (await open()).downloadArtifact(found.id, { path: scratch, skipDecompress: true });
        const [zip, ...more] = readdirSync(scratch);
        if (zip === undefined || more.length > 0)
          throw new Error(`relay: ${name} did not download as one file`);
        try {
          unzipBounded(join(scratch, zip), dest, { ...UNZIP_DEFAULTS, ...limits });
        } catch (e) {
          throw new Error(`relay: ${name} holds what the relay never takes: ${errorMessage(e)}`);
        }
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
    },
  };
}
