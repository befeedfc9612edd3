/**
 * Where evidence lives beyond the run: the `Store` interface. Implementations in ./stores/ (`local`
 * directory, `hf` Hugging Face dataset repo), chosen by `store.kind` through ./factory.ts.
 * Keys are slash-separated relative paths such as `runs/<run>/i003/trace/…`.
 */

export interface StoredObject {
  key: string;
  /** A URL a reviewer can open (file:// for the local store, https for hf). */
  url: string;
  bytes: number;
}

export interface Store {
  readonly name: string;
  /**
   * True when `url(key)` can be fetched by anyone's browser without credentials (a public HF dataset),
   * which is what a Perfetto UI deep link needs (see ./perfetto.ts). False for file:// URLs and
   * private repositories.
   */
  readonly publiclyReadable: boolean;
  /** Store one local file under `key`; overwrites. */
  put(key: string, file: string): Promise<StoredObject>;
  /** Store every file below a local directory under `prefix/…`, in one operation where the backend allows. */
  putDir(prefix: string, dir: string): Promise<StoredObject[]>;
  /** Download `key` to the local path `dest`. Throws a HillclimbError naming the key when absent. */
  get(key: string, dest: string): Promise<void>;
  /** Keys under a prefix, sorted. */
  list(prefix: string): Promise<string[]>;
  /** The URL of `key` without checking it exists. */
  url(key: string): string;
}
