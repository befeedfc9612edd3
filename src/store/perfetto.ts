/**
 * Perfetto UI deep links for stored traces: `https://ui.perfetto.dev/#!/?url=<encoded trace URL>`.
 *
 * The UI fetches the trace from the reviewer's browser, so a link works only when the URL is
 * HTTPS, answers a plain GET without credentials, and is served with CORS headers that allow
 * ui.perfetto.dev (perfetto.dev/docs/visualization/deep-linking-to-perfetto-ui). In practice:
 * - public Hugging Face dataset files work (the Hub serves `resolve` URLs to browsers with CORS,
 *   which is how transformers.js loads models);
 * - private repositories do not (the browser has no token): download the file and drop it on the UI;
 * - file:// URLs (the local store) never do: open ui.perfetto.dev and drop the file.
 */
import type { Store } from './store.js';

export const PERFETTO_UI_URL = 'https://ui.perfetto.dev';

export type PerfettoLink = { ok: true; url: string } | { ok: false; reason: string };

export function perfettoLink(traceUrl: string, opts: { publiclyReadable: boolean }): PerfettoLink {
  let parsed: URL;
  try {
    parsed = new URL(traceUrl);
  } catch {
    return { ok: false, reason: `not a URL: ${traceUrl}` };
  }
  if (parsed.protocol === 'file:') {
    return { ok: false, reason: `local file: open ${PERFETTO_UI_URL} and drop the trace file on it` };
  }
  if (parsed.protocol !== 'https:') {
    return { ok: false, reason: 'the Perfetto UI only loads traces over HTTPS' };
  }
  if (!opts.publiclyReadable) {
    return {
      ok: false,
      reason: `the trace needs credentials (private repository): download it and drop it on ${PERFETTO_UI_URL}`,
    };
  }
  return { ok: true, url: `${PERFETTO_UI_URL}/#!/?url=${encodeURIComponent(traceUrl)}` };
}

/** The Perfetto link for a stored trace, judged by the store's visibility. */
export function perfettoLinkFor(store: Store, key: string): PerfettoLink {
  return perfettoLink(store.url(key), { publiclyReadable: store.publiclyReadable });
}
