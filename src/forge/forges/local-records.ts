/**
 * The local forge's records on disk, under `<state_dir>/forge/`:
 *
 *     lock                      held while records change (src/util/lock.ts)
 *     counters.json             next PR number and next comment id
 *     pulls/<n>.json            one PR: number, branch, base, title, body, draft, state, labels, times
 *     comments/<n>/<id>.json    one comment on PR n: id, author, body, minimized, times
 *
 * Every file is replaced atomically (temp file + rename), so a reader never sees a torn record;
 * writers hold the lock for the whole read-modify-write.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { readJson, writeJsonAtomic } from '../../util/index.js';

export const LOCAL_FORGE_DIR = 'forge';
const RECORD_VERSION = 1;

export interface LocalPullRecord {
  version: typeof RECORD_VERSION;
  number: number;
  branch: string;
  base: string;
  title: string;
  body: string;
  draft: boolean;
  state: 'open' | 'closed' | 'merged';
  labels: string[];
  createdAt: string;
  updatedAt: string;
  closedAt?: string;
}

export interface LocalCommentRecord {
  version: typeof RECORD_VERSION;
  id: number;
  pull: number;
  author: string;
  body: string;
  /** Set by hand to hide a comment, as GitHub's "hide" does; hidden comments are never updated. */
  minimized: boolean;
  createdAt: string;
  updatedAt: string;
}

interface Counters {
  nextPull: number;
  nextComment: number;
}

/** Paths and file IO for one local forge directory. Callers hold the lock around changes. */
export class LocalRecords {
  readonly dir: string;

  constructor(stateDir: string) {
    this.dir = join(stateDir, LOCAL_FORGE_DIR);
  }

  get lockFile(): string {
    return join(this.dir, 'lock');
  }

  pullFile(n: number): string {
    return join(this.dir, 'pulls', `${n}.json`);
  }

  pullUrl(n: number): string {
    return pathToFileURL(this.pullFile(n)).href;
  }

  commentFile(pull: number, id: number): string {
    return join(this.dir, 'comments', String(pull), `${id}.json`);
  }

  pulls(): LocalPullRecord[] {
    return numberedJson<LocalPullRecord>(join(this.dir, 'pulls'));
  }

  pull(n: number): LocalPullRecord | undefined {
    const file = this.pullFile(n);
    return existsSync(file) ? readJson<LocalPullRecord>(file) : undefined;
  }

  writePull(record: LocalPullRecord): void {
    writeJsonAtomic(this.pullFile(record.number), record);
  }

  /** Comments on PR `n`, oldest (lowest id) first. */
  comments(n: number): LocalCommentRecord[] {
    return numberedJson<LocalCommentRecord>(join(this.dir, 'comments', String(n)));
  }

  writeComment(record: LocalCommentRecord): void {
    writeJsonAtomic(this.commentFile(record.pull, record.id), record);
  }

  deleteComment(pull: number, id: number): void {
    rmSync(this.commentFile(pull, id), { force: true });
  }

  /** Take the next PR number or comment id. */
  take(counter: keyof Counters): number {
    const file = join(this.dir, 'counters.json');
    const counters: Counters = existsSync(file) ? readJson<Counters>(file) : { nextPull: 1, nextComment: 1 };
    const value = counters[counter];
    writeJsonAtomic(file, { ...counters, [counter]: value + 1 });
    return value;
  }

  newPull(fields: Omit<LocalPullRecord, 'version'>): LocalPullRecord {
    return { version: RECORD_VERSION, ...fields };
  }

  newComment(fields: Omit<LocalCommentRecord, 'version'>): LocalCommentRecord {
    return { version: RECORD_VERSION, ...fields };
  }
}

/** `<n>.json` files in a folder, parsed, in numeric order. Temp files from atomic writes are skipped. */
function numberedJson<T>(dir: string): T[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => /^\d+\.json$/.test(name))
    .map((name) => Number.parseInt(name, 10))
    .sort((a, b) => a - b)
    .flatMap((n) => {
      const file = join(dir, `${n}.json`);
      try {
        return [readJson<T>(file)];
      } catch (e) {
        // Deleted by a writer between listing and reading (readers do not take the lock).
        if (!existsSync(file)) return [];
        throw e;
      }
    });
}
