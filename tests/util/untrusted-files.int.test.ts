// Reading files untrusted code could have shaped: plain files only, never through a link.
import { linkSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { copyPlainTree, notPlainFile, readPlainFile } from '../../src/util/untrusted-files.js';
import { tempDir } from '../helpers/paths.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});
function scratch(): string {
  const t = tempDir('hc-untrusted-');
  cleanups.push(t.cleanup);
  return t.dir;
}

describe('copyPlainTree', () => {
  it('copies plain files and folders, and leaves links, hard links and odd names behind', () => {
    const dir = scratch();
    const src = join(dir, 'src');
    mkdirSync(join(src, 'sub'), { recursive: true });
    writeFileSync(join(src, 'evidence.json'), '{}');
    writeFileSync(join(src, 'sub', 'a.txt'), 'a');
    writeFileSync(join(dir, 'secret'), 'token');
    symlinkSync('/proc/self/environ', join(src, 'env-link'));
    linkSync(join(dir, 'secret'), join(src, 'hard'));
    writeFileSync(join(src, 'two\nlines'), 'x');
    const r = copyPlainTree(src, join(dir, 'dest'));
    expect(r.copied.sort()).toEqual(['evidence.json', 'sub/a.txt']);
    expect(r.refused.sort()).toEqual([
      '"two\\nlines": a control character in its name',
      'env-link: a symbolic link',
      'hard: a hard link',
    ]);
    expect(readFileSync(join(dir, 'dest', 'sub', 'a.txt'), 'utf8')).toBe('a');
  });
});

describe('readPlainFile', () => {
  it('reads a plain file and refuses a link or a hard link, naming the file', () => {
    const dir = scratch();
    writeFileSync(join(dir, 'f'), 'data');
    symlinkSync(join(dir, 'f'), join(dir, 'l'));
    expect(readPlainFile(join(dir, 'f')).toString()).toBe('data');
    expect(() => readPlainFile(join(dir, 'l'))).toThrow(/l: a symbolic link, refused/);
    linkSync(join(dir, 'f'), join(dir, 'h'));
    expect(() => readPlainFile(join(dir, 'h'))).toThrow(/h: a hard link, refused/);
    expect(notPlainFile(join(dir, 'missing'))).toBe('missing');
  });
});
