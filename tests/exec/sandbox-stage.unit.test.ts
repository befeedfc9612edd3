// The folder every sandbox's init mounts its new root on: one per user, reused, and taken only when it
// is safely this user's.
import { chmodSync, chownSync, mkdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sharedStageDir } from '../../src/exec/sandbox.js';
import { tempDir } from '../helpers/paths.js';

const uid = process.getuid!();
const name = `hillclimb-sandbox-${uid}`;

describe('sharedStageDir', () => {
  const t = tempDir('hc-stage-');
  afterAll(t.cleanup);
  const tmp = (case_: string) => {
    const dir = join(t.dir, case_);
    mkdirSync(dir);
    return dir;
  };

  it('makes the user’s folder, closed to others, and hands the same one to the next process', () => {
    const dir = tmp('fresh');
    const first = sharedStageDir(dir);
    expect(first).toBe(join(dir, name));
    expect(statSync(first!).mode & 0o077).toBe(0);
    expect(sharedStageDir(dir)).toBe(first);
  });

  it('refuses a link, a file, or a folder others can write in its place', () => {
    const linked = tmp('link');
    mkdirSync(join(linked, 'elsewhere'));
    symlinkSync(join(linked, 'elsewhere'), join(linked, name));
    expect(sharedStageDir(linked)).toBeUndefined();

    const file = tmp('file');
    writeFileSync(join(file, name), '');
    expect(sharedStageDir(file)).toBeUndefined();

    const open = tmp('open');
    mkdirSync(join(open, name));
    chmodSync(join(open, name), 0o777);
    expect(sharedStageDir(open)).toBeUndefined();
  });

  it('takes the temp folder by its real path, and none where others could replace the folder', () => {
    const real = tmp('real');
    symlinkSync(real, join(t.dir, 'through-a-link'));
    expect(sharedStageDir(join(t.dir, 'through-a-link'))).toBe(join(real, name));

    const shared = tmp('shared');
    chmodSync(shared, 0o777);
    expect(sharedStageDir(shared)).toBeUndefined();
    chmodSync(shared, 0o1777); // sticky, as /tmp: only its owner may move our folder
    expect(sharedStageDir(shared)).toBe(join(shared, name));
  });

  // Handing a folder to another user takes root; as anyone else the uid checks are not reached here.
  it.skipIf(uid !== 0)(
    'refuses a folder, or a temp folder, that another user owns (needs root to chown)',
    () => {
      const theirs = tmp('theirs');
      mkdirSync(join(theirs, name), { mode: 0o700 });
      chownSync(join(theirs, name), 65534, 65534);
      expect(sharedStageDir(theirs)).toBeUndefined();

      const theirTmp = tmp('their-tmp');
      chownSync(theirTmp, 65534, 65534);
      expect(sharedStageDir(theirTmp)).toBeUndefined();
    },
  );

  it('says nothing when the temp folder itself is missing', () => {
    expect(sharedStageDir(join(t.dir, 'no-such-folder'))).toBeUndefined();
  });
});
