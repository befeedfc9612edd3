import { describe, expect, it } from 'vitest';
import type { CommentStamp } from '../../src/forge/forge.js';
import { BODY_CAP_CHARS } from '../../src/forge/limits.js';
import {
  compareStamps,
  composeStickyBody,
  decodeStamp,
  encodeStamp,
  hasStickyMarker,
  isNewer,
  mayOverwrite,
  stickyMarker,
  stickyVisibleText,
} from '../../src/forge/sticky.js';

const STAMP: CommentStamp = {
  runStartedAt: '2026-11-21T10:00:00.000Z',
  runId: '1234',
  iteration: 3,
  commit: 'a'.repeat(40),
};

describe('stickyMarker', () => {
  it('is a hidden HTML comment naming the key', () => {
    expect(stickyMarker('mfu')).toBe('<!-- hillclimb:sticky:mfu -->');
  });

  it('refuses keys that could break out of the comment or are empty', () => {
    for (const bad of ['', 'a--b', 'a>b', 'has space', '-lead', 'x'.repeat(65)]) {
      expect(() => stickyMarker(bad), bad).toThrow(/sticky comment key/);
    }
    expect(stickyMarker('gdn.mfu-delta_v2')).toContain('gdn.mfu-delta_v2');
  });

  it('does not match a key that merely starts with another key', () => {
    const body = composeStickyBody('mfu2', 'x', STAMP).body;
    expect(hasStickyMarker(body, 'mfu2')).toBe(true);
    expect(hasStickyMarker(body, 'mfu')).toBe(false);
  });
});

describe('stamp encoding', () => {
  it('round-trips through the body', () => {
    const body = `table\n\n${stickyMarker('k')}\n${encodeStamp(STAMP)}`;
    expect(decodeStamp(body)).toEqual(STAMP);
  });

  it('escapes text that would end the HTML comment early', () => {
    const tricky = { ...STAMP, runId: 'run-->evil<!--', commit: 'x--y' };
    const encoded = encodeStamp(tricky);
    const inner = encoded.slice('<!-- '.length, -' -->'.length);
    expect(inner).not.toContain('-->');
    expect(inner).not.toContain('--');
    expect(inner).not.toContain('>');
    expect(decodeStamp(encoded)).toEqual(tricky);
  });

  it('ignores missing, malformed and invalid stamps', () => {
    expect(decodeStamp('no stamp here')).toBeUndefined();
    expect(decodeStamp('<!-- hillclimb:stamp {not json} -->')).toBeUndefined();
    expect(decodeStamp('<!-- hillclimb:stamp {"runId":"1"} -->')).toBeUndefined();
    const badTime = JSON.stringify({ ...STAMP, runStartedAt: 'yesterday' });
    expect(decodeStamp(`<!-- hillclimb:stamp ${badTime} -->`)).toBeUndefined();
  });

  it('refuses to encode an invalid stamp', () => {
    expect(() => encodeStamp({ ...STAMP, iteration: -1 })).toThrow(/iteration/);
    expect(() => encodeStamp({ ...STAMP, runStartedAt: 'soon' })).toThrow(/runStartedAt/);
    expect(() => encodeStamp({ ...STAMP, runId: '' })).toThrow(/runId/);
  });

  it('reads the last stamp when a body quotes an older one', () => {
    const older = { ...STAMP, iteration: 1 };
    const body = `> quoted\n> ${encodeStamp(older)}\n\n${encodeStamp(STAMP)}`;
    expect(decodeStamp(body)).toEqual(STAMP);
  });
});

describe('stamp order', () => {
  const at = (runStartedAt: string, iteration: number, runId = '1'): CommentStamp => ({
    runStartedAt,
    iteration,
    runId,
    commit: 'c',
  });

  it('a later run start is newer, whatever the iteration', () => {
    expect(isNewer(at('2026-11-21T11:00:00Z', 0), at('2026-11-21T10:00:00Z', 9))).toBe(true);
    expect(isNewer(at('2026-11-21T10:00:00Z', 9), at('2026-11-21T11:00:00Z', 0))).toBe(false);
  });

  it('compares instants, not strings (time zones and precision)', () => {
    expect(compareStamps(at('2026-11-21T12:00:00+02:00', 1), at('2026-11-21T10:00:00.000Z', 1))).toBe(0);
    expect(isNewer(at('2026-11-21T10:00:00.001Z', 1), at('2026-11-21T10:00:00Z', 1))).toBe(true);
  });

  it('within a run, a later iteration is newer', () => {
    expect(isNewer(at('2026-11-21T10:00:00Z', 4), at('2026-11-21T10:00:00Z', 3))).toBe(true);
  });

  it('breaks ties between distinct runs by run id, numerically when both are numbers', () => {
    expect(isNewer(at('2026-11-21T10:00:00Z', 1, '10'), at('2026-11-21T10:00:00Z', 1, '9'))).toBe(true);
    expect(isNewer(at('2026-11-21T10:00:00Z', 1, 'b'), at('2026-11-21T10:00:00Z', 1, 'a'))).toBe(true);
    expect(compareStamps(at('2026-11-21T10:00:00Z', 1, '9'), at('2026-11-21T10:00:00Z', 1, '10'))).toBe(-1);
  });

  it('the same run and iteration is a tie that may refresh its own comment', () => {
    const a = at('2026-11-21T10:00:00Z', 2, '7');
    expect(compareStamps(a, { ...a, commit: 'other' })).toBe(0);
    expect(isNewer(a, a)).toBe(false);
    expect(mayOverwrite(a, a)).toBe(true);
    expect(mayOverwrite(a, undefined)).toBe(true);
    expect(mayOverwrite(at('2026-11-21T10:00:00Z', 1, '7'), a)).toBe(false);
  });
});

describe('composeStickyBody', () => {
  it('appends marker and stamp after the visible text', () => {
    const { body, truncated } = composeStickyBody('mfu', 'MFU +3.1%\n', STAMP);
    expect(truncated).toBe(false);
    expect(body.startsWith('MFU +3.1%\n\n<!-- hillclimb:sticky:mfu -->\n<!-- hillclimb:stamp ')).toBe(true);
    expect(stickyVisibleText(body)).toBe('MFU +3.1%');
    expect(decodeStamp(body)).toEqual(STAMP);
  });

  it('keeps the whole comment under the cap with marker and stamp intact', () => {
    const visible = Array.from({ length: 5000 }, (_, i) => `| row ${i} | ${'x'.repeat(20)} |`).join('\n');
    const { body, truncated, originalChars } = composeStickyBody('mfu', visible, STAMP);
    expect(truncated).toBe(true);
    expect(originalChars).toBe(visible.length);
    expect(body.length).toBeLessThanOrEqual(BODY_CAP_CHARS);
    expect(hasStickyMarker(body, 'mfu')).toBe(true);
    expect(decodeStamp(body)).toEqual(STAMP);
    expect(body).toContain('Truncated by hillclimb');
  });
});
