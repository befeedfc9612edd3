/** Local file plumbing shared by the stores: walking a folder and copying a file atomically. */
import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** Marks in-flight copies; list() skips them. */
export const TEMP_MARKER = '.hc-tmp-';

/** Regular files below `dir` (symlinks followed) as slash-separated relative paths, sorted. */
export function walkFiles(dir: string): string[] {
  const out: string[] = [];
  const visit = (abs: string, rel: string): void => {
    for (const name of readdirSync(abs).sort()) {
      const childAbs = join(abs, name);
      const childRel = rel === '' ? name : `${rel}/${name}`;
      const st = statSync(childAbs);
      if (st.isDirectory()) visit(childAbs, childRel);
      else if (st.isFile() && !name.includes(TEMP_MARKER)) out.push(childRel);
    }
  };
  visit(dir, '');
  return out.sort();
}

/** Copy `src` to `dest` through a temp file in the destination folder, so `dest` is never torn. */
export function copyFileAtomic(src: string, dest: string): void {
  mkdirSync(dirname(dest), { recursive: true });
  const tmp = join(dirname(dest), `${basename(dest)}${TEMP_MARKER}${process.pid}-${randomUUID()}`);
  try {
    copyFileSync(src, tmp);
    renameSync(tmp, dest);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}
