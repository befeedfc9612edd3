import { describe, expect, it } from 'vitest';
import {
  BODY_CAP_CHARS,
  capBody,
  capTitle,
  GITHUB_BODY_MAX_CHARS,
  GITHUB_TITLE_MAX_CHARS,
} from '../../src/forge/limits.js';

describe('capBody', () => {
  it("caps safely below GitHub's limit", () => {
    expect(BODY_CAP_CHARS).toBeLessThan(GITHUB_BODY_MAX_CHARS);
    expect(GITHUB_BODY_MAX_CHARS).toBe(65_536);
  });

  it('leaves a text that fits alone', () => {
    expect(capBody('short\n')).toEqual({ text: 'short\n', truncated: false, originalChars: 6 });
    const exact = 'y'.repeat(BODY_CAP_CHARS);
    expect(capBody(exact).truncated).toBe(false);
  });

  it('cuts on a line boundary, appends the pointer note and reports it', () => {
    const lines = Array.from(
      { length: 10_000 },
      (_, i) => `line ${String(i).padStart(5, '0')} ${'z'.repeat(10)}`,
    );
    const text = lines.join('\n');
    const r = capBody(text);
    expect(r.truncated).toBe(true);
    expect(r.originalChars).toBe(text.length);
    expect(r.text.length).toBeLessThanOrEqual(BODY_CAP_CHARS);
    const [kept, note] = r.text.split('\n\n---\n');
    const known = new Set(lines);
    expect(kept!.split('\n').every((l) => known.has(l))).toBe(true);
    expect(note).toMatch(/Truncated by hillclimb.*job summary and the evidence bundle/s);
    expect(note).toContain(text.length.toLocaleString('en-US'));
  });

  it('closes a code fence left open by the cut', () => {
    const text = `intro\n\`\`\`\n${'code line\n'.repeat(2000)}\`\`\`\n`;
    const r = capBody(text, 5_000);
    expect(r.truncated).toBe(true);
    expect(r.text.length).toBeLessThanOrEqual(5_000);
    const fences = r.text.split('\n').filter((l) => l.startsWith('```')).length;
    expect(fences % 2).toBe(0);
  });

  it('never splits a surrogate pair when there is no line break to cut at', () => {
    const text = '😀'.repeat(10_000);
    const r = capBody(text, 1_001);
    const kept = r.text.split('\n\n---\n')[0]!;
    expect(kept.length % 2).toBe(0);
    expect(kept).toBe('😀'.repeat(kept.length / 2));
  });
});

describe('capTitle', () => {
  it("keeps one line within GitHub's title limit", () => {
    expect(capTitle('gdn: fuse\n gate').text).toBe('gdn: fuse gate');
    const r = capTitle('t'.repeat(400));
    expect(r.truncated).toBe(true);
    expect(r.text.length).toBe(GITHUB_TITLE_MAX_CHARS);
    expect(r.text.endsWith('…')).toBe(true);
  });
});
