/** Store keys: slash-separated relative paths, checked once so no store can be led outside its root. */
import { HillclimbError } from '../util/index.js';

/** Throw unless `key` is a clean relative path: no empty, `.` or `..` segments, no backslash or control characters. */
export function assertKey(key: string): string {
  const problem = keyProblem(key, false);
  if (problem) throw new HillclimbError(`invalid store key ${JSON.stringify(key)}: ${problem}`);
  return key;
}

/** A prefix is a key or the empty string; a trailing `/` is allowed. */
export function assertPrefix(prefix: string): string {
  const problem = prefix === '' ? undefined : keyProblem(prefix.replace(/\/$/, ''), true);
  if (problem) throw new HillclimbError(`invalid store prefix ${JSON.stringify(prefix)}: ${problem}`);
  return prefix;
}

/** `prefix` + `/` + `rel`, without doubled slashes. */
export function joinKey(prefix: string, rel: string): string {
  const p = prefix.replace(/\/+$/, '');
  return p === '' ? rel : `${p}/${rel}`;
}

function keyProblem(key: string, isPrefix: boolean): string | undefined {
  if (key === '') return isPrefix ? undefined : 'empty';
  if (key.startsWith('/')) return 'must be relative (no leading /)';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
  if (/[\\\u0000-\u001f\u007f]/.test(key)) return 'backslashes and control characters are not allowed';
  const segments = key.split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..'))
    return 'empty, "." and ".." segments are not allowed';
  return undefined;
}
