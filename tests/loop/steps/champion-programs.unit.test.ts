// The hand-over of a champion's kept programs in CI (src/loop/steps/champion-programs.ts): the setup
// job fetches them from the store and outputs their digest; the measuring job installs the artifact's
// copy only when it has that digest. A changed, added or removed file is not believed.

import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { importKeptPrograms, keptDigest } from '../../../src/loop/steps/champion-programs.js';
import { memoryLogger } from '../../../src/util/log.js';
import { tempDir } from '../../helpers/paths.js';

const KEY = 'a1b2c3d4e5f6a1b2c3d4e5f6';
const RECORD = {
  tree: 't'.repeat(40),
  platform: 'cpu',
  versions: { jax: '0.10.2' },
  sha256: { 'fwd@x': 'f'.repeat(64) },
};

function handover(dir: string): string {
  mkdirSync(join(dir, KEY), { recursive: true });
  writeFileSync(join(dir, KEY, 'manifest.json'), '{"schema": "hillclimb.programs/v1"}\n');
  writeFileSync(join(dir, KEY, 'fwd_x.jaxexport'), 'program bytes');
  writeFileSync(join(dir, KEY, 'kept.json'), JSON.stringify(RECORD));
  return dir;
}

describe('importKeptPrograms', () => {
  const t = tempDir('hc-kept-');
  afterAll(t.cleanup);

  it('installs the programs under their key, noted as stored, with their record', () => {
    const from = handover(join(t.dir, 'ok'));
    const state = join(t.dir, 'state-ok');
    const log = memoryLogger();
    expect(importKeptPrograms(state, log, from, keptDigest(from))).toEqual([KEY]);
    const dir = join(state, 'cache', 'programs', KEY);
    expect(readFileSync(join(dir, 'fwd_x.jaxexport'), 'utf8')).toBe('program bytes');
    expect(existsSync(join(dir, 'kept.json'))).toBe(false); // programs only in the folder
    expect(readFileSync(`${dir}.source`, 'utf8')).toBe('stored');
    expect(JSON.parse(readFileSync(`${dir}.kept.json`, 'utf8'))).toEqual(RECORD);
  });

  it.each([
    ['a program changed', (d: string) => writeFileSync(join(d, KEY, 'fwd_x.jaxexport'), 'slower program')],
    ['a file added', (d: string) => writeFileSync(join(d, KEY, 'extra.jaxexport'), 'x')],
    ['the record changed', (d: string) => writeFileSync(join(d, KEY, 'kept.json'), '{}')],
  ])('believes nothing when %s after the digest was taken', (name, change) => {
    const from = handover(join(t.dir, name.replaceAll(' ', '-')));
    const digest = keptDigest(from);
    change(from);
    const state = join(t.dir, `state-${name.replaceAll(' ', '-')}`);
    const log = memoryLogger();
    expect(importKeptPrograms(state, log, from, digest)).toEqual([]);
    expect(existsSync(join(state, 'cache', 'programs', KEY))).toBe(false);
    expect(log.lines.join('\n')).toMatch(
      /are not the ones the setup job fetched .*it will be exported again/,
    );
  });

  it('says so when the artifact never arrived', () => {
    const log = memoryLogger();
    expect(importKeptPrograms(join(t.dir, 's'), log, join(t.dir, 'missing'), 'd'.repeat(64))).toEqual([]);
    expect(log.lines.join('\n')).toContain('were not handed over');
  });
});
