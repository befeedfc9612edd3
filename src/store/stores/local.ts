/**
 * The `local` store: a folder (by default `<state_dir>/store`) holding each key as a file at the same
 * relative path. Writes go through a temp file and a rename, so a reader sees a whole file or none;
 * URLs are file:// (openable on this machine, not by a browser elsewhere).
 */
import { existsSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { HillclimbError } from '../../util/index.js';
import { assertKey, assertPrefix, joinKey } from '../keys.js';
import { copyFileAtomic, walkFiles } from '../local-files.js';
import type { Store, StoredObject } from '../store.js';

export interface LocalStoreOptions {
  /** The folder that holds the objects. Created on first write. */
  dir: string;
}

export class LocalStore implements Store {
  readonly name = 'local';
  readonly publiclyReadable = false;
  readonly dir: string;

  constructor(opts: LocalStoreOptions) {
    this.dir = opts.dir;
  }

  async put(key: string, file: string): Promise<StoredObject> {
    assertKey(key);
    if (!isFile(file)) throw new HillclimbError(`cannot store ${file} as ${key}: not a file`);
    copyFileAtomic(file, this.path(key));
    return { key, url: this.url(key), bytes: statSync(file).size };
  }

  async putDir(prefix: string, dir: string): Promise<StoredObject[]> {
    assertPrefix(prefix);
    if (!existsSync(dir) || !statSync(dir).isDirectory()) {
      throw new HillclimbError(`cannot store ${dir} under ${prefix}: not a folder`);
    }
    const stored: StoredObject[] = [];
    for (const rel of walkFiles(dir)) stored.push(await this.put(joinKey(prefix, rel), join(dir, rel)));
    return stored;
  }

  async get(key: string, dest: string): Promise<void> {
    assertKey(key);
    const src = this.path(key);
    if (!isFile(src)) throw new HillclimbError(`no object ${key} in the local store (${this.dir})`);
    copyFileAtomic(src, dest);
  }

  async list(prefix: string): Promise<string[]> {
    assertPrefix(prefix);
    if (!existsSync(this.dir)) return [];
    return walkFiles(this.dir).filter((k) => k.startsWith(prefix));
  }

  url(key: string): string {
    return pathToFileURL(this.path(assertKey(key))).href;
  }

  private path(key: string): string {
    const p = join(this.dir, key);
    // assertKey already forbids "..", this keeps the invariant visible.
    if (relative(this.dir, p).startsWith('..'))
      throw new HillclimbError(`store key escapes the store: ${key}`);
    return p;
  }
}

function isFile(path: string): boolean {
  return existsSync(path) && statSync(path).isFile();
}
