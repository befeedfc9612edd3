import { describe, expect, it } from 'vitest';
import { perfettoLink, perfettoLinkFor } from '../../src/store/perfetto.js';
import { LocalStore } from '../../src/store/stores/local.js';

const TRACE = 'https://huggingface.co/datasets/org/ev/resolve/main/runs/r1/i003/trace/host.trace.json.gz';

describe('perfettoLink', () => {
  it('links a public HTTPS trace with the URL encoded into the hash route', () => {
    const link = perfettoLink(TRACE, { publiclyReadable: true });
    expect(link).toEqual({ ok: true, url: `https://ui.perfetto.dev/#!/?url=${encodeURIComponent(TRACE)}` });
    if (link.ok) expect(decodeURIComponent(link.url.split('?url=')[1]!)).toBe(TRACE);
  });

  it('explains why there is no link for private, local or plain-HTTP traces', () => {
    expect(perfettoLink(TRACE, { publiclyReadable: false })).toMatchObject({ ok: false, reason: /private/ });
    expect(perfettoLink('file:///tmp/t.json.gz', { publiclyReadable: false })).toMatchObject({
      ok: false,
      reason: /drop the trace file/,
    });
    expect(perfettoLink('http://example.com/t.json', { publiclyReadable: true })).toMatchObject({
      ok: false,
      reason: /HTTPS/,
    });
    expect(perfettoLink('not a url', { publiclyReadable: true })).toMatchObject({ ok: false });
  });

  it('judges a store by its visibility', () => {
    expect(perfettoLinkFor(new LocalStore({ dir: '/tmp/store' }), 'a/t.json.gz')).toMatchObject({
      ok: false,
    });
  });
});
