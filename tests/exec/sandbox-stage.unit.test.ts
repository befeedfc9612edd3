// The folder every sandbox's init mounts its new root on: one per user, reused, and taken only when it
// is safely this user's.
import { chmodSync, mkdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
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

  it('says nothing when the temp folder itself is missing', () => {
    expect(sharedStageDir(join(t.dir, 'no-such-folder'))).toBeUndefined();
  });
});
