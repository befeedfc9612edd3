import { describe, expect, it } from 'vitest';
import { changeFingerprint } from '../../src/workspace/index.js';

// Unified diffs as `git diff --unified=0` prints them.
const diff = (file: string, hunks: string) =>
  `diff --git a/${file} b/${file}\nindex 1111111..2222222 100644\n--- a/${file}\n+++ b/${file}\n${hunks}`;

const ONE_PASS = diff('src/k.py', '@@ -7 +7 @@\n-PASSES = 8\n+PASSES = 1\n');

describe('changeFingerprint', () => {
  it('is the same for the same edit at other lines, with other whitespace, or in other hunks', () => {
    const fp = changeFingerprint(ONE_PASS);
    expect(fp).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(changeFingerprint(diff('src/k.py', '@@ -40 +40 @@\n-PASSES = 8\n+PASSES  =  1\n'))).toBe(fp);
    const two = diff('src/k.py', '@@ -3 +3 @@\n-a = 1\n+a = 2\n@@ -9 +9 @@\n-b = 1\n+b = 2\n');
    const twoElsewhere = diff('src/k.py', '@@ -30 +30 @@\n-a = 1\n+a = 2\n@@ -90 +90 @@\n-b = 1\n+b = 2\n');
    expect(changeFingerprint(twoElsewhere)).toBe(changeFingerprint(two));
  });

  it('ignores blank lines; keeps indentation and order, which change what Python does', () => {
    const withBlank = diff('src/k.py', '@@ -7 +7,2 @@\n-PASSES = 8\n+PASSES = 1\n+\n');
    expect(changeFingerprint(withBlank)).toBe(changeFingerprint(ONE_PASS));
    // The honest edit plus a re-indent (a line moved out of its loop) is another change.
    const reindented = diff('src/k.py', '@@ -7,2 +7,2 @@\n-PASSES = 8\n-    x = 1\n+PASSES = 1\n+x = 1\n');
    expect(changeFingerprint(reindented)).not.toBe(changeFingerprint(ONE_PASS));
    const swapped = diff('src/k.py', '@@ -3,2 +3,2 @@\n-a = 1\n-b = 2\n+b = 2\n+a = 1\n');
    expect(changeFingerprint(swapped)).toMatch(/^sha256:/);
    expect(changeFingerprint(diff('src/k.py', '@@ -2 +2 @@\n-x = 1\n+x = 1   \n'))).toBeUndefined();
  });

  it('differs for another edit, another file, or the reverse edit', () => {
    const fp = changeFingerprint(ONE_PASS);
    expect(changeFingerprint(diff('src/k.py', '@@ -7 +7 @@\n-PASSES = 8\n+PASSES = 2\n'))).not.toBe(fp);
    expect(changeFingerprint(diff('src/j.py', '@@ -7 +7 @@\n-PASSES = 8\n+PASSES = 1\n'))).not.toBe(fp);
    expect(changeFingerprint(diff('src/k.py', '@@ -7 +7 @@\n-PASSES = 1\n+PASSES = 8\n'))).not.toBe(fp);
  });
});

describe('changeFingerprint of a binary file', () => {
  const blob = (c: string) => c.repeat(40);
  const binary = (file: string, from: string, to: string) =>
    `diff --git a/${file} b/${file}\nindex ${from}..${to} 100644\nBinary files a/${file} and b/${file} differ\n`;

  it('is its blobs before and after, not its path alone', () => {
    const fp = changeFingerprint(binary('w.bin', blob('a'), blob('b')));
    expect(fp).toMatch(/^sha256:/);
    expect(changeFingerprint(binary('w.bin', blob('a'), blob('c')))).not.toBe(fp);
    expect(changeFingerprint(binary('w.bin', blob('a'), blob('b')))).toBe(fp);
    expect(changeFingerprint(binary('v.bin', blob('a'), blob('b')))).not.toBe(fp);
  });
});
